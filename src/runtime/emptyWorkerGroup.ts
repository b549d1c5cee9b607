import { programName } from "../machines/programName.ts";
import { isAlive } from "../rank/launcherWatch.ts";
import { refuseCgroupHoldingThisProcess } from "./cgroupHoldsThisProcess.ts";
import type { Clock, ProcInfo, Procs, Signal, SignalOutcome } from "./ports.ts";

/** How a process left by a dead worker ended. */
export type StrayEnd = "SIGTERM" | "SIGKILL" | "still running";

/** A process found in a worker's process group or cgroup after the worker exited. */
export interface Stray {
  pid: number;
  /**
   * Its program (`argv[0]`), without its arguments, which may hold what a log must not; of one
   * whose arguments were gone when first seen, the kernel's name for it and why (`programName`).
   */
  program: string;
  /**
   * Gone after the SIGTERM, gone after the SIGKILL, or still running `killAfterMs` after that
   * SIGKILL (in uninterruptible sleep) or never signalled (another user's).
   */
  ended: StrayEnd;
  /**
   * Whether it had left the worker's process group (`setsid`, `spawn` with `detached`), so
   * that only the worker's cgroup found it.
   */
  escaped: boolean;
}

/** What a worker that exited may have left processes in. */
export interface WorkerRemains {
  /** The process group the worker led (its pid), when it was started in one of its own. */
  pgid?: number | undefined;
  /**
   * The cgroup it was started in (`Containment.create`), when contained: it holds every
   * process the worker started, whatever group or session they moved to.
   */
  cgroup?: string | undefined;
}

/** The live processes a worker left: its process group's members, and its cgroup's outside it. */
export interface LiveRemains {
  group: ProcInfo[];
  /** Members of its cgroup outside its process group: they left it (`setsid`, a detached spawn). */
  escaped: ProcInfo[];
}

/**
 * The live processes a worker that exited left: the members of its process group `pgid`, and
 * those of its `cgroup` outside that group (`escaped`). Signal 0 first: a group with no member
 * at all (the usual case) answers ESRCH at the cost of one call, not a read of the whole table
 * (about 50 µs a process). Throws `CGROUP_HOLDS_THIS_PROCESS` when this process is in the
 * cgroup (see `refuseCgroupHoldingThisProcess`).
 *
 * @example
 * ```ts
 * const { group, escaped } = liveRemains({ pgid: worker.pid, cgroup }, nodeProcs());
 * ```
 */
export function liveRemains({ pgid, cgroup }: WorkerRemains, procs: Procs): LiveRemains {
  const group =
    pgid === undefined || procs.signalGroup(pgid, 0) === "ESRCH"
      ? []
      : procs.list().filter((p) => p.pgid === pgid && isAlive(p));
  const inGroup = new Set(group.map((p) => p.pid));
  const members = cgroup === undefined ? [] : (procs.containment?.members(cgroup) ?? []);
  if (cgroup !== undefined) refuseCgroupHoldingThisProcess(cgroup, members, procs.selfPid);
  const escaped = members
    .filter((pid) => !inGroup.has(pid))
    .flatMap((pid) => {
      const info = procs.inspect(pid);
      return info !== undefined && isAlive(info) ? [info] : [];
    });
  return { group, escaped };
}

/** Between looks at the process table: the first soon after a signal, then further apart. */
const FIRST_LOOK_MS = 10;
const LOOK_AT_MOST_MS = 200;

/**
 * Stops every process a worker left once it has exited and been reaped: those in the process
 * group `pgid` it led (children a handler spawned when the worker crashed, or the worker
 * itself behind a wrapper that forked it rather than `exec` it) and, when it was contained,
 * those in its `cgroup` that left that group (a handler's child in a session of its own).
 * SIGTERM to the group and to each escaped process by pid; `killAfterMs` later, SIGKILL to
 * what is left: the cgroup's `Containment.kill` where there is one (the kernel's, which no
 * fork outruns), else by pid, and the group; then a wait of up to `killAfterMs` more for them
 * to be gone (a zombie counts as gone). Signals go to the group only while the table shows a
 * member: the kernel keeps a group's id from being reused while any member exists; a pid
 * read from the cgroup is signalled at once. A cgroup that holds this process (`selfPid`,
 * moved in to start the worker and never moved back) is refused before anything is
 * signalled: the promise rejects with `CGROUP_HOLDS_THIS_PROCESS`. Resolves with what it found, empty when nothing
 * was left (the usual case: one signal 0 to the group, answered ESRCH, and one read of the
 * cgroup's members). `seen`, a `liveRemains` of the same group and cgroup taken since the
 * worker was reaped (the local pool's, for the exit line), is its first look, not taken again.
 *
 * @example
 * ```ts
 * const strays = await emptyWorkerGroup({ pgid: worker.pid, cgroup }, nodeProcs(), nodeClock(), 2_000);
 * for (const s of strays) logger.warn(s, "process left by a worker stopped");
 * ```
 */
export async function emptyWorkerGroup(
  { pgid, cgroup }: WorkerRemains,
  procs: Procs,
  clock: Clock,
  killAfterMs: number,
  seen?: LiveRemains,
): Promise<Stray[]> {
  const containment = cgroup === undefined ? undefined : procs.containment;
  const found = new Map<number, Omit<Stray, "ended">>();
  const record = (left: readonly ProcInfo[], escaped: boolean) => {
    for (const proc of left) {
      if (!found.has(proc.pid))
        found.set(proc.pid, { pid: proc.pid, program: programName(proc), escaped });
    }
  };
  /** What is left: the group's live members, and the cgroup's outside the group. */
  interface Left {
    group: number[];
    escaped: number[];
  }
  /** What is left now (or, the first time, what `seen` saw); those new are recorded. */
  const look = ({ group, escaped } = liveRemains({ pgid, cgroup }, procs)): Left => {
    record(group, false);
    record(escaped, true);
    return { group: group.map((p) => p.pid), escaped: escaped.map((p) => p.pid) };
  };
  const none = (left: Left) => left.group.length === 0 && left.escaped.length === 0;
  const waitGone = async (): Promise<Left> => {
    const deadline = clock.now() + killAfterMs;
    for (let pause = FIRST_LOOK_MS; ; pause = Math.min(pause * 2, LOOK_AT_MOST_MS)) {
      const remaining = deadline - clock.now();
      await new Promise((resolve) =>
        clock.setTimeout(resolve, Math.max(0, Math.min(pause, remaining))),
      );
      const left = look();
      if (none(left) || remaining <= pause) return left;
    }
  };
  /** Signals what is left; true when any signal was delivered (so there is a death to wait for). */
  const send = (left: Left, signal: Signal): boolean => {
    const outcomes: SignalOutcome[] = [];
    if (left.group.length > 0 && pgid !== undefined) outcomes.push(procs.signalGroup(pgid, signal));
    if (left.escaped.length > 0) {
      const killed = signal === "SIGKILL" && cgroup !== undefined && containment?.kill(cgroup);
      if (killed) outcomes.push("ok");
      else for (const pid of left.escaped) outcomes.push(procs.signal(pid, signal));
    }
    return outcomes.includes("ok");
  };
  const ended = new Map<number, StrayEnd>();
  let left = look(seen);
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    if (none(left)) break;
    left = send(left, signal) ? await waitGone() : look();
    const running = new Set([...left.group, ...left.escaped]);
    for (const pid of found.keys()) {
      if (!ended.has(pid) && !running.has(pid)) ended.set(pid, signal);
    }
  }
  return [...found.values()].map((stray) => ({
    ...stray,
    ended: ended.get(stray.pid) ?? "still running",
  }));
}
