import type { ProcStat } from "./procStat.ts";
import { parseStat } from "./procStat.ts";

/** The parent of every kernel thread (`kthreadd`); kernel threads show no arguments. */
const KTHREADD = 2;

/**
 * Whether a process whose `/proc/PID/stat` says `stat` and whose `/proc/PID/cmdline` read
 * `cmdline` is in the middle of an exec: alive, not running its exit, not a kernel thread,
 * and showing no arguments. execve swaps in the new program's memory before it writes the
 * arguments and environment there, so for that while both read empty though the process runs
 * (the name in its stat is already the new program's). Measured on Linux 6.18: a few
 * microseconds, or as long as the process then waits for a CPU on a loaded machine.
 *
 * @example
 * ```ts
 * midExec(parseStat(42, "42 (sleep) R 7 7 7 0 -1 4194304 …"), ""); // true
 * midExec(parseStat(42, "42 (sleep) R 7 7 7 0 -1 4194308 …"), ""); // false: running its exit
 * midExec(parseStat(42, "42 (sleep) R 7 7 7 0 -1 4194304 …"), "sleep\u000030\u0000"); // false
 * ```
 */
export function midExec(stat: ProcStat, cmdline: string): boolean {
  return cmdline === "" && runsItsProgram(stat);
}

/** Alive, not running its exit, and no kernel thread: a process whose memory is its program's. */
function runsItsProgram(stat: ProcStat): boolean {
  return (
    stat.state !== "zombie" &&
    stat.state !== "dead" &&
    stat.exiting !== true &&
    stat.pid !== KTHREADD &&
    stat.ppid !== KTHREADD
  );
}

/** Reads a file of one process's /proc folder: its text, or undefined when it cannot be read. */
export type ProcFileRead = (file: "stat" | "cmdline" | "environ") => string | undefined;

/**
 * How many times {@link readAfterExec} looks again, `pause()` apart, at most: about a second
 * at `nodeProcs`' 1 ms, since an exec that is a few microseconds on an idle machine lasts as
 * long as the process waits for a CPU on a loaded one (100 looks, about 100 ms, were too few
 * under a load of 15 on 2 cores: 2 misreads in some 30 runs of `nodeProcs.test`).
 */
export const EXEC_LOOKS = 1_000;

/**
 * How many times {@link readAfterExec} looks again at an environment that reads empty beside
 * arguments: the exec writes the new program's arguments, then its environment (Linux's
 * `create_elf_tables` sets `arg_end`, then `env_start = env_end`, then `env_end` once every
 * variable is in place), so for a few microseconds (longer if the process loses its CPU
 * there) the environment reads empty while the arguments do not; `nodeProcs.test`'s reader of
 * a shell that execs itself saw it once in a CI run. A process whose environment is empty
 * (`env -i`) pays these looks, `pause()` apart: 3 ms at `nodeProcs`' 1 ms.
 */
export const ENVIRONMENT_LOOKS = 3;

/**
 * `read(file)` for process `pid`, read again once its exec is over when it read empty while
 * the process was {@link midExec}: the arguments (or environment) of the program it became,
 * not the empty ones a table would take for a process that has none. It looks again at most
 * `looks` times, calling `pause()` between looks; an environment that reads empty beside
 * arguments, as it does while the exec writes it, {@link ENVIRONMENT_LOOKS} times. A process
 * that reads empty for another reason (running its exit, a zombie, gone, a kernel thread)
 * costs two more reads, and one whose environment is empty those looks. The arguments that end
 * the wait are the ones returned, not a read after them: a process that execs again at once (a
 * shell that execs itself) may be in its next exec by then, and read empty again; an
 * environment that reads empty for good is taken for empty only while the arguments still
 * read, else the process is in another exec and is waited out as the first.
 *
 * @example
 * ```ts
 * const read = (file) => readFileSync(`/proc/${pid}/${file}`, "utf8");
 * readAfterExec(pid, "cmdline", read, () => Atomics.wait(pause, 0, 0, 1)); // "sleep\u000030\u0000"
 * ```
 */
export function readAfterExec(
  pid: number,
  file: "cmdline" | "environ",
  read: ProcFileRead,
  pause: () => void,
  looks = EXEC_LOOKS,
): string | undefined {
  let text = read(file);
  for (let look = 0; text === "" && look < looks; look++) {
    const stat = read("stat");
    if (stat === undefined || !runsItsProgram(parseStat(pid, stat))) return read(file);
    // The exec writes the arguments, then the environment.
    const cmdline = read("cmdline") ?? "";
    if (cmdline !== "" && file === "cmdline") return cmdline;
    if (cmdline !== "" && look >= ENVIRONMENT_LOOKS) {
      const environ = read(file);
      if (environ !== "" || read("cmdline") !== "") return environ;
    }
    pause();
    text = read(file);
  }
  return text;
}
