import { realpathSync } from "node:fs";
import { resolve } from "node:path";

/**
 * `path`, absolute, with its symbolic links followed when it exists; else as written, made
 * absolute. Two paths of one file (a link and its target) give one answer.
 *
 * @example
 * ```ts
 * realPath("graphs/current.graph.ts"); // "/home/me/graphs/v7.graph.ts" when current is a link
 * ```
 */
export function realPath(path: string): string {
  try {
    return realpathSync(resolve(path));
  } catch {
    return resolve(path);
  }
}
