import { join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * Where baton's own code is, as a stack frame names it (a path, or an ES module's file URL):
 * its `src/`, its compiled `dist/` and its `bin/`, found from this file's place in either.
 * Installed, baton is under node_modules; in a clone, or a project that installed a clone
 * (`npm install /path/to/baton` links it), its frames are under the clone's own path.
 */
const BATON_CODE = ["src", "dist", "bin"].flatMap((dir) => {
  const path = join(fileURLToPath(new URL("../..", import.meta.url)), dir);
  return [path + sep, `${pathToFileURL(path).href}/`];
});

/**
 * Where `error` was thrown in the user's code (its first stack frame outside Node and baton),
 * as ` (at FILE:LINE:COLUMN)`, or `""` when no frame is.
 *
 * @example
 * ```ts
 * whereThrown(new TypeError("x is undefined")); // " (at /home/me/sim.ts:3:27)"
 * ```
 */
export function whereThrown(error: unknown): string {
  const at = thrownAt(error);
  return at === undefined ? "" : ` (at ${at})`;
}

/**
 * The `FILE:LINE:COLUMN` of `error`'s first stack frame outside Node and baton, or `undefined`:
 * for an error a baton function throws when the user's code calls it wrongly (`job()` given
 * an unknown option at a graph module's top level), the user's line that called it.
 *
 * @example
 * ```ts
 * thrownAt(new TypeError("x is undefined")); // "/home/me/sim.ts:3:27"
 * ```
 */
export function thrownAt(error: unknown): string | undefined {
  const frames = ((error as Error)?.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line));
  const user = frames.find(
    (line) => !/node:|node_modules/.test(line) && !BATON_CODE.some((dir) => line.includes(dir)),
  );
  const at = user?.trim().replace(/^at (?:.* \()?(.*?)\)?$/, "$1");
  return at || undefined;
}
