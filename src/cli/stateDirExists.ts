import { statSync } from "node:fs";
import { ConfigError } from "../errors.ts";

/**
 * Whether the state dir `baton status` or `baton reap` was given (`--state-dir`) exists: false
 * when it does not (nothing was launched there), and a `ConfigError` saying so when it is a
 * file, not a directory.
 *
 * @example
 * ```ts
 * stateDirExists("/srv/app/.baton/run"); // true
 * stateDirExists("/tmp/typo"); // false
 * ```
 */
export function stateDirExists(stateDir: string): boolean {
  const stat = statSync(stateDir, { throwIfNoEntry: false });
  if (stat !== undefined && !stat.isDirectory()) {
    throw new ConfigError(
      `the state dir ${stateDir} is a file, not a directory: give --state-dir the directory your launches used (default .baton/run)`,
    );
  }
  return stat !== undefined;
}
