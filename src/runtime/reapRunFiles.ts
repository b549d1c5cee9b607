import { SlurmError } from "../errors.ts";
import { type AbandonedAllocations, cancelAbandonedAllocations } from "./abandonedAllocations.ts";
import { type LockedRun, removeGoneGraphLocks } from "./graphLock.ts";
import type { Files } from "./ports.ts";
import { findRunFiles, type RunFilesLogger, removeRunFiles } from "./runFiles.ts";
import type { SlurmCommands } from "./slurmCommands.ts";

/** What `reapRunFiles` did: the allocations it cancelled or could not, and the files it removed. */
export interface RunFilesReap extends AbandonedAllocations {
  /**
   * Pools whose queue this machine cannot read, Slurm's commands not being on its PATH
   * (`SLURM_MISSING`): not in `failed`, as nothing failed; their batch scripts stay.
   */
  unchecked: { pool: string; run: string; runFile: string }[];
  /** The run files removed (a pool's batch script whose allocations were not cancelled stays). */
  removed: string[];
  /** The dead runs whose graph locks or registrations it removed (`removeGoneGraphLocks`). */
  locks: LockedRun[];
  /** The dead runs whose files it may not remove, each with why and who can. */
  locksNotRemoved: { run: LockedRun; error: Error }[];
}

/**
 * `baton reap`'s part for `baton run`'s coordinators: in `dir` (a store's `run/` folder),
 * the run files of coordinators on this host that are gone (`findRunFiles`) stand for Slurm
 * allocations their killed run left in the queue. It cancels those (`cancelAbandonedAllocations`,
 * as the next run's Slurm pool does) and removes the files, except the batch script of a pool
 * whose allocations it did not cancel, which stays for the next reap or run: one whose Slurm
 * command failed (`failed`), or one it could not look at, Slurm's commands not being on this
 * machine's PATH (`unchecked`). A living coordinator's files, and another host's, are left
 * alone; Slurm is not called when no batch script is found. Then it removes the graph locks of
 * the runs that are gone (`removeGoneGraphLocks`, with the temp files creators killed
 * mid-create left of any lock or registration), which `baton status` lists as dead runs,
 * going on past one it may not remove (`locksNotRemoved`).
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
  const { cancelled, failed: notCancelled } = await cancelAbandonedAllocations(
    abandoned,
    ports.slurm,
  );
  const missing = ({ error }: { error: Error }) =>
    error instanceof SlurmError && error.code === "SLURM_MISSING";
  const failed = notCancelled.filter((pool) => !missing(pool));
  const unchecked = notCancelled
    .filter(missing)
    .map(({ pool, run, runFile }) => ({ pool, run, runFile }));
  const kept = new Set(notCancelled.map(({ runFile }) => runFile));
  const removed = abandoned.filter((name) => !kept.has(name));
  await removeRunFiles(dir, removed, ports);
  const { removed: locks, failed: locksNotRemoved } = await removeGoneGraphLocks(dir, ports.files, {
    logger: ports.logger,
  });
  return { cancelled, failed, unchecked, removed, locks, locksNotRemoved };
}
