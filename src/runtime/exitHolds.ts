/**
 * Work a process that exits on purpose lets finish first: the teardown of a rank group that a
 * rank job stops when its job is aborted (its worker's coordinator lost or stopped, a signal
 * to the worker). `baton worker` exits `--abort-grace` (5 s) after it leaves the run, which cut
 * such a teardown short in its TERM grace (10 s by default): a rank that ignores TERM ran on,
 * its manifest left for a reaper. A teardown ends by itself, verified or not, within its
 * deadline (`teardownDeadlineMs`), so the wait is bounded.
 *
 * @example
 * ```ts
 * holdExitUntil(group.stop("aborted"));
 * await exitHeld(); // then process.exit(code)
 * ```
 */
const holds = new Set<Promise<unknown>>();

/** Holds a deliberate exit (`exitSoon`) until `work` settles. */
export function holdExitUntil(work: Promise<unknown>): void {
  holds.add(work);
  const release = () => holds.delete(work);
  work.then(release, release);
}

/** Resolves once every work held now has settled. */
export async function exitHeld(): Promise<void> {
  await Promise.allSettled([...holds]);
}
