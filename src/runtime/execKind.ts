import { accessSync, constants, statSync } from "node:fs";

/** What exec finds at a path: nothing, a directory, or a file it may or may not execute. */
export type ExecKind = "missing" | "directory" | "not executable" | "executable";

/**
 * What exec finds at `file`, as execvp judges each directory of PATH: `cannotStart` tells a
 * program that cannot start by it, and the Slurm commands check their client is whole with it.
 *
 * @example
 * ```ts
 * execKind("/bin/sh"); // "executable"
 * execKind("/tmp"); // "directory"
 * ```
 */
export function execKind(file: string): ExecKind {
  try {
    if (statSync(file).isDirectory()) return "directory";
  } catch {
    return "missing";
  }
  try {
    accessSync(file, constants.X_OK);
    return "executable";
  } catch {
    return "not executable";
  }
}
