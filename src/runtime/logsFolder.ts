import { accessSync, constants } from "node:fs";
import { dirname } from "node:path";
import { ConfigError } from "../errors.ts";
import { fileInTheWay } from "./fileInTheWay.ts";
import {
  anotherPlace,
  folderNotMade,
  folderNotMadeAdvice,
  type MadeFolder,
} from "./folderNotMade.ts";
import { makeDirs } from "./makeDirs.ts";
import { permissionDenied } from "./permissionAdvice.ts";

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
 * Makes `dir`, a folder of logs, closed to others (mode 0700) where it is missing. One that
 * cannot be made is a `ConfigError` that starts with `what` (the log or logs at stake) and
 * says why, naming the path at fault, and what to do with `folder`: a symbolic link to nothing
 * on the way, or a file system that makes no folders ({@link folderNotMade}); a file in the
 * way (`ENOTDIR`, `EEXIST`); a folder this user may not make, or write in when it is there
 * (`EACCES`, `EPERM`), or on a read-only file system (`EROFS`). Each used to be Node's bare error from deep inside. Any
 * other error is thrown as it is.
 */
function makeLogsFolder(dir: string, folder: LogsFolder, what: string): void {
  try {
    makeDirs(dir, 0o700);
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (error) {
    const why = whyNotMade(error, dir, folder);
    if (why === undefined) throw error;
    throw new ConfigError(`${what}: ${why}`, { cause: error });
  }
}

/** The folders of logs baton makes. */
type LogsFolder = Extract<MadeFolder, "log" | "workerLogs">;

/** Why `dir` could not be made, and what to do, for the errors {@link makeLogsFolder} names. */
function whyNotMade(error: unknown, dir: string, folder: LogsFolder): string | undefined {
  const notMade = folderNotMade(error, dir);
  if (notMade !== undefined) return `${notMade.why}; ${folderNotMadeAdvice(notMade, folder)}`;
  const { code, syscall = "mkdir", path = dir } = error as NodeJS.ErrnoException;
  if (code === "ENOTDIR" || code === "EEXIST") {
    return `${fileInTheWay(path)} is a file, not a directory; move it aside, or ${anotherPlace(folder)}`;
  }
  if (code === "EACCES") {
    // An `access` of the folder that exists is a write to it.
    const denied = permissionDenied(syscall === "access" ? "write" : syscall, path);
    return `${denied.problem}; ${anotherPlace(folder)}, one this user can write`;
  }
  if (code === "EPERM" || code === "EROFS") {
    const refusal = code === "EPERM" ? "operation not permitted" : "read-only file system";
    return `cannot ${syscall} ${path}: ${refusal}; ${anotherPlace(folder)}, one this user can write`;
  }
  return undefined;
}
