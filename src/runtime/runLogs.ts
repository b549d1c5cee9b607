import { readdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";

/** How many runs' log folders a store keeps by default. */
export const DEFAULT_KEEP_LOGS = 20;

/** A folder written this recently may belong to a run still going: it is never removed. */
const RECENT_MS = 24 * 60 * 60 * 1000;

/** The file in a run's log folder that says its run has ended and its workers are gone. */
const ENDED_FILE = "ended";

/** `2026-12-04T13-50-01-123Z-<id>`: a run's log folder, named so that names sort by start. */
const RUN_FOLDER = /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-[\w-]+$/;

/**
 * The folder of one run's logs under `root` (a store's `logs/`): its start time, then an id
 * that tells apart two runs started in the same millisecond. Concurrent runs on one store
 * (of different graphs) each write their own.
 *
 * @example
 * ```ts
 * runLogsDir(".baton/logs", Date.parse("2026-12-04T13:50:01.123Z"), "k3x9");
 * // ".baton/logs/2026-12-04T13-50-01-123Z-k3x9"
 * ```
 */
export function runLogsDir(root: string, startedAt: number, id: string): string {
  return join(root, `${new Date(startedAt).toISOString().replace(/[:.]/g, "-")}-${id}`);
}

/**
 * Marks the log folder of a run that has ended, once its workers are gone: pruning may then
 * remove it however recently it was written. A folder that does not exist (no worker wrote
 * to it) stays absent; a mark that cannot be written is logged, and the folder is kept for a
 * day like one whose run may still be going.
 *
 * @example
 * ```ts
 * await pool.stop();
 * await markRunLogsEnded(logsDir, logger);
 * ```
 */
export async function markRunLogsEnded(dir: string, logger: Logger): Promise<void> {
  try {
    await writeFile(join(dir, ENDED_FILE), "", { mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    logger.warn({ err: error, dir }, "could not mark the run's logs as ended; they are kept a day");
  }
}

/**
 * Ends the log folder of a run refused before it started (its graph did not plan: a cycle, an
 * unknown kind, a job no worker can take): removed when it holds nothing but an empty
 * `run.log`, as a module that does not load leaves no folder, else marked ended
 * ({@link markRunLogsEnded}). Each such refusal left an empty folder that pruning kept for a
 * day, as one whose run may still be going.
 *
 * @example
 * ```ts
 * try {
 *   run = engine.run(graph);
 * } catch (error) {
 *   await endUnstartedRunLogs(logsDir, logger);
 *   throw error;
 * }
 * ```
 */
export async function endUnstartedRunLogs(dir: string, logger: Logger): Promise<void> {
  const entries = await readdir(dir).catch(() => []);
  const log = await stat(join(dir, "run.log")).catch(() => undefined);
  if (entries.length === 1 && log?.size === 0) {
    await rm(dir, { recursive: true, force: true }).catch(() => {});
    return;
  }
  await markRunLogsEnded(dir, logger);
}

/**
 * Removes the log folders of old runs under `root`: all but the newest `keep`, except a
 * folder with a file written in the last day and no mark that its run ended
 * ({@link markRunLogsEnded}), whose run may still be going (a long run started before many
 * short ones, or one killed before it could mark its folder). Other entries (a user's own files, the flat logs of
 * older versions) are left alone. What cannot be removed is logged and skipped: pruning
 * never fails a run. Resolves to the folders removed.
 *
 * @example
 * ```ts
 * await pruneRunLogs(join(store, "logs"), { keep: 20, now: Date.now(), logger });
 * ```
 */
export async function pruneRunLogs(
  root: string,
  options: { keep: number; now: number; logger: Logger },
): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(root);
  } catch {
    return [];
  }
  const folders = entries.filter((name) => RUN_FOLDER.test(name)).sort();
  const old = folders.slice(0, Math.max(0, folders.length - options.keep));
  const removed: string[] = [];
  for (const name of old) {
    const dir = join(root, name);
    try {
      if (!(await hasEnded(dir)) && (await lastWritten(dir)) > options.now - RECENT_MS) continue;
      await rm(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch (error) {
      options.logger.warn({ err: error, dir }, "could not remove an old run's logs; left it");
    }
  }
  if (removed.length > 0) {
    options.logger.info({ removed: removed.length, keep: options.keep }, "removed old runs' logs");
  }
  return removed;
}

/** Whether a run's log folder is marked as its run's, ended. */
async function hasEnded(dir: string): Promise<boolean> {
  try {
    return (await stat(join(dir, ENDED_FILE))).isFile();
  } catch {
    return false;
  }
}

/** When anything in a run's log folder (not below) was last written, in ms since the epoch. */
async function lastWritten(dir: string): Promise<number> {
  let latest = (await stat(dir)).mtimeMs;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isFile()) latest = Math.max(latest, (await stat(join(dir, entry.name))).mtimeMs);
  }
  return latest;
}
