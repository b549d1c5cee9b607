/** What `baton` does when a write to its stdout fails (see {@link stdoutFailure}). */
export interface StdoutFailure {
  /** Written to stderr, once, at the first failed write; undefined: nothing to say. */
  say: string | undefined;
  /** Whether the command ends at once (with the exit code it set), as for a closed pipe. */
  endNow: boolean;
}

/**
 * What `baton COMMAND` does when a write to its stdout fails with `error`. A closed pipe
 * (`EPIPE`: `baton run --json | head`) is the reader's choice: the command ends at once,
 * saying nothing. Any other failure (a file on a full disk: `baton run --json > results.json`)
 * is said on stderr, and the command goes on without its stdout: it ends as it would have, not
 * halfway through what it was doing (a `baton reap` that had stopped half a group), with its
 * exit code then made 2 ({@link exitAfterStdoutFailure}); an uncaught error ended it with a
 * stack trace. `baton worker`'s stdout holds only what its job handlers print (in a pool, the
 * worker's log): whatever the failure, what cannot be written is dropped and the worker goes on
 * running jobs, where it ended after each job that printed, as many times as the job was tried.
 *
 * @example
 * ```ts
 * stdoutFailure("run", Object.assign(new Error("no space"), { code: "ENOSPC" })).say;
 * // "baton run: cannot write stdout: no space left on the disk, so what it printed there is cut short; free some space, or send stdout elsewhere [ENOSPC]\n"
 * ```
 */
export function stdoutFailure(
  command: string | undefined,
  error: NodeJS.ErrnoException,
): StdoutFailure {
  const code = error.code ?? error.name;
  if (command === "worker") {
    return {
      say: `baton worker: cannot write stdout: ${why(error)}; what its job handlers print there is dropped from now on, and its jobs go on [${code}]\n`,
      endNow: false,
    };
  }
  if (error.code === "EPIPE") return { say: undefined, endNow: true };
  const advice =
    error.code === "ENOSPC" || error.code === "EDQUOT"
      ? "; free some space, or send stdout elsewhere"
      : "";
  return {
    say: `baton ${command}: cannot write stdout: ${why(error)}, so what it printed there is cut short${advice} [${code}]\n`,
    endNow: false,
  };
}

/**
 * The exit code of `baton COMMAND`, which was to exit with `code`, once a write to its stdout
 * failed with `error`. A closed pipe keeps `code` (the reader had what it wanted), as does
 * `baton worker` (its stdout is its handlers'); otherwise a command that would have succeeded
 * exits 2, as for any file it cannot write: its output is incomplete, and a script must not
 * take it as whole.
 *
 * @example
 * ```ts
 * process.on("exit", (code) => {
 *   process.exitCode = exitAfterStdoutFailure("run", failed, code);
 * });
 * ```
 */
export function exitAfterStdoutFailure(
  command: string | undefined,
  error: NodeJS.ErrnoException,
  code: number,
): number {
  if (command === "worker" || error.code === "EPIPE" || code !== 0) return code;
  return 2;
}

function why(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case "EPIPE":
      return "its reader closed it";
    case "ENOSPC":
      return "no space left on the disk";
    case "EDQUOT":
      return "this user's disk quota is used up";
    default:
      return error.message;
  }
}
