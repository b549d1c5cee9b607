import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { closeSync, fstatSync, openSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cannotStart } from "./cannotStart.ts";
import {
  cgroupContainment,
  cgroupRefusal,
  moveSelfInto,
  ownCgroupDir,
} from "./cgroupContainment.ts";
import { readAfterExec } from "./midExec.ts";
import type { Containment, ProcExit, ProcInfo, Procs, Signal, SignalOutcome } from "./ports.ts";
import { parseCmdline, parseStat, startTicks } from "./procStat.ts";

/**
 * The Procs port on `node:child_process` and Linux's /proc. `spawn` ignores stdin, replaces the
 * environment with `env` when given, and sends stdout and stderr to `logFile` (opened for
 * appending, mode 0600) or inherits them; with
 * `newGroup` the child leads a new process group (and session) whose pgid is its pid.
 * `exited` settles once Node has reaped the child. Signals map ESRCH and EPERM to outcomes;
 * the process table is read from /proc, so `inspect`, `list` and `environ` need Linux
 * (`environ` is undefined for a process that is gone, a zombie, or another user's). An entry
 * is read from `/proc/PID/stat`; its `argv` comes from `/proc/PID/cmdline` when first used
 * (empty if the process is gone by then), so a scan of the table that looks at the states
 * and groups of most processes and the arguments of few reads one file per process. The
 * arguments and environment of a process caught in the middle of an exec (`midExec`: alive,
 * both read empty) are read again once the exec is over (`readAfterExec`, waiting up to about
 * a second), so a table names the program it became and sees the environment it has. Its
 * `startedAt` is the boot time (`btime` in /proc/stat, whole seconds, read once) plus the
 * process's start in clock ticks (`USER_HZ`, 100 a second on Linux). `containment` is
 * {@link cgroupContainment}, looked up once per process with this process's own cgroup; to
 * spawn a process with `cgroup`, this process moves into the cgroup, forks it there and moves
 * back to that own cgroup (not looked up again) before `spawn` returns (spawn is synchronous), so the child is a member from its first instruction
 * and gets its arguments and environment exactly as a direct spawn does.
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

    get containment() {
      return cgroups().containment;
    },

    spawn({ argv, env, cwd, logFile, newGroup = false, cgroup }) {
      const [command, ...args] = argv;
      const log = logFile === undefined ? undefined : openSync(logFile, "a", 0o600);
      const output = log ?? "inherit";
      let home: string | undefined;
      let child: ChildProcess | undefined;
      try {
        // Before the spawn: the child may write to the log before spawn returns.
        const logStart = log === undefined ? undefined : fstatSync(log).size;
        if (cgroup !== undefined) home = enterCgroup(cgroup);
        child = spawnOrSay(command, args, {
          env,
          cwd,
          detached: newGroup,
          stdio: ["ignore", output, output],
        });
        // A failed spawn is reported by the throw below; without a listener the 'error'
        // event emitted on the next tick would crash the process.
        child.once("error", () => {});
        const pid = child.pid;
        if (pid === undefined) throw cannotStart(command, cwd, (env ?? process.env).PATH);
        const started = child;
        const exited = new Promise<ProcExit>((resolve) => {
          started.once("exit", (code, signal) => resolve({ code, signal }));
        });
        return { pid, exited, ...(logStart !== undefined && { logStart }) };
      } finally {
        if (log !== undefined) closeSync(log);
        if (home !== undefined && cgroup !== undefined) leaveCgroup(home, cgroup, child);
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
      const raw = readAfterExec(pid, "environ", (file) => readProc(pid, file), pauseMs);
      if (raw === undefined) return undefined;
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

/** This process's own cgroup and the containment below it, once looked up. */
let found: { own: string | undefined; containment: Containment | undefined } | undefined;

function cgroups(): { own: string | undefined; containment: Containment | undefined } {
  if (found === undefined) {
    const own = ownCgroupDir();
    found = { own, containment: cgroupContainment(own) };
  }
  return found;
}

/**
 * Moves this process into `cgroup` so that the child it forks next starts there, and returns
 * the cgroup it was in, to move back to right after. The child then is a member before it
 * runs a line of its own, with the arguments and environment it was given, untouched.
 */
