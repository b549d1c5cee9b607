import { defineConfig } from "vitest/config";
import { filesNeedingOwnWorker } from "./test/projects/filesNeedingOwnWorker.ts";
import ClosingLine from "./test/reporters/closingLine.ts";
import LongFilesFirst from "./test/sequencers/longFilesFirst.ts";

/** Files that start no process of baton's and load its modules in the test's own process. */
const IN_PROCESS = ["test/unit/", "test/property/"];
const ownWorker = filesNeedingOwnWorker(new URL("./", import.meta.url), IN_PROCESS);

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file gets a temp folder of its own, and fails when it leaves baton's files there.
    setupFiles: ["test/setup/tempFolderPerFile.ts"],
    pool: "forks",
    // Two test files at a time (vitest ran one at a time on CI's two cores): most files wait
    // on processes, sockets and timers more than they compute. ARCHITECTURE.md, Tests.
    maxWorkers: 2,
    reporters: ["default", new ClosingLine()],
    sequence: { sequencer: LongFilesFirst },
    projects: [
      {
        extends: true,
        test: {
          name: "own modules",
          include: ["test/e2e/**/*.test.ts", "test/integration/**/*.test.ts", ...ownWorker],
        },
      },
      {
        // A fresh worker per file loaded baton's modules again for each of the 200 unit files:
        // half the CPU of the unit and property tests. ARCHITECTURE.md, Tests.
        extends: true,
        test: {
          name: "shared modules",
          include: IN_PROCESS.map((dir) => `${dir}**/*.test.ts`),
          exclude: ownWorker,
          isolate: false,
        },
      },
    ],
  },
});
