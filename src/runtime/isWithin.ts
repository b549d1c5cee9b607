import { isAbsolute, relative, resolve, sep } from "node:path";

/**
 * Whether `path` is the directory `dir` or below it, as written: both resolved against the
 * working directory, links not followed.
 *
 * @example
 * ```ts
 * isWithin("/data/store/logs", "/data/store"); // true
 * isWithin("/data/store-old", "/data/store"); // false
 * ```
 */
export function isWithin(path: string, dir: string): boolean {
  const rel = relative(resolve(dir), resolve(path));
  return rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}
