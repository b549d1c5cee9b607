import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { delimiter, resolve } from "node:path";
import { ConfigError } from "../errors.ts";

/**
 * The error of a `spawn` that gave no process, saying why. Node tells the errno only on the
 * next tick, after `Procs.spawn` has returned, so the cause is found again: a working
 * directory that is not one; a program that is not there, is a directory or is not
 * executable (see `programProblem`); or else, with the program there, the system refused
 * another process (EAGAIN): this user's limit on processes (`ulimit -u`, read from
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
  if (cwd !== undefined && kindOf(cwd) !== "directory") {
    return new ConfigError(
      `${what}: ${cwd} is not a directory; give a working directory that exists`,
    );
  }
  const problem = programProblem(command, cwd, path);
  if (problem !== undefined) return new ConfigError(`${what}: ${problem}`);
  const limit = processLimit();
  return new Error(
    `${what}: the system refused another process${limit === undefined ? "" : ` (this user may run at most ${limit} processes and threads: ulimit -u)`}, or is out of memory; start fewer processes (a smaller world), or raise the limit`,
  );
}

/**
 * What keeps exec from running `command`, or undefined when it names an executable file. A
 * name with a slash is a path, resolved against the process's working directory (PATH plays
 * no part): it may not exist (ENOENT), be a directory or not be executable (EACCES). A bare
 * name is searched for in the child's PATH as execvp does, which passes over a directory or
 * a file it may not execute (EACCES if it met one) and fails with ENOENT when it met none.
 */
function programProblem(
  command: string,
  cwd: string | undefined,
  path: string | undefined,
): string | undefined {
  if (command.includes("/")) {
    const file = resolve(cwd ?? ".", command);
    const relative = command.startsWith("/")
      ? ""
      : ` (a relative path is resolved against the working directory, ${resolve(cwd ?? ".")})`;
    const kind = kindOf(file);
    if (kind === "missing") return `${file} does not exist${relative}; give the program's path`;
    return fileProblem(file, kind, "");
  }
  const files = (path ?? "")
    .split(delimiter)
    .map((dir) => resolve(cwd ?? ".", dir || ".", command));
  const kinds = files.map(kindOf);
  if (kinds.includes("executable")) return undefined;
  const met = kinds.findIndex((kind) => kind !== "missing");
  if (met === -1) {
    return `no program ${command} on PATH (${path ?? "not set"}); install it, add its directory to the PATH the process gets, or give its path`;
  }
  return fileProblem(files[met]!, kinds[met]!, ", found on PATH,");
}

/** What is wrong with a file exec found (`where`: how it found it), and what to do. */
function fileProblem(file: string, kind: Kind, where: string) {
  if (kind === "directory")
    return `${file}${where} is a directory, not a program; give the program's path`;
  if (kind === "not executable") {
    return `${file}${where} is not executable; make it so (chmod +x ${file}) or run it through its interpreter`;
  }
  return undefined;
}

type Kind = "missing" | "directory" | "not executable" | "executable";

/** What exec finds at `file`: nothing, a directory, or a file it may or may not execute. */
function kindOf(file: string): Kind {
  try {
    if (statSync(file).isDirectory()) return "directory";
  } catch {
    return "missing";
  }
  try {
    accessSync(file, constants.X_OK);
    return "executable";
  } catch {
    return "not executable";
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
