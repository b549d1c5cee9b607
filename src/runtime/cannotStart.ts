import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { delimiter, resolve } from "node:path";
import { ConfigError, ProgramNotRunError } from "../errors.ts";
import { type ExecKind, execKind } from "./execKind.ts";

/**
 * The error of a `spawn` that gave no process, saying why. Node tells the errno only on the
 * next tick, after `Procs.spawn` has returned, so the cause is found again: a working
 * directory that is not one; a program that is not there, is a directory or is not
 * executable (see `programProblem`), or a script whose `#!` interpreter is (see
 * `interpreterProblem`); or else, with the program there, the system refused
 * another process (EAGAIN): this user's limit on processes (`ulimit -u`, read from
 * `/proc/self/limits`), reached by a large world size, or the machine's memory or pids.
 * A working directory or a program that is not there is a `ConfigError` (for the program, a
 * `ProgramNotRunError` with the code a shell exits with): starting it again fails the same
 * way (a rank job that meets one is not retried). A refused process is an
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
  if (cwd !== undefined && execKind(cwd) !== "directory") {
    return new ConfigError(
      `${what}: ${cwd} is not a directory; give a working directory that exists`,
    );
  }
  const problem = programProblem(command, cwd, path);
  if (problem !== undefined)
    return new ProgramNotRunError(`${what}: ${problem.says}`, problem.shellCode);
  const limit = processLimit();
  return new Error(
    `${what}: the system refused another process${limit === undefined ? "" : ` (this user may run at most ${limit} processes and threads: ulimit -u)`}, or is out of memory; start fewer processes (a smaller world), or raise the limit`,
  );
}

/** What keeps exec from running a program, and the code a shell exits with for it. */
interface ProgramProblem {
  says: string;
  /** 127 when it (or its `#!` interpreter) is not there, 126 when it cannot be executed. */
  shellCode: 126 | 127;
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
): ProgramProblem | undefined {
  if (command.includes("/")) {
    const file = resolve(cwd ?? ".", command);
    const relative = command.startsWith("/")
      ? ""
      : ` (a relative path is resolved against the working directory, ${resolve(cwd ?? ".")})`;
    const kind = execKind(file);
    if (kind === "missing") {
      return { says: `${file} does not exist${relative}; give the program's path`, shellCode: 127 };
    }
    if (kind === "executable") return interpreterProblem(file, "", cwd);
    return fileProblem(file, kind, "");
  }
  const files = (path ?? "")
    .split(delimiter)
    .map((dir) => resolve(cwd ?? ".", dir || ".", command));
  const kinds = files.map(execKind);
  // execvp goes on down PATH past a script whose interpreter is not there (its ENOENT).
  const scripts = files.filter((_, i) => kinds[i] === "executable");
  if (scripts.length > 0) {
    const problems = scripts.map((file) => interpreterProblem(file, ", found on PATH,", cwd));
    return problems.includes(undefined) ? undefined : problems[0];
  }
  const met = kinds.findIndex((kind) => kind !== "missing");
  if (met === -1) {
    return {
      says: `no program ${command} on PATH (${path ?? "not set"}); install it, add its directory to the PATH the process gets, or give its path`,
      shellCode: 127,
    };
  }
  return fileProblem(files[met]!, kinds[met]!, ", found on PATH,");
}

/** What is wrong with a file exec found (`where`: how it found it), and what to do. */
function fileProblem(file: string, kind: ExecKind, where: string): ProgramProblem | undefined {
  if (kind === "directory") {
    return {
      says: `${file}${where} is a directory, not a program; give the program's path`,
      shellCode: 126,
    };
  }
  if (kind === "not executable") {
    return {
      says: `${file}${where} is not executable; make it so (chmod +x ${file}) or run it through its interpreter`,
      shellCode: 126,
    };
  }
  return undefined;
}

/**
 * What keeps exec from running the executable `file` (`where`: how it was found) through the
 * interpreter its `#!` line names, or undefined when it has none or that one is executable.
 * The kernel takes the interpreter from the line's first word, as a path (relative: to the
 * working directory), and fails with ENOENT when it is not there, EACCES when it is not
 * executable. A line ending in CR (a file saved with Windows line endings) names an
 * interpreter with a CR at its end, which is never there. `#!/usr/bin/env X` without X on
 * PATH is not this: env starts, and exits 127 saying so. A shell exits 127 for an interpreter
 * that is not there, 126 for one it cannot execute.
 */
function interpreterProblem(
  file: string,
  where: string,
  cwd: string | undefined,
): ProgramProblem | undefined {
  const line = firstLine(file);
  if (!line?.startsWith("#!")) return undefined;
  const interpreter = /^[ \t]*([^ \t]*)/.exec(line.slice(2))?.[1] ?? "";
  if (interpreter === "") return undefined;
  const kind = execKind(resolve(cwd ?? ".", interpreter));
  if (kind === "executable") return undefined;
  const named = `${file}${where} starts with #!${interpreter}`;
  if (interpreter.endsWith("\r")) {
    return {
      says: `${named.slice(0, -1)}\\r (its lines end in CR LF, Windows line endings), an interpreter that does not exist; convert it to Unix line endings (dos2unix ${file}, or sed -i 's/\\r$//' ${file})`,
      shellCode: 127,
    };
  }
  if (kind === "missing") {
    const name = interpreter.slice(interpreter.lastIndexOf("/") + 1);
    const fromPath = name === "env" ? "" : ` (#!/usr/bin/env ${name} takes it from PATH)`;
    return {
      says: `${named}, an interpreter that does not exist; install it, or change that line to an interpreter that is there${fromPath}, or run the script through one`,
      shellCode: 127,
    };
  }
  return {
    says: `${named}, an interpreter that ${kind === "directory" ? "is a directory, not a program" : "is not executable"}; change that line to the interpreter's path, or run the script through it`,
    shellCode: 126,
  };
}

/** The start of `file` up to its first newline (at most the 256 bytes exec reads), if readable. */
function firstLine(file: string): string | undefined {
  try {
    const fd = openSync(file, "r");
    try {
      const head = Buffer.alloc(256);
      const read = readSync(fd, head, 0, head.length, 0);
      return head.toString("utf8", 0, read).split("\n", 1)[0];
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
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
