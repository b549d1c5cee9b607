import type { Clock, ProcInfo, Procs } from "./ports.ts";

/** How a process left in a dead worker's group ended. */
export type StrayEnd = "SIGTERM" | "SIGKILL" | "still running";

/** A process found in a worker's process group after the worker exited. */
export interface Stray {
  pid: number;
  /** Its program (`argv[0]`), without its arguments, which may hold what a log must not. */
  program: string;
  /**
   * Gone after the group's SIGTERM, gone after its SIGKILL, or still running `killAfterMs`
   * after that SIGKILL (in uninterruptible sleep) or never signalled (another user's).
   */
  ended: StrayEnd;
}

/** Between looks at the process table: the first soon after a signal, then further apart. */
const FIRST_LOOK_MS = 10;
const LOOK_AT_MOST_MS = 200;

/**
 * Stops every process left in the process group `pgid` once its leader, a worker the pool
 * started with `newGroup`, has exited and been reaped: children a handler spawned when the
 * worker crashed, or the worker itself behind a wrapper that forked it rather than `exec`
 * it. SIGTERM to the group, SIGKILL `killAfterMs` later to the group if any is left, and a
 * wait of up to `killAfterMs` more for them to be gone (a zombie counts as gone). Signals go
 * to the group only while the table shows a member: the kernel keeps a group's id from
 * being reused while any member exists. Resolves with what it found, empty when the group
 * was already gone (the usual case: one signal 0 to the group, answered ESRCH).
 *
 * @example
 * ```ts
 * const strays = await emptyWorkerGroup(worker.pid, nodeProcs(), nodeClock(), 2_000);
 * for (const s of strays) logger.warn(s, "process left by a worker stopped");
 * ```
 */
export async function emptyWorkerGroup(
  pgid: number,
  procs: Procs,
  clock: Clock,
  killAfterMs: number,
): Promise<Stray[]> {
  const programs = new Map<number, string>();
  /**
   * The group's live members; those new to it are recorded. Signal 0 first: a group with no
   * member at all (the usual case) answers ESRCH at the cost of one call, not a read of the
   * whole table (about 50 µs a process).
   */
  const look = (): ProcInfo[] => {
    if (procs.signalGroup(pgid, 0) === "ESRCH") return [];
    const left = procs
      .list()
      .filter((p) => p.pgid === pgid && p.state !== "zombie" && p.state !== "dead");
    for (const p of left) if (!programs.has(p.pid)) programs.set(p.pid, p.argv[0] ?? "?");
    return left;
  };
  const waitGone = async (): Promise<ProcInfo[]> => {
    const deadline = clock.now() + killAfterMs;
    for (let pause = FIRST_LOOK_MS; ; pause = Math.min(pause * 2, LOOK_AT_MOST_MS)) {
      const remaining = deadline - clock.now();
      await new Promise((resolve) =>
        clock.setTimeout(resolve, Math.max(0, Math.min(pause, remaining))),
      );
      const left = look();
      if (left.length === 0 || remaining <= pause) return left;
    }
  };
  const ended = new Map<number, StrayEnd>();
  let left = look();
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    if (left.length === 0) break;
    const outcome = procs.signalGroup(pgid, signal);
    left = outcome === "ok" ? await waitGone() : outcome === "ESRCH" ? [] : look();
    const running = new Set(left.map((p) => p.pid));
    for (const pid of programs.keys()) {
      if (!ended.has(pid) && !running.has(pid)) ended.set(pid, signal);
    }
  }
  return [...programs].map(([pid, program]) => ({
    pid,
    program,
    ended: ended.get(pid) ?? "still running",
  }));
}
