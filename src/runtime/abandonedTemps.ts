import { join } from "node:path";
import { atomicTempTarget } from "./atomicTempTarget.ts";
import { isPermissionDenied } from "./fileOwner.ts";
import { nodeProcs } from "./nodeProcs.ts";
import type { Files } from "./ports.ts";

/** The writer's pid in a temp file's name: `.NAME.PID.RANDOM.tmp`, or `.NAME.PID.tmp` (ssh). */
const TEMP_WRITER = /\.(\d+)(?:\.[0-9a-f]+)?\.tmp$/;

/** The largest pid `kill(2)` takes. */
const MAX_PID = 2 ** 31 - 1;

/** The logger `removeAbandonedTemps` tells what it removed. */
export interface AbandonedTempsLogger {
  info(fields: object, message: string): void;
}

/**
 * Removes from `dir` the temp files of `Files.writeAtomic` and `Files.createExclusive`
 * (`atomicTempTarget`; with `of`, only those of a file it accepts) that their writers left
 * when killed between making them and removing or renaming them: a temp whose writer, the
 * pid in its name, is not running on this host, and that nobody has written for more than
 * `staleMs` (by `now`, in ms since the epoch), the time after which the folder's own sweep
 * judges its files abandoned. Both, since the folder may be shared over the network: a pid
 * of another host means nothing here, so another host's living writer is told by its temp
 * being written (a write takes milliseconds), and a pid running here keeps its temp until it
 * ends. A temp with this process's pid counts as another's (a container whose runs all get
 * one pid): this process's own are never that old. The pids are looked up in this host's
 * process table, so `dir` is a folder of this host's files (or of a file system it shares),
 * not an ssh host's (`remoteFiles`), whose pids are that host's. One this user may not
 * remove (another user's, in a folder shared with them) is left to them, and so is a folder
 * so named. Returns the removed names, and tells `logger` which. A `dir` that does not exist
 * holds none. `names`, when the caller has listed `dir` already, saves listing it again.
 *
 * @example
 * ```ts
 * await removeAbandonedTemps(".baton/run", { files: nodeFiles(), staleMs: LOCK_STALE_MS });
 * ```
 */
export async function removeAbandonedTemps(
  dir: string,
  {
    files,
    staleMs,
    now = Date.now(),
    of = () => true,
    logger,
    names,
  }: {
    files: Files;
    staleMs: number;
    now?: number;
    of?: (target: string) => boolean;
    logger?: AbandonedTempsLogger | undefined;
    names?: readonly string[];
  },
): Promise<string[]> {
  const removed: string[] = [];
  for (const name of names ?? (await files.list(dir))) {
    const target = atomicTempTarget(name);
    if (target === undefined || !of(target) || isWriting(name)) continue;
    const path = join(dir, name);
    const modifiedAt = await files.modifiedAt(path);
    if (modifiedAt === undefined || now - modifiedAt <= staleMs) continue;
    try {
      await files.remove(path);
    } catch (error) {
      // Another user's, in a folder shared with them (mode 1777): theirs to remove. A folder
      // so named is no writer's temp file.
      if (isPermissionDenied(error) || (error as NodeJS.ErrnoException).code === "EISDIR") {
        continue;
      }
      throw error;
    }
    removed.push(name);
  }
  if (removed.length > 0) {
    logger?.info(
      { dir, files: removed },
      `removed temp files that writers killed while writing left behind (their processes are gone, and nobody wrote them for over ${Math.round(staleMs / 1000)} s)`,
    );
  }
  return removed;
}

/** Whether the writer named in the temp file's name `name` runs on this host (not this process). */
function isWriting(name: string): boolean {
  const pid = Number(TEMP_WRITER.exec(name)?.[1]);
  // Past any pid a kernel gives (Linux's largest is 2^22): no process wrote it.
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid > MAX_PID || pid === process.pid) return false;
  return nodeProcs().signal(pid, 0) !== "ESRCH";
}
