import type { LeftRunning } from "../rank/outcomeFormat.ts";

/**
 * What the teardown of a group whose ranks all exited 0, or the reap of a dead launcher's
 * group, found still running and stopped (a helper a rank started and forgot, in its process
 * group or out of it), each by pid, program and rank: `baton stopped 1 process they left
 * running: pid 4242 (sleep) of rank 0`; undefined when nothing was. `baton launch` says it as
 * the group ends, `baton reap` on the deployment's line, `baton status` from the outcome
 * record.
 *
 * @example
 * ```ts
 * leftRunningLine([{ pid: 4242, rank: 0, program: "sleep", outsideGroup: true }]);
 * // "baton stopped 1 process they left running: pid 4242 (sleep) of rank 0, which had left its process group"
 * ```
 */
export function leftRunningLine(left: readonly LeftRunning[]): string | undefined {
  if (left.length === 0) return undefined;
  const each = left.map(({ pid, rank, host, program, outsideGroup }) => {
    const whose = rank === undefined ? "" : ` of rank ${rank}`;
    const where = host === undefined ? "" : ` on ${host}`;
    const out = outsideGroup ? ", which had left its process group" : "";
    return `pid ${pid} (${program})${whose}${where}${out}`;
  });
  return `baton stopped ${left.length === 1 ? "1 process" : `${left.length} processes`} they left running: ${each.join("; ")}`;
}