function enterCgroup(cgroup: string): string {
  const home = cgroups().own;
  const cannot = (why: string) =>
    new Error(
      `cannot start a process in the cgroup ${cgroup}: ${why}. ` +
        "Launch again (a new launch makes its cgroup anew), or without containment (--no-contain)",
    );
  if (home === undefined) throw cannot("this process has no cgroup v2");
  try {
    moveSelfInto(cgroup);
  } catch (error) {
    throw cannot(cgroupRefusal(error, join(cgroup, "cgroup.procs")));
  }
  return home;
}

/**
 * Moves this process back to its own cgroup `home` once `child` was started in `cgroup`. Where
 * that fails, this process stays in `cgroup`: the child, which no one would stop (the caller
 * gets no handle), is killed at once (by its pid, not yet reaped, so it is this child), and
 * the spawn fails saying so; no `cgroup.kill` or sweep takes a cgroup that holds this process
 * (`refuseCgroupHoldingThisProcess`).
 */
function leaveCgroup(home: string, cgroup: string, child: ChildProcess | undefined): void {
  try {
    moveSelfInto(home);
  } catch (error) {
    const started =
      child?.pid === undefined ? "" : `; the process started there (pid ${child.pid}) was killed`;
    child?.kill("SIGKILL");
    throw new Error(
      `cannot move this process (pid ${process.pid}) back from the cgroup ${cgroup}, where it ` +
        `started a process, to its own ${home}: ${cgroupRefusal(error, join(home, "cgroup.procs"))}${started}. ` +
        "baton does not kill or empty a cgroup this process is in: end it, and start it again " +
        "(or, for a launch, with --no-contain)",
    );
  }
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

/** The table's entry for `pid` from its stat file; `argv` is read when first used. */
function inspect(pid: number): ProcInfo | undefined {
  const stat = readProc(pid, "stat");
  if (stat === undefined) return undefined;
  let argv: string[] | undefined;
  const entry = Object.defineProperty(parseStat(pid, stat), "argv", {
    enumerable: true,
    get: () => {
      argv ??= parseCmdline(
        readAfterExec(pid, "cmdline", (file) => readProc(pid, file), pauseMs) ?? "",
      );
      return argv;
    },
  });
  const ticks = startTicks(stat);
  if (ticks !== undefined) entry.startedAt = bootTimeMs() + ticks * (1_000 / USER_HZ);
  return entry as ProcInfo;
}

/** Clock ticks a second in /proc (`USER_HZ`): 100 on every Linux architecture Node runs on. */
const USER_HZ = 100;

let bootMs: number | undefined;

/** When this machine booted, in ms since the epoch (`btime`, whole seconds), read once. */
function bootTimeMs(): number {
  bootMs ??= Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1]) * 1_000;
  return bootMs;
}

/**
 * The text of `/proc/PID/FILE`, or undefined when it cannot be read: the process is gone (or,
 * for its environment, a zombie or another user's).
 */
function readProc(pid: number, file: "stat" | "cmdline" | "environ"): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ESRCH" || code === "EACCES" || code === "EPERM") {
      return undefined;
    }
    throw err;
  }
}

/** What `Atomics.wait` sleeps on: nothing notifies it, so each wait lasts its timeout. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * Blocks this thread for 1 ms: between looks at a process in the middle of an exec, which
 * the synchronous Procs port waits out (`readAfterExec`).
 */
function pauseMs(): void {
  Atomics.wait(PAUSE, 0, 0, 1);
}

/**
 * `spawn`, whose refusals with an errno (a working directory that is a file is refused at
 * once, `spawn ENOTDIR`; most others come on the next tick) say why as `cannotStart` does.
 */
function spawnOrSay(
  command: string,
  args: string[],
  options: SpawnOptions & { cwd: string | undefined },
): ChildProcess {
  try {
    return spawn(command, args, options);
  } catch (error) {
    if (typeof (error as NodeJS.ErrnoException).errno !== "number") throw error;
    throw cannotStart(command, options.cwd, (options.env ?? process.env).PATH);
  }
}
