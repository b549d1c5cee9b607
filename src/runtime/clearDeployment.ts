import { type DeploymentPaths, OUTCOME_FILE, rankFileName } from "../rank/deploymentPaths.ts";
import type { Lease } from "../rank/leaseFormat.ts";
import { atomicTempTarget } from "./atomicTempTarget.ts";
import { errnoReason } from "./errnoReason.ts";
import type { FolderNotRemoved } from "./folderNotRemoved.ts";
import type { HeldLease } from "./launcherLease.ts";
import type { Files } from "./ports.ts";

/**
 * What a clear left for its caller to warn of; neither when it went as it should (or kept
 * only what `keepLease` or logs keep).
 */
export interface Cleared {
  /**
   * The lease of another launcher that took the name over while this one lived: the clear
   * then removed nothing (the files are that launcher's), so there is no folder to report.
   */
  takenBy?: Lease;
  /**
   * The lease of another launcher that took the name over while this clear removed the other
   * files (this launcher stopped, or its removals and renewals hung, for the lease's stale
   * time): its lease was kept, but what went before (the manifest, markers, acks, cancel
   * file) may have been that launcher's.
   */
  takenDuring?: Lease;
  /** The deployment's folder, left empty, whose removal failed ({@link FolderNotRemoved}). */
  folderNotRemoved?: FolderNotRemoved;
}

/**
 * Removes a deployment's control files once its teardown is verified: the manifest first
 * (so no reaper takes a half-cleared directory for an orphan), then, all at once, the cancel
 * file, every rank's marker and ack, and the temp file of any of these or of the outcome
 * record whose writer was killed mid-write (a rank killed while it rewrote its marker), and
 * the lease (with the temp files of its writes) last, so that the name stays claimed until
 * the rest is gone. The
 * ranks' logs and the outcome record stay, for reading after the fact; the deployment's
 * directory goes last, only when nothing is left in it (a remote host's, where no log is
 * written, or one whose files were all control files), so that ended deployments leave no
 * empty folders behind. `keepLease` keeps the lease: a launcher clearing what an earlier run
 * left, under the lease that claims the name for it. `lease`, the launcher's own lease, is
 * renewed until the other files are gone and released just before its file is removed (a
 * renewal would bring the file back); it is released too when a removal fails.
 * When `lease` was taken over by another launcher (`HeldLease.takenBy`: it went stale while
 * this launcher lived), the files are that launcher's now: nothing is removed, the lease is
 * released, and the other's lease is returned (`takenBy`) for the caller to say so. It is
 * asked again right before the lease's removal: taken over meanwhile, the lease stays and is
 * returned as `takenDuring`.
 * `removeFolder` is how the last step is done (default `files.removeDir`): on an ssh host it
 * also removes, in the same call, the empty folders earlier versions left there
 * (`removeFolderAndLeftEmpty`). That last step failing does not fail the clear: the folder
 * is returned (`folderNotRemoved`, for the caller to warn of) when it is empty, and nothing
 * is said of one with something in it (logs, an outcome record), which stays anyway.
 *
 * @example
 * ```ts
 * await tearDown(target, ports);
 * await clearDeployment(files, deploymentPaths(stateDir, deployment), { lease });
 * ```
 */
export async function clearDeployment(
  files: Files,
  paths: DeploymentPaths,
  {
    keepLease = false,
    lease,
    removeFolder = (dir) => files.removeDir(dir),
  }: {
    keepLease?: boolean;
    lease?: HeldLease | undefined;
    removeFolder?: ((dir: string) => Promise<unknown>) | undefined;
  } = {},
): Promise<Cleared> {
  const takenBy = await lease?.takenBy();
  if (takenBy !== undefined) {
    await lease?.release();
    return { takenBy };
  }
  const remove = (names: readonly string[]) =>
    Promise.all(names.map((name) => files.remove(`${paths.dir}/${name}`)));
  try {
    await files.remove(paths.manifest);
    const leaseName = paths.lease.slice(paths.dir.length + 1);
    const names = controlFiles(paths, await files.list(paths.dir));
    // The lease and the temp files of its writes: a renewal's is in use until its rename.
    const ofLease = (name: string) => (atomicTempTarget(name) ?? name) === leaseName;
    await remove(names.filter((name) => !ofLease(name)));
    if (keepLease) return {};
    await lease?.release();
    // Looked at again right before its removal: a launcher that took the name over meanwhile
    // keeps it, so that no reaper finds its ranks with neither manifest nor lease.
    const takenDuring = await lease?.takenBy();
    if (takenDuring !== undefined) return { takenDuring };
    // The lease (named even where the listing missed it) and its temp files, each removed once.
    await remove([...new Set([leaseName, ...names.filter(ofLease)])]);
  } finally {
    await lease?.release();
  }
  try {
    await removeFolder(paths.dir);
    return {};
  } catch (error) {
    // Not empty, it would have stayed whatever refused it (a symbolic link to a folder of logs).
    const left = await files.list(paths.dir).catch(() => []);
    return left.length > 0
      ? {}
      : { folderNotRemoved: { dir: paths.dir, reason: errnoReason(error) } };
  }
}

/**
 * The deployment's control files among `names` (the entries of its directory): the
 * manifest, the lease, the cancel file, every rank's marker and ack, and the temp file of any
 * of these or of the outcome record (torn: a launcher killed while it wrote it, which would
 * otherwise keep the folder from ever counting as ended); not the ranks' logs or the outcome
 * record.
 *
 * @example
 * ```ts
 * controlFiles(paths, ["lease.json", "rank-0.log", ".rank-1.ack.json.7.tmp"]);
 * // ["lease.json", ".rank-1.ack.json.7.tmp"]
 * ```
 */
export function controlFiles(paths: DeploymentPaths, names: readonly string[]): string[] {
  const named = new Set(
    [paths.manifest, paths.lease, paths.cancel].map((path) => path.slice(paths.dir.length + 1)),
  );
  const isControlFile = (name: string) =>
    named.has(name) || (rankFileName(name)?.kind ?? "log") !== "log";
  return names.filter((name) => {
    const target = atomicTempTarget(name);
    return target === undefined
      ? isControlFile(name)
      : isControlFile(target) || target === OUTCOME_FILE;
  });
}

/**
 * How long none of `names` (control files of the directory `dir`) has been written, in whole
 * ms by `now`; undefined when none of them exists any more.
 *
 * @example
 * ```ts
 * const names = controlFiles(paths, await files.list(paths.dir));
 * await untouchedMs(files, paths.dir, names, clock.now()); // 31250
 * ```
 */
export async function untouchedMs(
  files: Files,
  dir: string,
  names: readonly string[],
  now: number,
): Promise<number | undefined> {
  const times = await Promise.all(names.map((name) => files.modifiedAt(`${dir}/${name}`)));
  const newest = Math.max(...times.map((time) => time ?? Number.NEGATIVE_INFINITY));
  return newest === Number.NEGATIVE_INFINITY ? undefined : Math.round(now - newest);
}
