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

/**
 * A process table entry from the text of Linux's `/proc/PID/stat` and `/proc/PID/cmdline`
 * (NUL-separated arguments), wherever they were read (here, or on a remote host).
 * `PID (COMM) STATE PPID PGRP …`: COMM may hold spaces and `)`, so the line is cut at the
 * last `)`. An unknown state letter is an error naming the pid.
 *
 * @example
 * ```ts
 * parseProcStat(42, "42 (sleep) S 1 42 42 0 -1 …", "sleep\u000030\u0000");
 * // { pid: 42, ppid: 1, pgid: 42, state: "sleeping", argv: ["sleep", "30"] }
 * ```
 */
export function parseProcStat(pid: number, stat: string, cmdline: string): ProcInfo {
  const [letter = "", ppid = "", pgid = ""] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const state = STATES[letter];
  if (state === undefined) {
    throw new Error(`unknown process state ${JSON.stringify(letter)} in /proc/${pid}/stat`);
  }
  const argv = cmdline.split("\0");
  if (argv.at(-1) === "") argv.pop();
  return { pid, ppid: Number(ppid), pgid: Number(pgid), state, argv };
}
