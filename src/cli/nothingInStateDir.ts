/**
 * What `baton status` and `baton reap` say when a state dir holds nothing for them: that it
 * does not exist, when it does not, so a mistyped `--state-dir` does not look like a quiet
 * machine. `exists` is whether the state dir exists (the `stateDirExists` their `--json`
 * gives).
 *
 * @example
 * ```ts
 * nothingInStateDir("nothing to reap", "/tmp/typo", false);
 * // "nothing to reap: /tmp/typo does not exist (no launch used it; is --state-dir right?)"
 * ```
 */
export function nothingInStateDir(nothing: string, stateDir: string, exists: boolean): string {
  return exists
    ? `${nothing} in ${stateDir}`
    : `${nothing}: ${stateDir} does not exist (no launch used it; is --state-dir right?)`;
}
