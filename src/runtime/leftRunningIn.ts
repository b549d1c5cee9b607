import type { LeftRunning } from "../rank/outcomeFormat.ts";
import type { ReportedOther } from "./tearDown.ts";

/** A rank on this machine, as the teardown that stopped its group saw it. */
export interface TornDownRank {
  rank: number;
  /** Its process group: the rank leads it. */
  pgid: number;
  /** The teardown found it alive and stopped it (it had not exited on its own). */
  stopped: boolean;
}

/**
 * What the ranks left running among `others`, the processes other than the ranks that a
 * teardown stopped (`TeardownReport.others`, and for the reaper the strays it targeted by pid):
 * each one in the process group of a rank that had exited on its own, found by the sweep, or
 * outside every rank's group (`outsideGroup`); not the members of the group of a rank the
 * teardown stopped, which went with their rank. The rank is the group's leader's, else the
 * `RANK` of the process's environment. A launch's (`GroupExit.leftRunning`) and a reap's
 * (`ReapReport.reaped[].leftRunning`) are told the same way.
 *
 * @example
 * ```ts
 * leftRunningIn(report.others, [{ rank: 0, pgid: 4711, stopped: false }]);
 * // [{ pid: 4742, rank: 0, program: "sleep", outsideGroup: false }]
 * ```
 */
export function leftRunningIn(
  others: readonly ReportedOther[],
  ranks: readonly TornDownRank[],
): LeftRunning[] {
  return others.flatMap((other) => {
    // A remote process's group is one on its host: no rank here leads it.
    const leader =
      other.host === undefined ? ranks.find((rank) => rank.pgid === other.pgid) : undefined;
    if (!other.swept && leader?.stopped === true) return [];
    const rank = leader?.rank ?? other.rank;
    return [
      {
        pid: other.pid,
        ...(rank !== undefined && { rank }),
        ...(other.host !== undefined && { host: other.host }),
        program: other.program,
        outsideGroup: leader === undefined,
      },
    ];
  });
}
