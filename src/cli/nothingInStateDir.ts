import { existsSync } from "node:fs";

/**
 * What `baton status` and `baton reap` say when a state dir holds nothing for them: that it
 * does not exist, when it does not, so a mistyped `--state-dir` does not look like a quiet
 * machine.
 *
 * @example
 * ```ts
 * nothingInStateDir("nothing to reap", "/tmp/typo");
 * // "nothing to reap: /tmp/typo does not exist (no launch used it; is --state-dir right?)"
 * ```
 */
export function nothingInStateDir(nothing: string, stateDir: string): string {
  return existsSync(stateDir)
    ? `${nothing} in ${stateDir}`
    : `${nothing}: ${stateDir} does not exist (no launch used it; is --state-dir right?)`;
}
