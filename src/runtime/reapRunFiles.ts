import { type AbandonedAllocations, cancelAbandonedAllocations } from "./abandonedAllocations.ts";
import type { Files } from "./ports.ts";
import { findRunFiles, type RunFilesLogger, removeRunFiles } from "./runFiles.ts";
import type { SlurmCommands } from "./slurmCommands.ts";

/** What `reapRunFiles` did: the allocations it cancelled or could not, and the files it removed. */
export interface RunFilesReap extends AbandonedAllocations {
  /** The run files removed (a pool's batch script whose allocations could not be cancelled stays). */
  removed: string[];
}

/**
 * `baton reap`'s part for `baton run`'s coordinators: in `dir` (a store's `run/` folder),
 * the run files of coordinators on this host that are gone (`findRunFiles`) stand for Slurm
 * allocations their killed run left in the queue. It cancels those (`cancelAbandonedAllocations`,
 * as the next run's Slurm pool does) and removes the files, except the batch script of a pool
 * whose allocations it could not cancel (Slurm's commands missing or failing), which stays for
 * the next reap or run. A living coordinator's files, and another host's, are left alone;
 * Slurm is not called when no batch script is found.
 *
 * @example
 * ```ts
 * const { cancelled } = await reapRunFiles(".baton/run", { files: nodeFiles(), slurm: nodeSlurmCommands() });
 * ```
 */
export async function reapRunFiles(
  dir: string,
  ports: { files: Files; slurm: SlurmCommands; logger?: RunFilesLogger | undefined },
): Promise<RunFilesReap> {
  const { abandoned } = await findRunFiles(dir, ports.files);
  const { cancelled, failed } = await cancelAbandonedAllocations(abandoned, ports.slurm);
  const kept = new Set(failed.map(({ runFile }) => runFile));
  const removed = abandoned.filter((name) => !kept.has(name));
  await removeRunFiles(dir, removed, ports);
  return { cancelled, failed, removed };
}
