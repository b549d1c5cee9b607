import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import {
  type GoneLocksRemoval,
  graphFileStem,
  keepRecord,
  type LockedRun,
  type RunRecord,
  type RunWithoutLock,
  removeGoneGraphLocks,
  runHolder,
} from "./graphLock.ts";
import { nodeFiles } from "./nodeFiles.ts";
import type { Files } from "./ports.ts";
import { realPath } from "./realPath.ts";
import type { RunFilesLogger } from "./runFiles.ts";

export interface RegisterRunOptions {
  /** Where the file is made, renewed and removed (default `nodeFiles()`). */
  files?: Files;
  /** The flag with which the run takes no graph lock. */
  withoutLock: RunWithoutLock;
  /** The result store it reads (`--store-read-only`), and its log folder. */
  store?: string | undefined;
  logs?: string | undefined;
}

/**
 * Registers a `baton run` that takes no graph lock (`--no-store`, `--store-read-only`:
 * there is no store it writes to guard) in the `run/` folder `dir`, beside its
 * run files, so that `baton status` lists it as it lists the runs that hold a lock: the file
 * `DIR/graph-<hash of the graph's real path>-<pid>-<8 random hex>.run`, created exclusively (mode
 * 0600, folders made as needed) with what a lock holds (`runHolder`) and `withoutLock`, kept
 * written as a lock is (`keepRecord`: renewed with what the run notes, removed on release).
 * A `dir` this call made is removed on release too, when nothing else is in it by then: a run
 * leaves no empty `run/` folder behind; one that was there before stays.
 * It excludes nobody: runs of one graph register side by side. One whose run was killed is
 * judged gone as a lock is, listed as a dead run, and removed by `baton reap`
 * (`removeGoneGraphLocks`) or by the next run starting there (`removeGoneRegistrations`).
 * Errors are the Files port's.
 *
 * @example
 * ```ts
 * const registration = await registerRun(".baton/run", "pipeline.graph.ts", { withoutLock: "--no-store" });
 * try { await engine.run(graph); } finally { await registration.release(); }
 * ```
 */
export async function registerRun(
  dir: string,
  graph: string,
  { files = nodeFiles(), withoutLock, store, logs }: RegisterRunOptions,
): Promise<RunRecord> {
  const graphPath = realPath(graph);
  const holder = runHolder(graphPath, {
    withoutLock,
    ...(store !== undefined && { store }),
    ...(logs !== undefined && { logs }),
  });
  // Random, so that no run's file is another's: one of a dead run with this pid (a
  // container whose runs all get one pid), or a run's of another host sharing the folder.
  const name = `${graphFileStem(graphPath)}-${holder.pid}-${randomBytes(4).toString("hex")}.run`;
  const path = join(dir, name);
  const made = (await files.owner(dir)) === undefined;
  await createRegistration(files, path, JSON.stringify(holder));
  const record = keepRecord({ files, storeDir: dirname(dir), path, graph: graphPath }, holder);
  if (!made) return record;
  return {
    ...record,
    async release() {
      await record.release();
      // Nothing left behind: the folder goes unless another run's file (or anything) is in it.
      await files.removeDir(dir).catch(() => {
        // An empty folder that stays (one this user may no longer write in) harms nobody.
      });
    },
  };
}

/**
 * Creates the registration file `path` (0600, its folder made as needed), once more when it
 * meets no folder: one that another run made, and removed as it ended, between this call
 * making sure it was there and creating the file in it.
 */
async function createRegistration(files: Files, path: string, text: string): Promise<void> {
  try {
    await files.createExclusive(path, text, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    await files.createExclusive(path, text, 0o600);
  }
}

/**
 * Removes from the `run/` folder `dir` the registrations (`registerRun`) of runs that are gone,
 * by the rule `baton status` and `baton reap` judge them by (`removeGoneGraphLocks`: on this
 * host, a pid gone or given to another program; another host's, once not renewed for
 * `LOCK_STALE_MS`), and logs which: every `baton run` starting there does it, as it removes
 * the secrets of dead coordinators (`sweepAbandonedRunFiles`), so that a killed run is not
 * listed as dead until a `baton reap`. Graph locks stay: the next run of a dead lock's graph
 * takes it over; the temp files creators killed mid-create left of either go (logged). One that cannot be removed is a warning, as registering is: the run goes on.
 * Returns the runs whose registrations it removed.
 *
 * @example
 * ```ts
 * await removeGoneRegistrations(".baton/run", { logger });
 * ```
 */
export async function removeGoneRegistrations(
  dir: string,
  {
    files = nodeFiles(),
    logger,
  }: {
    files?: Files;
    logger: RunFilesLogger;
  },
): Promise<LockedRun[]> {
  const notRemoved =
    "could not remove the registrations of runs that are gone, which baton status lists as dead runs until baton reap removes them";
  let removal: GoneLocksRemoval;
  try {
    removal = await removeGoneGraphLocks(dir, files, { registrationsOnly: true, logger });
  } catch (error) {
    logger.warn({ err: error, dir }, notRemoved);
    return [];
  }
  const { removed, failed } = removal;
  for (const { run, error } of failed) logger.warn({ err: error, dir, path: run.path }, notRemoved);
  if (removed.length > 0) {
    logger.info(
      { dir, runs: removed.map(({ pid, host, graph, gone }) => ({ pid, host, graph, why: gone })) },
      "removed the registrations of runs that ended without removing them (killed), which baton status listed as dead runs",
    );
  }
  return removed;
}
