/**
 * The test files among the unit and property tests that need a worker process of their own,
 * where the rest share one worker's loaded modules (vitest.config.ts; ARCHITECTURE.md, Tests).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** What a file does that a later file in the same worker would feel, and why. */
const NEEDS_OWN_WORKER: readonly RegExp[] = [
  // A mock is hoisted over the file's imports: it does not reach a module an earlier file in
  // the worker already loaded, and it would stay for the files after it.
  /\bvi\.(?:mock|doMock)\(/,
  // A command run in process may arm the timer that ends its process soon after it returns
  // (src/cli/exitSoon.ts): in a shared worker it ended a later file's worker.
  /from "\.\.\/\.\.\/src\/cli\/[A-Za-z]+Command\.ts"/,
];

/** The `*.test.ts` files under `dirs` (relative to `root`) that need a worker of their own. */
export function filesNeedingOwnWorker(root: URL, dirs: readonly string[]): string[] {
  return dirs.flatMap((dir) =>
    readdirSync(new URL(dir, root), { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".test.ts"))
      .map((name) => join(dir, name))
      .filter((path) => {
        const text = readFileSync(new URL(path, root), "utf8");
        return NEEDS_OWN_WORKER.some((pattern) => pattern.test(text));
      }),
  );
}
