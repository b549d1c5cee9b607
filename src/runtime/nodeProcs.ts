import { spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import type { ProcExit, ProcInfo, ProcState, Procs, Signal, SignalOutcome } from "./ports.ts";

/** Process states as /proc/PID/stat spells them (see proc(5)). */
const STATES: Record<string, ProcState> = {
  R: "running",
  S: "sleeping",
  I: "sleeping",
  P: "sleeping",
  W: "sleeping",
  K: "sleeping",
  D: "disk-sleep",
  T: "stopped",
  t: "stopped",
  Z: "zombie",
  X: "dead",
  x: "dead",
};

/**
 * The Procs port on `node:child_process` and Linux's /proc. `spawn` ignores stdin, replaces the
 * environment with `env` when given, and sends stdout and stderr to `logFile` (opened for
 * appending, mode 0600) or inherits them; with
 * `newGroup` the child leads a new process group (and session) whose pgid is its pid.
 * `exited` settles once Node has reaped the child. Signals map ESRCH and EPERM to outcomes;
 * the process table is read from /proc, so `inspect`, `list` and `environ` need Linux
 * (`environ` is undefined for a process that is gone, a zombie, or another user's).
 *
 * @example
 * ```ts
 * const procs = nodeProcs();
 * const rank = procs.spawn({ argv: ["python", "train.py"], newGroup: true, logFile: "rank0.log" });
 * procs.signalGroup(rank.pid, "SIGTERM");
 * const { code, signal } = await rank.exited;
 * ```
 */
export function nodeProcs(): Procs {
  return {
    selfPid: process.pid,

    spawn({ argv, env, cwd, logFile, newGroup = false }) {
      const [command, ...args] = argv;
      const log = logFile === undefined ? undefined : openSync(logFile, "a", 0o600);
      const output = log ?? "inherit";
      try {
        const child = spawn(command, args, {
          env,
          cwd,
          detached: newGroup,
          stdio: ["ignore", output, output],
        });
        // A failed spawn is reported by the throw below; without a listener the 'error'
        // event emitted on the next tick would crash the process.
        child.once("error", () => {});
        const pid = child.pid;
        if (pid === undefined) {
          throw new Error(
            `cannot start ${JSON.stringify(command)}${cwd === undefined ? "" : ` in ${cwd}`}: ` +
              "check that the program exists on PATH (or give its full path) and is executable",
          );
        }
        const exited = new Promise<ProcExit>((resolve) => {
          child.once("exit", (code, signal) => resolve({ code, signal }));
        });
        return { pid, exited };
      } finally {
        if (log !== undefined) closeSync(log);
      }
    },

    signal(pid, signal) {
      if (!Number.isInteger(pid) || pid <= 0) {
        throw new Error(`cannot signal pid ${pid}: a pid is a positive integer`);
      }
      return deliver(pid, signal);
    },

    signalGroup(pgid, signal) {
      if (!Number.isInteger(pgid) || pgid <= 1) {
        throw new Error(
          `cannot signal process group ${pgid}: a pgid is an integer above 1 ` +
            "(0 would be our own group and -1 every process)",
        );
      }
      return deliver(-pgid, signal);
    },

    inspect,

    environ(pid) {
      let raw: string;
      try {
        raw = readFileSync(`/proc/${pid}/environ`, "utf8");
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "ESRCH" || code === "EACCES" || code === "EPERM") {
          return undefined;
        }
        throw err;
      }
      const env: Record<string, string> = {};
      for (const entry of raw.split("\0")) {
        const eq = entry.indexOf("=");
        if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
      }
      return env;
    },

    list() {
      const table: ProcInfo[] = [];
      for (const name of readdirSync("/proc")) {
        if (!/^\d+$/.test(name)) continue;
        const info = inspect(Number(name));
        if (info !== undefined) table.push(info);
      }
      return table;
    },
  };
}

function deliver(target: number, signal: Signal): SignalOutcome {
  try {
    process.kill(target, signal);
    return "ok";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ESRCH" || code === "EPERM") return code;
    throw err;
  }
}

function inspect(pid: number): ProcInfo | undefined {
  let stat: string;
  let cmdline: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ESRCH") return undefined;
    throw err;
  }
  // "PID (COMM) STATE PPID PGRP ...": COMM may hold spaces and ')', so cut at the last ')'.
  const [letter = "", ppid = "", pgid = ""] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const state = STATES[letter];
  if (state === undefined) {
    throw new Error(`unknown process state ${JSON.stringify(letter)} in /proc/${pid}/stat`);
  }
  const argv = cmdline.split("\0");
  if (argv.at(-1) === "") argv.pop();
  return { pid, ppid: Number(ppid), pgid: Number(pgid), state, argv };
}
