/**
 * vitest's order of test files, with the files in `LONG_BUT_SMALL` first. Without timings
 * of an earlier run (a fresh clone, as on CI), vitest starts the larger files first, by
 * bytes; a short file whose tests run long then starts among the last, and runs on alone
 * while the other worker has nothing left to take. simSeeds.test.ts, 2 KB for 2,400 seeds,
 * was the last file of CI's run, 81 s of it.
 */
import { existsSync } from "node:fs";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/** Files short in bytes, long in time: started first. */
const LONG_BUT_SMALL = ["test/integration/simSeeds.test.ts"];

export default class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = LONG_BUT_SMALL.findIndex((path) => spec.moduleId.endsWith(`/${path}`));
      return index === -1 ? LONG_BUT_SMALL.length : index;
    };
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

for (const path of LONG_BUT_SMALL) {
  if (!existsSync(new URL(`../../${path}`, import.meta.url)))
    throw new Error(
      `${path}, in test/sequencers/longFilesFirst.ts's LONG_BUT_SMALL, is no file: give its new path or take it out`,
    );
}
