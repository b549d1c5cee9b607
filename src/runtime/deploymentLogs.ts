import type { Dirent } from "node:fs";
import { readdir, rmdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { isDeploymentId, rankFileName } from "../rank/deploymentPaths.ts";

/** How many ended deployments' folders a state dir keeps, however old. */
export const KEEP_ENDED_DEPLOYMENTS = 20;

/** An ended deployment's folder is kept this long after it ended, however many newer there are. */
export const ENDED_DEPLOYMENT_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

/** An ended deployment's folder: its name, and when it last changed (its deployment ended). */
interface Ended {
  dir: string;
  endedAt: number;
}

/**
 * Removes the folders of deployments that ended long ago from the root state dir `stateDir`:
 * a folder holding nothing but its ranks' logs (`rank-R.log`: its manifest, lease and every
 * other control file are gone, so none of its ranks can be alive and the reaper has nothing
 * left there), beyond the newest {@link KEEP_ENDED_DEPLOYMENTS}, that last changed (its
 * control files were removed when its deployment ended) more than
 * {@link ENDED_DEPLOYMENT_KEPT_MS} ago. A folder with anything else in it — a control file
 * (a live, orphaned or half-cleared deployment: the reaper's), a file of the user's — is left
 * alone, and so are other entries of the state dir. The oldest go first. Right before removing a folder its
 * entries are read again, and it is kept if it holds anything but logs by then or a log was
 * written within the kept time: a launch of the same name (`--name`) may be taking it over.
 * A folder another prune removes at the same time (two workers' rank jobs ending together)
 * is passed by; what cannot be removed is logged and skipped: pruning never fails a launch.
 * Resolves to the folders removed.
 *
 * @example
 * ```ts
 * await group.wait();
 * await pruneDeploymentLogs(dirname(group.dir), { now: Date.now(), logger });
 * ```
 */
export async function pruneDeploymentLogs(
  stateDir: string,
  { now, logger }: { now: number; logger: Logger },
): Promise<string[]> {
  const ended = await endedDeployments(stateDir);
  const old = ended
    .sort((a, b) => b.endedAt - a.endedAt)
    .slice(KEEP_ENDED_DEPLOYMENTS)
    .filter(({ endedAt }) => endedAt < now - ENDED_DEPLOYMENT_KEPT_MS)
    .reverse();
  const removed: string[] = [];
  for (const { dir } of old) {
    try {
      if (await removeEnded(dir, now)) removed.push(dir);
    } catch (error) {
      logger.warn({ err: error, dir }, "could not remove an ended deployment's logs; left it");
    }
  }
  if (removed.length > 0) {
    logger.info(
      { removed: removed.length, stateDir, keep: KEEP_ENDED_DEPLOYMENTS },
      "removed the logs of deployments that ended long ago",
    );
  }
  return removed;
}

/** The folders of `stateDir` that hold only ranks' logs, with when each last changed. */
async function endedDeployments(stateDir: string): Promise<Ended[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(stateDir, { withFileTypes: true });
  } catch {
    return [];
  }
  const ended: Ended[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || !isDeploymentId(entry.name)) continue;
    const dir = join(stateDir, entry.name);
    try {
      if (onlyLogs(await readdir(dir))) ended.push({ dir, endedAt: (await stat(dir)).mtimeMs });
    } catch {
      // Removed meanwhile, or not ours to read: not a folder to prune.
    }
  }
  return ended;
}

/** Whether `names`, a folder's entries, are ranks' logs and nothing else (and at least one). */
function onlyLogs(names: readonly string[]): boolean {
  return names.length > 0 && names.every((name) => rankFileName(name)?.kind === "log");
}

/**
 * Removes an ended deployment's folder: its logs, then the folder, which fails if anything
 * came in meanwhile. False, and the folder kept, when it no longer holds only logs last
 * written before the kept time, or when it went while this ran (another prune took it).
 */
async function removeEnded(dir: string, now: number): Promise<boolean> {
  try {
    const names = await readdir(dir);
    if (!onlyLogs(names)) return false;
    const paths = names.map((name) => join(dir, name));
    const written = await Promise.all(paths.map(async (path) => (await stat(path)).mtimeMs));
    if (written.some((at) => at >= now - ENDED_DEPLOYMENT_KEPT_MS)) return false;
    await Promise.all(paths.map((path) => unlink(path)));
    await rmdir(dir);
    return true;
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    if (code === "ENOENT" || code === "ENOTEMPTY") return false;
    throw error;
  }
}
