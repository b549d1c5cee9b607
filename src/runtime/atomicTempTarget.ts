import { basename, dirname, join } from "node:path";

/** `.NAME.PID.RANDOM.tmp` (node), `.NAME.PID.tmp` (ssh) and `.NAME.N.tmp` (simulation). */
const ATOMIC_TEMP = /^\.(.+?)\.\d+(?:\.[0-9a-f]+)?\.tmp$/;

/**
 * The name of the file a `Files.writeAtomic` temp file was meant to become, or `undefined`
 * when `name` is not such a temp file. A writer killed between creating its temp file and
 * renaming it leaves the temp file behind; whoever clears the directory uses this to find
 * it.
 *
 * @example
 * ```ts
 * atomicTempTarget(".rank-1.marker.json.8504.f46acc33a054.tmp"); // "rank-1.marker.json"
 * atomicTempTarget("rank-1.log"); // undefined
 * ```
 */
export function atomicTempTarget(name: string): string | undefined {
  return ATOMIC_TEMP.exec(name)?.[1];
}

/**
 * The path of the file the `Files.writeAtomic` temp file at `path` was meant to become; `path`
 * itself when it is no such temp file. A user never sees the temp file, so an error of it is
 * said of this one.
 *
 * @example
 * ```ts
 * atomicWriteTarget("/s/results/ab/.ab12.json.4711.0123456789ab.tmp"); // "/s/results/ab/ab12.json"
 * ```
 */
export function atomicWriteTarget(path: string): string {
  const target = atomicTempTarget(basename(path));
  return target === undefined ? path : join(dirname(path), target);
}
