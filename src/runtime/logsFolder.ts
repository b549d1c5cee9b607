import { accessSync, constants } from "node:fs";
import { dirname } from "node:path";
import { ConfigError } from "../errors.ts";
import { makeDirs } from "./makeDirs.ts";
import { unwritableFolder, unwritableFolderAdvice } from "./unwritableFolder.ts";

/**
 * Makes the folder of the log `file` (`baton run`'s `run.log`), closed to others (mode 0700);
 * one that cannot be made is a `ConfigError` "cannot write the log FILE: why; what to do"
 * ({@link makeLogsFolder}).
 *
 * @example
 * ```ts
 * makeLogFileFolder(".baton/logs/2026-12-06T06-50-00-000Z-a1b2c3d4/run.log");
 * ```
 */
export function makeLogFileFolder(file: string): void {
  makeLogsFolder(dirname(file), "log", `cannot write the log ${file}`);
}

/**
 * Makes `logsDir`, the folder of a pool's worker logs, closed to others (mode 0700), when the
 * pool starts and before any worker does; one that cannot be made is a `ConfigError` "cannot
 * write the workers' logs in DIR: why; what to do" ({@link makeLogsFolder}).
 *
 * @example
 * ```ts
 * makeWorkerLogsFolder("/scratch/logs");
 * // ConfigError: "cannot write the workers' logs in /scratch/logs: /scratch is a symbolic link to /lus/alice, which does not exist (a disk not mounted?); make /lus/alice, or give the workers' logs (logsDir) another directory"
 * ```
 */
export function makeWorkerLogsFolder(logsDir: string): void {
  makeLogsFolder(logsDir, "workerLogs", `cannot write the workers' logs in ${logsDir}`);
}

/**
 * Makes `dir`, a folder of logs, closed to others (mode 0700) where it is missing, and checks
 * this user can write in it. One that cannot be used is a `ConfigError` that starts with `what`
 * (the log or logs at stake) and says why and what to do as the store does
 * ({@link unwritableFolder}: a symbolic link to nothing on the way, a file system that makes no
 * folders, a file in the way, a write refused). Each used to be Node's bare error from deep
 * inside. Any other error is thrown as it is.
 */
function makeLogsFolder(dir: string, folder: "log" | "workerLogs", what: string): void {
  try {
    makeDirs(dir, 0o700);
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (error) {
    const unwritable = unwritableFolder(error, dir);
    if (unwritable === undefined) throw error;
    throw new ConfigError(
      `${what}: ${unwritable.why}; ${unwritableFolderAdvice(unwritable, folder)}`,
      { cause: error },
    );
  }
}
