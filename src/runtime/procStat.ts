import type { ProcInfo, ProcState } from "./ports.ts";

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

/** A process table entry without its arguments: what `/proc/PID/stat` alone tells. */
export type ProcStat = Omit<ProcInfo, "argv">;

/** `PF_EXITING` in the flags of `/proc/PID/stat`: the process is running its exit. */
const PF_EXITING = 0x4;

/**
 * Pid, parent, process group, state and the kernel's name for the program (`name`, COMM) from
 * the text of Linux's `/proc/PID/stat`, wherever it was read (here, or on a remote host), and
 * `exiting` when its flags say it runs its exit (`PF_EXITING`).
 * `PID (COMM) STATE PPID PGRP SESSION TTY TPGID FLAGS …`: COMM may hold spaces and `)`, so the
 * line is cut at the last `)`. An unknown state letter is an error naming the pid.
 *
 * @example
 * ```ts
 * parseStat(42, "42 (sleep) S 1 42 42 0 -1 4194304 …"); // { pid: 42, ppid: 1, pgid: 42, state: "sleeping", name: "sleep" }
 * parseStat(43, "43 (sleep) R 1 43 43 0 -1 4194308 …"); // { pid: 43, ppid: 1, pgid: 43, state: "running", name: "sleep", exiting: true }
 * ```
 */
export function parseStat(pid: number, stat: string): ProcStat {
  const end = stat.lastIndexOf(")");
  const fields = stat.slice(end + 2).split(" ");
  const [letter = "", ppid = "", pgid = ""] = fields;
  const state = STATES[letter];
  if (state === undefined) {
    throw new Error(`unknown process state ${JSON.stringify(letter)} in /proc/${pid}/stat`);
  }
  const name = stat.slice(stat.indexOf("(") + 1, end);
  const exiting = (Number(fields[6]) & PF_EXITING) !== 0;
  return {
    pid,
    ppid: Number(ppid),
    pgid: Number(pgid),
    state,
    name,
    ...(exiting && { exiting }),
  };
}

/**
 * When the process started, in clock ticks since the machine booted: field 22 of the text of
 * `/proc/PID/stat` (`starttime`, see proc(5)), or undefined when the text has no such field.
 *
 * @example
 * ```ts
 * startTicks("42 (sleep) S 1 42 42 0 -1 4194304 96 0 0 0 0 0 0 0 20 0 1 0 123456 …"); // 123456
 * ```
 */
export function startTicks(stat: string): number | undefined {
  const field = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  return field === undefined || !/^\d+$/.test(field) ? undefined : Number(field);
}

/**
 * The arguments in the text of `/proc/PID/cmdline` (NUL-terminated; empty for a zombie).
 *
 * @example
 * ```ts
 * parseCmdline("sleep\u000030\u0000"); // ["sleep", "30"]
 * ```
 */
export function parseCmdline(cmdline: string): string[] {
  const argv = cmdline.split("\0");
  if (argv.at(-1) === "") argv.pop();
  return argv;
}

/**
 * A process table entry from the text of `/proc/PID/stat` and `/proc/PID/cmdline`
 * ({@link parseStat} and {@link parseCmdline} together).
 *
 * @example
 * ```ts
 * parseProcStat(42, "42 (sleep) S 1 42 42 0 -1 …", "sleep\u000030\u0000");
 * // { pid: 42, ppid: 1, pgid: 42, state: "sleeping", name: "sleep", argv: ["sleep", "30"] }
 * ```
 */
export function parseProcStat(pid: number, stat: string, cmdline: string): ProcInfo {
  return { ...parseStat(pid, stat), argv: parseCmdline(cmdline) };
}
