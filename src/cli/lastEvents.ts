import { GRANT, NOISE, onLink, WHOLE_RUN, yourJobsFollowed } from "./yourJobsTimelines.ts";

/** How many trace lines a failure's report shows, at most (its last). */
export const LAST_EVENTS = 30;

/**
 * The block of a failed seed's report that ends it before its replay command: a heading and
 * the trace's last `LAST_EVENTS` lines. A drawn graph's (no `violation` given) are the
 * trace's last lines, all of them. Your own graph's (`violation` given) are the last of those
 * that explain it: the lines that name a job the report follows (`yourJobsFollowed`: the
 * one the failure names, those granted again, those running when it broke; but its
 * `running`, `storing`, `store` and grant frame delivered), the faults and closes of every
 * connection one of them was granted on, every fault and coordinator start, and the
 * violation. The heading counts the trace's lines since the first shown that were left out
 * (other jobs, the simulated network's handshakes and frames: a walk-through's 30 last events
 * were mostly `net` frames) and says the replay prints them all. With no job followed, the
 * trace's last lines, as a drawn graph's.
 *
 * @example
 * ```ts
 * lastEvents(result.trace, result.violation!.message);
 * // ["last 13 events of your jobs, their connections and the faults (58 other lines since 0 left out: its replay prints them all):", "  0 start coordinator-0", …]
 * ```
 */
export function lastEvents(trace: readonly string[], violation?: string): string[] {
  const ids =
    violation === undefined ? [] : yourJobsFollowed(trace, violation).jobs.map((j) => j.id);
  if (ids.length === 0) {
    return [`last ${LAST_EVENTS} events:`, ...trace.slice(-LAST_EVENTS).map((line) => `  ${line}`)];
  }
  const links = new Set<string>();
  for (const line of trace) {
    const grant = GRANT.exec(line);
    if (grant !== null && ids.includes(grant[1]!)) links.add(grant[3]!);
  }
  const explains = (line: string) =>
    /^\d+ (fault|violation) /.test(line) ||
    WHOLE_RUN.test(line) ||
    (ids.some((id) => line.includes(id)) && !NOISE.test(line)) ||
    [...links].some((link) => onLink(line, link));
  const shown: string[] = [];
  /** The index in `trace` of the first line shown. */
  let first = trace.length;
  for (let at = trace.length - 1; at >= 0 && shown.length < LAST_EVENTS; at -= 1) {
    if (!explains(trace[at]!)) continue;
    shown.unshift(trace[at]!);
    first = at;
  }
  const left = trace.length - first - shown.length;
  const since = shown[0]?.split(" ")[0];
  return [
    `last ${shown.length} events of your jobs, their connections and the faults${left > 0 ? ` (${left} other line${left === 1 ? "" : "s"} since ${since} left out: its replay prints them all)` : ""}:`,
    ...shown.map((line) => `  ${line}`),
  ];
}
