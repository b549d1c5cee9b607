import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { delimiter, resolve } from "node:path";
import { ConfigError } from "../errors.ts";

/**
 * The error of a `spawn` that gave no process, saying why. Node tells the errno only on the
 * next tick, after `Procs.spawn` has returned, so the cause is found again: a working
 * directory that is not one, a program not found on `PATH` (the child's, as libuv searches
 * it) or not executable; or else, with the program there, the system refused another
 * process (EAGAIN): this user's limit on processes (`ulimit -u`, read from
 * `/proc/self/limits`), reached by a large world size, or the machine's memory or pids.
 * A working directory or a program that is not there is a `ConfigError`: starting it again
 * fails the same way (a rank job that meets one is not retried). A refused process is an
 * `Error`: it may start once other processes have ended.
 *
 * @example
 * ```ts
 * const child = spawn(command, args, { env, cwd });
 * if (child.pid === undefined) throw cannotStart(command, cwd, env?.PATH ?? process.env.PATH);
 * ```
 */
export function cannotStart(
  command: string,
  cwd: string | undefined,
  path: string | undefined,
): Error {
  const what = `cannot start ${JSON.stringify(command)}${cwd === undefined ? "" : ` in ${cwd}`}`;
  if (cwd !== undefined && !isDirectory(cwd)) {
    return new ConfigError(
      `${what}: ${cwd} is not a directory; give a working directory that exists`,
    );
  }
  if (program(command, cwd, path) === undefined) {
    return new ConfigError(
      `${what}: check that the program exists on PATH (or give its full path) and is executable`,
    );
  }
  const limit = processLimit();
  return new Error(
    `${what}: the system refused another process${limit === undefined ? "" : ` (this user may run at most ${limit} processes and threads: ulimit -u)`}, or is out of memory; start fewer processes (a smaller world), or raise the limit`,
  );
}

/** The executable file `command` names, as exec would find it, or undefined. */
function program(command: string, cwd: string | undefined, path: string | undefined) {
  const candidates = command.includes("/")
    ? [resolve(cwd ?? ".", command)]
    : (path ?? "").split(delimiter).map((dir) => resolve(cwd ?? ".", dir || ".", command));
  return candidates.find((file) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  });
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** This process's soft limit on processes (`Max processes` in /proc/self/limits), if any. */
function processLimit(): number | undefined {
  try {
    const line = /^Max processes\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    const soft = Number(line?.[1]);
    return Number.isInteger(soft) ? soft : undefined;
  } catch {
    return undefined;
  }
}
