import type { GroupProgress } from "../viz/groupProgress.ts";

/** Rank phases of a process that has ended (a `lost` rank may still run, hung). */
const ENDED = new Set(["exited", "failed"]);

/**
 * What `baton launch` says the moment its group begins to stop on its own (a rank failed or
 * was lost, the barrier or the lease gave out), while ranks still run: which rank, and what
 * the others get. The error that ends the launch comes only once they are gone, which for
 * ranks that ignore SIGTERM is the whole grace later (10 s by default), silent otherwise.
 * `undefined` when no rank is left to stop (every rank exited 0, or none started).
 *
 * @example
 * ```ts
 * stoppingLine(progress, 10_000);
 * // "rank 1 exited with code 5: stopping the other 3 ranks, those that still run (SIGTERM, then SIGKILL after 10000 ms, or at once on Ctrl-C)"
 * ```
 */
export function stoppingLine(progress: GroupProgress, graceMs: number): string | undefined {
  const running = progress.ranks.filter(
    (rank) => rank.pid !== undefined && !ENDED.has(rank.phase),
  ).length;
  if (running === 0) return undefined;
  const culprit = progress.ranks.find((rank) => rank.phase === "failed" || rank.phase === "lost");
  const how = stoppingHow(graceMs, "Ctrl-C");
  const ranks = running === 1 ? "rank" : `${running} ranks`;
  if (culprit === undefined) return `the group failed: stopping its ${ranks} ${how}`;
  if (culprit.phase === "lost") {
    const which = running === 1 ? "it" : `all ${running} ranks`;
    return `rank ${culprit.rank} stopped renewing its marker (hung or cut off): stopping ${which} ${how}`;
  }
  if (culprit.pid === undefined) {
    const started = running === 1 ? "the rank" : `the ${running} ranks`;
    return `rank ${culprit.rank} could not be started: stopping ${started} already started ${how}`;
  }
  const what =
    culprit.signal !== undefined
      ? `was killed by ${culprit.signal}`
      : `exited with code ${culprit.code}`;
  // Another rank may have ended at the same moment, before the launcher learned it: the
  // teardown signals only what still runs, and the group's error tells which it stopped.
  const others =
    running === 1 ? "the other rank if it still runs" : `the other ${ranks}, those that still run`;
  return `rank ${culprit.rank} ${what}: stopping ${others} ${how}`;
}

/**
 * What the ranks still running get, as the lines that say a group begins to stop put it:
 * `ctrlC` is "Ctrl-C", or "a second Ctrl-C" when a Ctrl-C (a signal) began the stop.
 *
 * @example
 * ```ts
 * stoppingHow(300, "a second Ctrl-C"); // "(SIGTERM, then SIGKILL after 300 ms, or at once on a second Ctrl-C)"
 * ```
 */
export function stoppingHow(graceMs: number, ctrlC: "Ctrl-C" | "a second Ctrl-C"): string {
  return `(SIGTERM, then SIGKILL after ${graceMs} ms, or at once on ${ctrlC})`;
}
