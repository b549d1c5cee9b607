import { exitHeld } from "../runtime/exitHolds.ts";

/**
 * Returns `code`, making sure the process exits with it within `ms` even if something still
 * holds the event loop open: a handler that ignores its AbortSignal in a finished worker, or
 * the child handle and lease renewal of a launcher whose teardown could not be verified. The
 * timer does not hold the process open itself, so a process with nothing left exits at once.
 * When it fires, the exit waits for what `holdExitUntil` holds (a rank job's teardown under
 * way: it ends within its own deadline).
 * `why`, when given, is written to stderr if the process has to be ended so: a pause of `ms`
 * followed by an exit says nothing of itself.
 *
 * @example
 * ```ts
 * return exitSoon(3, 5_000); // the command's exit code, and the process ends within 5 s
 * ```
 */
export function exitSoon(code: number, ms: number, why?: string): number {
  setTimeout(() => {
    void exitHeld().then(() => {
      if (why !== undefined) process.stderr.write(`${why}\n`);
      process.exit(code);
    });
  }, ms).unref();
  return code;
}
