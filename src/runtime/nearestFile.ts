import { readdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { didYouMean } from "../closestName.ts";

/**
 * The end of an error about a file path that is not there (a module given or imported):
 * `; did you mean DIR/graph.ts?` when a file of a close name (`closestName`: a typo, a swap of
 * letters, another extension) is in the folder it names, written as `path` names that folder;
 * else "" (nothing close, or no such folder).
 *
 * @example
 * ```ts
 * `grpah.ts does not exist${nearestFile("grpah.ts")}`; // "grpah.ts does not exist; did you mean graph.ts?"
 * ```
 */
export function nearestFile(path: string): string {
  let names: string[];
  try {
    names = readdirSync(dirname(resolve(path)));
  } catch {
    return "";
  }
  return didYouMean(basename(path), names, (name) => join(dirname(path), name));
}
