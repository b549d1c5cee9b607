import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * The file in the way of a folder at `path` (what an `ENOTDIR` or `EEXIST` met while making it
 * is about): the nearest of `path` and its parents that exists and is not a directory, else
 * `path`.
 *
 * @example
 * ```ts
 * fileInTheWay("/srv/notes.txt/logs"); // "/srv/notes.txt"
 * ```
 */
export function fileInTheWay(path: string): string {
  for (let at = resolve(path); dirname(at) !== at; at = dirname(at)) {
    if (existsSync(at)) return statSync(at).isDirectory() ? path : at;
  }
  return path;
}
