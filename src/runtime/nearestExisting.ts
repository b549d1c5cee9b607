import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * `path` when it exists, else the nearest folder above it that does (the root at worst): what
 * a path not made yet can be asked about (its file system, its permissions).
 *
 * @example
 * ```ts
 * nearestExisting("/srv/out/.baton/run"); // "/srv/out", when .baton is not there yet
 * ```
 */
export function nearestExisting(path: string): string {
  let at = resolve(path);
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  return at;
}
