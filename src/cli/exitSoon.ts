/**
 * Returns `code`, making sure the process exits with it within `ms` even if something still
 * holds the event loop open: a handler that ignores its AbortSignal in a finished worker, or
 * the child handle and lease renewal of a launcher whose teardown could not be verified. The
 * timer does not hold the process open itself, so a process with nothing left exits at once.
 *
 * @example
 * ```ts
 * return exitSoon(3, 5_000); // the command's exit code, and the process ends within 5 s
 * ```
 */
export function exitSoon(code: number, ms: number): number {
  setTimeout(() => process.exit(code), ms).unref();
  return code;
}
