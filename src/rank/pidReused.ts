import { carriesDeployment, type DeploymentIdentity } from "../machines/carriesDeployment.ts";
import type { ProcInfo, Procs } from "../runtime/ports.ts";

/**
 * How much later than a record a process may seem to have started and still be the one
 * recorded: Linux gives the boot time in whole seconds, and the clock may be slewed.
 */
export const START_SLACK_MS = 2_000;

/**
 * Whether the process now at a pid that a deployment's file recorded is another program: it
 * started (more than {@link START_SLACK_MS}) after `recordedAt`, a time when the recorded
 * process was already running — a manifest's `startedAt` (written after its ranks were
 * spawned) or a marker's `startedAt` (written by the rank itself) — and its environment does
 * not carry the deployment (`BATON_DEPLOYMENT` and, if set, `BATON_STATE_DIR`, which a rank's
 * descendants inherit; `carriesDeployment` with no arguments). Such a
 * process is never the deployment's, whatever its arguments name: the operator's `tail -f
 * S/<dep>/rank-0.log` that took a dead rank's pid names the deployment too. False when the
 * process table does not say when the process started.
 *
 * @example
 * ```ts
 * if (pidReused(procs, procs.inspect(marker.pid), { deployment, stateDir }, marker.startedAt)) phase = "reused";
 * ```
 */
export function pidReused(
  procs: Pick<Procs, "environ">,
  info: ProcInfo | undefined,
  id: DeploymentIdentity,
  recordedAt: number,
): boolean {
  if (info?.startedAt === undefined || info.startedAt <= recordedAt + START_SLACK_MS) return false;
  return !carriesDeployment([], procs.environ(info.pid), id);
}
