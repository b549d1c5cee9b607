import { allocationPhase } from "../machines/allocationState.ts";
import { slurmPoolOf } from "./runFiles.ts";
import type { SlurmCommands } from "./slurmCommands.ts";

/** What cancelling the Slurm allocations of dead coordinators' pools did, pool by pool. */
export interface AbandonedAllocations {
  /**
   * Pools that still had allocations pending or running: those were cancelled. `run` is the
   * stem of the dead coordinator's run files (`run-<hex>-<pid>@<host>`), `runFile` the script.
   */
  cancelled: { pool: string; run: string; runFile: string; allocations: string[] }[];
  /** Pools whose queue could not be read or whose allocations could not be cancelled, and why. */
  failed: { pool: string; run: string; runFile: string; error: Error }[];
}

/**
 * Cancels every allocation still pending or running of the Slurm pools that the batch
 * scripts among `runFiles` name (`<stem>.baton-<hex>.sbatch`, left by coordinators on this
 * host that died: see `sweepAbandonedRunFiles`); the other run files are skipped. Their
 * workers could only fail to reach their dead coordinator. A Slurm command that fails (or
 * is not on the PATH: `SLURM_MISSING`) fails that pool only. Shared by a Slurm pool's start
 * and by `baton reap`, which report what it did each in their own way.
 *
 * @example
 * ```ts
 * const { cancelled } = await cancelAbandonedAllocations(
 *   ["run-3f2a-4242@login1.baton-0123abcd.sbatch"],
 *   nodeSlurmCommands(),
 * );
 * ```
 */
export async function cancelAbandonedAllocations(
  runFiles: readonly string[],
  commands: SlurmCommands,
): Promise<AbandonedAllocations> {
  const done: AbandonedAllocations = { cancelled: [], failed: [] };
  for (const runFile of runFiles) {
    const pool = slurmPoolOf(runFile);
    if (pool === undefined) continue;
    const run = runFile.slice(0, -`.${pool}.sbatch`.length);
    try {
      const active = (await commands.queue(pool))
        .filter((entry) => {
          const phase = allocationPhase(entry.state);
          return phase === "pending" || phase === "running";
        })
        .map((entry) => entry.id);
      if (active.length === 0) continue;
      await commands.cancel(active, { pendingOnly: false });
      done.cancelled.push({ pool, run, runFile, allocations: active });
    } catch (error) {
      done.failed.push({ pool, run, runFile, error: error as Error });
    }
  }
  return done;
}
