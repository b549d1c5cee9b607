import { basename } from "node:path";
import type { Logger } from "pino";
import { isAlive } from "../rank/launcherWatch.ts";
import { emptyWorkerGroup, type Stray } from "./emptyWorkerGroup.ts";
import type { Clock, Procs } from "./ports.ts";
import { releaseCgroup } from "./releaseCgroup.ts";
import { workerPoolCgroupOwner } from "./workerPoolCgroup.ts";

/** A local pool's cgroup whose coordinator is gone, emptied by {@link removeAbandonedWorkerCgroups}. */
export interface AbandonedWorkerCgroup {
  cgroup: string;
  /** The coordinator that made it, gone (killed with SIGKILL, or crashed). */
  coordinatorPid: number;
  /** What was still running in it (its workers, what they started), and how each ended. */
  strays: Stray[];
  /** Whether the cgroup is gone now (one with a process asleep in D is left for next time). */
  removed: boolean;
}

/** Who removes a pool's cgroup that could not go at once. */
export const POOL_CGROUP_LATER =
  "the first local pool started on this machine once this coordinator has ended";

/**
 * Empties and removes the cgroups of local worker pools whose coordinator is gone: a
 * coordinator killed with SIGKILL (or crashed) could not stop its workers nor what they
 * started, and no one else knows of them. Each cgroup in `Containment.list` named for a pool
 * (`workerPoolCgroupOwner`) whose coordinator pid is not alive (no such process, or a zombie,
 * whose pid is not free yet) is emptied as a worker's is when it exits (`emptyWorkerGroup`:
 * SIGTERM, SIGKILL 2 s later, verified) and removed (`releaseCgroup`). A pid reused since by
 * a live process keeps its cgroups until that process ends too. A local pool runs this when
 * it starts.
 *
 * @example
 * ```ts
 * const abandoned = await removeAbandonedWorkerCgroups(nodeProcs(), nodeClock(), 2_000, logger);
 * ```
 */
export async function removeAbandonedWorkerCgroups(
  procs: Procs,
  clock: Clock,
  killAfterMs: number,
  logger?: Logger,
): Promise<AbandonedWorkerCgroup[]> {
  const { containment } = procs;
  const abandoned = (containment?.list() ?? []).flatMap((cgroup) => {
    const coordinatorPid = workerPoolCgroupOwner(basename(cgroup));
    return coordinatorPid === undefined ||
      coordinatorPid === procs.selfPid ||
      isAlive(procs.inspect(coordinatorPid))
      ? []
      : [{ cgroup, coordinatorPid }];
  });
  return Promise.all(
    abandoned.map(async ({ cgroup, coordinatorPid }) => {
      const strays = await emptyWorkerGroup({ cgroup }, procs, clock, killAfterMs);
      await releaseCgroup(procs, clock, cgroup, logger, POOL_CGROUP_LATER);
      const removed = containment?.members(cgroup) === undefined;
      const running = strays.filter((stray) => stray.ended === "still running").length;
      const held =
        strays.length === 0
          ? "was empty"
          : `held ${strays.length} processes, ${running === 0 ? "stopped" : `${running} of them still running`}`;
      logger?.info(
        { cgroup, coordinatorPid, strays, removed },
        `the workers' cgroup of coordinator ${coordinatorPid}, which is gone, ${held}${
          removed ? ", and was removed" : ""
        }`,
      );
      return { cgroup, coordinatorPid, strays, removed };
    }),
  );
}
