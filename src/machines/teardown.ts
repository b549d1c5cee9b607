import { enqueueActions, setup } from "xstate";
import { givenOverrides, type Overrides } from "../overrides.ts";
import type { ProcInfo, ProcState, Signal, SignalOutcome } from "../runtime/ports.ts";
import { carriesDeployment, envCarries } from "./carriesDeployment.ts";
import type { PlantedBug } from "./plantedBugs.ts";
import { programName } from "./programName.ts";

/** How long each step of a teardown may take, and how often liveness is probed meanwhile. */
export interface TeardownTimeouts {
  /** After TERM to the ranks, before KILL. */
  termGraceMs: number;
  /** After the first KILL. */
  killWaitMs: number;
  /** After the second KILL. */
  killAgainWaitMs: number;
  /** After the sweep's TERM to leftover ranks found through markers. */
  sweepTermWaitMs: number;
  /** After the sweep's KILL. */
  sweepKillWaitMs: number;
  /**
   * The longest time between two liveness probes while waiting; the first probe of a wait
   * comes sooner (see {@link pollDelayMs}).
   */
  pollMs: number;
}

/**
 * DESIGN §8: 10 s grace, 2 s after each KILL, 3 s and 2 s per swept pid, probes ≤ 50 ms apart.
 *
 * @example
 * ```ts
 * teardownDeadlineMs({ ...DEFAULT_TEARDOWN_TIMEOUTS, termGraceMs: 30_000 }); // 43000
 * ```
 */
export const DEFAULT_TEARDOWN_TIMEOUTS: TeardownTimeouts = {
  termGraceMs: 10_000,
  killWaitMs: 2_000,
  killAgainWaitMs: 2_000,
  sweepTermWaitMs: 3_000,
  sweepKillWaitMs: 2_000,
  pollMs: 50,
};

/**
 * How many times the sweep KILLs: once, and again for each final check that finds processes
 * of the deployment it never signalled, up to this. A leftover that forks now and then (a
 * daemon's `while :; do sleep 1; done`) can start a child between the sweep's look at the
 * table and its KILL: that child, started after the look, outlived the one KILL and left the
 * teardown unverified. A leftover that keeps forking faster than it is killed still is.
 */
export const MOST_SWEEP_KILLS = 3;

/**
 * The longest a teardown can wait: the sum of its deadlines, the sweep's KILL wait once for
 * each KILL it may send ({@link MOST_SWEEP_KILLS}). Probes, signals and reading the markers
 * come on top (no virtual time in the simulation; milliseconds on a real machine).
 *
 * @example
 * ```ts
 * teardownDeadlineMs(DEFAULT_TEARDOWN_TIMEOUTS); // 23000
 * ```
 */
export function teardownDeadlineMs(timeouts: TeardownTimeouts): number {
  return (
    timeouts.termGraceMs +
    timeouts.killWaitMs +
    timeouts.killAgainWaitMs +
    timeouts.sweepTermWaitMs +
    MOST_SWEEP_KILLS * timeouts.sweepKillWaitMs
  );
}

/**
 * When the `n`-th liveness probe of a wait (from 0) comes, after the previous one's answer:
 * `pollMs / 16` (rounded up, at least 1 ms), doubling each time up to `pollMs`. Processes
 * usually die within milliseconds of a signal, so the first probes are cheap early looks; a
 * wait that drags on is probed every `pollMs`. Each probe is scheduled only once the previous
 * one was answered, so probes never pile up.
 *
 * @example
 * ```ts
 * [0, 1, 2, 3, 4, 5].map((n) => pollDelayMs(50, n)); // [4, 8, 16, 32, 50, 50]
 * ```
 */
export function pollDelayMs(pollMs: number, n: number): number {
  return Math.min(pollMs, Math.max(1, Math.ceil(pollMs / 16)) * 2 ** Math.min(n, 30));
}

/** One process as a probe saw it: its process-table entry and its environment (if readable). */
export interface ProcView extends ProcInfo {
  env: Record<string, string> | undefined;
  /**
   * It is in the deployment's cgroup (see `Containment`): the kernel's word that it descends
   * from a rank, whatever its environment, arguments or process group now say.
   */
  contained?: boolean;
}

/**
 * A process other than the ranks (the known pids) that the teardown signalled, as it saw it
 * the first time: a rank's child in the rank's process group, or one the sweep found outside.
 */
export interface OtherProcess {
  pid: number;
  pgid: number;
  /**
   * Its program (`argv[0]`) when it was first signalled, without its arguments, which may hold
   * what a log must not (as a local worker's strays are named); of one whose arguments were
   * gone by then, the kernel's name for it and why (`python3, exiting`: see `programName`).
   */
  program: string;
  /** The `RANK` of its environment, when that environment carries the deployment. */
  rank?: number;
  /** Found by the sweep, outside the ranks' groups (it left its rank's, by `setsid` say). */
  swept: boolean;
}

/** A process of the deployment still alive at the final check. */
export interface Survivor {
  pid: number;
  state: ProcState;
}

/**
 * What the teardown asks its adapter to do. Each `probe` is answered by one `TABLE` event
 * with the same `seq`: every process whose pgid is in `groups` or whose pid is in `pids`,
 * and with `scan` every process of the table; each entry with its environment. Signals are
 * answered by `SIGNALLED`, `readCandidates` by `CANDIDATES`. `groupForbidden` reports a group
 * the caller must never signal again; `step` is a line for the report and the log.
 */
export type TeardownEffect =
  | { type: "probe"; seq: number; groups: number[]; pids: number[]; scan: boolean }
  | { type: "signalGroup"; pgid: number; signal: Signal }
  | { type: "signal"; pid: number; signal: Signal }
  | { type: "readCandidates" }
  | { type: "groupForbidden"; pgid: number }
  | { type: "step"; text: string };

/** The adapter's answers, and the machine's own timers (`POLL`, `DEADLINE`). */
export type TeardownEvent =
  | { type: "TABLE"; seq: number; procs: ProcView[] }
  | {
      type: "SIGNALLED";
      target: "group" | "pid";
      id: number;
      signal: Signal;
      outcome: SignalOutcome;
    }
  /**
   * Pids found in the deployment's markers; `error` when they could not be read; `heldBy`
   * when the deployment's name is now another launcher's (it took over a lease that went
   * stale while this one lived): who holds it. Its ranks carry the same name and state dir,
   * so there is no sweep, and the final check looks at the ranks' groups and pids alone.
   */
  | { type: "CANDIDATES"; pids: number[]; error?: string; heldBy?: string }
  | { type: "POLL" }
  | { type: "DEADLINE" }
  /**
   * Wait no more for TERM (a second Ctrl-C to the launcher): the ranks' grace and the sweep's
   * TERM wait end at once, and KILL follows. The KILLs, their waits and the final check stay:
   * the teardown is verified as ever.
   */
  | { type: "HURRY" };

/** What `teardownMachine` is started with: the deployment and the processes to stop. */
export interface TeardownInput {
  deployment: string;
  /**
   * The deployment's root state dir, absolute and resolved (its ranks' `BATON_STATE_DIR`): a
   * process of the same name launched from another state dir is not this deployment's.
   */
  stateDir: string;
  /** Process groups of the ranks. */
  groups: readonly number[];
  /** Rank pids the launcher knows. */
  pids: readonly number[];
  /** Groups never to signal (they answered EPERM in an earlier attempt). */
  forbiddenGroups?: readonly number[];
  /** The caller's own pid: never signalled, never counted as a rank. */
  selfPid: number;
  /**
   * The pid its ranks carry in `BATON_LAUNCHER_PID`, for a launcher's own teardown on its own
   * machine: a process that names another launcher there is that launcher's (one that took
   * the name over), never this teardown's; and once the name is another launcher's
   * (`CANDIDATES`' `heldBy`), the sweep still takes the processes that name this one.
   */
  launcherPid?: number | undefined;
  /** Timeouts to replace the defaults; one given as `undefined` keeps its default. */
  timeouts?: Overrides<TeardownTimeouts>;
  plantedBugs?: readonly PlantedBug[];
}

/** What `teardownMachine` ends with: whether the teardown is verified, and who survived it. */
export interface TeardownOutput {
  verified: boolean;
  /** Processes of the deployment alive at the final check (empty when verified). */
  survivors: Survivor[];
  /** Pids the sweep signalled. */
  swept: number[];
  /** The known pids (the ranks) alive when a rank step signalled them: the ranks it stopped. */
  stopped: number[];
  /** The processes other than the ranks that it signalled, in the order it first did. */
  others: OtherProcess[];
  /** Every group not to signal again, including those that answered EPERM this time. */
  forbiddenGroups: number[];
}

export interface TeardownContext {
  deployment: string;
  stateDir: string;
  selfPid: number;
  /** See {@link TeardownInput.launcherPid}. */
  launcherPid: number | undefined;
  groups: number[];
  pids: number[];
  forbidden: number[];
  timeouts: TeardownTimeouts;
  trustSingleKill: boolean;
  /** Pids named by the deployment's markers. */
  candidates: number[];
  /**
   * Who holds the deployment's name now, when another launcher took it over (`CANDIDATES`'s
   * `heldBy`): no sweep then, and `all` probes the ranks alone; with a `launcherPid`, the
   * sweep goes on over what names this launcher alone.
   */
  heldBy: string | undefined;
  /** Pids the sweep signalled. */
  swept: number[];
  /**
   * The known pids alive when a rank step signalled them: ranks the teardown stopped, apart
   * from ranks that had exited on their own (a zombie or a reaped pid is never signalled).
   */
  stopped: number[];
  /** The processes other than the known pids that it signalled (see {@link OtherProcess}). */
  others: OtherProcess[];
  /** Probes sent so far; each probe's `seq` is its number. */
  probes: number;
  /** What the awaited probe covers. */
  probing: Scope;
  /** Liveness probes scheduled in the current wait (they come at {@link pollDelayMs}). */
  polls: number;
  /**
   * The `seq` of the probe whose answer is awaited, 0 once it has been used: any other TABLE
   * (late, or a second copy) is stale and ignored.
   */
  awaiting: number;
  verified: boolean;
  survivors: Survivor[];
  /** `HURRY` came: the TERM waits end at once. */
  hurried: boolean;
  /** The sweep's KILLs so far (see {@link MOST_SWEEP_KILLS}). */
  sweepKills: number;
}

type Phase = "awaitTerm" | "awaitKill" | "awaitKillAgain" | "sweepAwaitTerm" | "sweepAwaitKill";

const WAIT: Record<Phase, keyof TeardownTimeouts> = {
  awaitTerm: "termGraceMs",
  awaitKill: "killWaitMs",
  awaitKillAgain: "killAgainWaitMs",
  sweepAwaitTerm: "sweepTermWaitMs",
  sweepAwaitKill: "sweepKillWaitMs",
};

/**
 * What a probe covers: the ranks (groups and known pids), the pids swept, or everything; or
 * `known`, only the known pids — a quick look while waiting, which can show that a rank is
 * still alive (so the wait goes on) but never that all are gone (that takes the groups).
 */
type Scope = "ranks" | "known" | "swept" | "all";

const unique = (values: Iterable<number>): number[] => [...new Set(values)].sort((a, b) => a - b);

const alive = (proc: ProcView): boolean => proc.state !== "zombie" && proc.state !== "dead";

/**
 * What a probe tells about one process. `ours`: alive and of the deployment — it is in the
 * deployment's cgroup, or its environment says so (`BATON_DEPLOYMENT` and `BATON_STATE_DIR`
 * both, wherever it is), or its environment is readable (a process of our user), teardown
 * knows it (a launched pid, a marker's pid, a member of a rank group) and it carries the
 * deployment (`carriesDeployment`: its argv names it, and its environment is not that of the
 * same name in another state dir). Whatever its environment and arguments say (a rank that
 * exec'd its program with `env -i`, a helper it started so), a known pid that is the caller's
 * own child (`ppid` is `selfPid`: a rank the launcher started and has not reaped, whose pid
 * the kernel keeps for it) is `ours`, and so is a member of a rank's group while that group's
 * leader is alive and `ours` (see {@link vouchedByLeader}). `unknown`: alive, but its
 * environment cannot be read (another user's, or a non-dumpable descendant such as ssh), so
 * nothing proves either way. `foreign`: alive, readable and not of the deployment, or the
 * caller itself. `dead`: gone, zombie or not alive. `table` is the probe's answer `proc` came
 * in, where its group's leader is looked for.
 */
type Evidence = "ours" | "unknown" | "foreign" | "dead";

function evidence(context: TeardownContext, proc: ProcView, table: readonly ProcView[]): Evidence {
  if (!alive(proc)) return "dead";
  if (proc.pid === context.selfPid) return "foreign";
  // A process this teardown signalled that shows no arguments is exiting: the kernel has
  // freed its memory, so /proc shows neither arguments nor environment, and it is not yet
  // a zombie. It counts as alive until it is one (a kernel thread, ppid 2, shows none too).
  if (proc.argv.length === 0 && proc.ppid !== KTHREADD && signalled(context, proc.pid)) {
    return "ours";
  }
  if (context.pids.includes(proc.pid) && proc.ppid === context.selfPid) return "ours";
  const { launcherPid } = context;
  const launcher = proc.env?.BATON_LAUNCHER_PID;
  if (launcherPid !== undefined && launcher !== undefined && launcher !== String(launcherPid)) {
    return "foreign";
  }
  const rank = context.pids.includes(proc.pid) || context.groups.includes(proc.pgid);
  if (context.heldBy !== undefined && !rank) {
    // The name is another launcher's: its processes carry it and share its cgroup too, so
    // outside this launcher's ranks only a process that names this launcher is its own.
    const named = launcherPid !== undefined && launcher === String(launcherPid);
    return named && envCarries(proc.env, context) ? "ours" : "foreign";
  }
  if (proc.contained === true || envCarries(proc.env, context)) return "ours";
  if (vouchedByLeader(context, proc, table)) return "ours";
  if (proc.env === undefined) return "unknown";
  const known = rank || context.candidates.includes(proc.pid);
  return known && carriesDeployment(proc.argv, proc.env, context) ? "ours" : "foreign";
}

/**
 * Whether `proc` is in a rank's group whose leader (the process whose pid is the group's id)
 * is alive in `table` and `ours`, or was in that group when this teardown signalled it so.
 * A rank leads its own session and group (it is started with setsid), a group lies within
 * one session, and a session holds only its leader's descendants; no process can take the
 * group's id while its leader lives. So such a member is a process the rank started, though
 * it emptied its environment (`env -i helper &`) and no argument names the deployment. Once
 * signalled with that group it stays the deployment's: a helper that ignores TERM after its
 * rank died of it still gets the group's KILL, and is a survivor if it outlives that.
 */
function vouchedByLeader(
  context: TeardownContext,
  proc: ProcView,
  table: readonly ProcView[],
): boolean {
  if (proc.pid === proc.pgid || !context.groups.includes(proc.pgid)) return false;
  if (context.others.some((other) => other.pid === proc.pid && other.pgid === proc.pgid)) {
    return true;
  }
  const leader = table.find((other) => other.pid === proc.pgid);
  return leader !== undefined && evidence(context, leader, table) === "ours";
}

/** The parent of every kernel thread (`kthreadd`). */
const KTHREADD = 2;

/** Whether this teardown signalled `pid`: a rank it launched, a group member, a swept pid. */
const signalled = (context: TeardownContext, pid: number): boolean =>
  context.pids.includes(pid) ||
  context.swept.includes(pid) ||
  context.others.some((other) => other.pid === pid);

/** Whether a live process belongs to the deployment (positive evidence only). */
const ours = (context: TeardownContext, proc: ProcView, table: readonly ProcView[]): boolean =>
  evidence(context, proc, table) === "ours";

/**
 * `others` with the processes of `signalled` that are neither a known pid nor in it yet, each
 * as the table shows it now (`swept`: found by the sweep).
 */
function withOthers(
  context: TeardownContext,
  signalled: readonly ProcView[],
  swept: boolean,
): OtherProcess[] {
  const seen = new Set(context.others.map((other) => other.pid));
  const added: OtherProcess[] = [];
  for (const proc of signalled) {
    if (context.pids.includes(proc.pid) || seen.has(proc.pid)) continue;
    seen.add(proc.pid);
    const rank = envCarries(proc.env, context) ? proc.env?.RANK : undefined;
    added.push({
      pid: proc.pid,
      pgid: proc.pgid,
      program: programName(proc),
      ...(rank !== undefined && /^\d+$/.test(rank) && { rank: Number(rank) }),
      swept,
    });
  }
  return added.length === 0 ? context.others : [...context.others, ...added];
}

function probeOf(
  context: TeardownContext,
  scope: Scope,
): Extract<TeardownEffect, { type: "probe" }> {
  const seq = context.probes + 1;
  // The name is another launcher's: its ranks carry it too, so no scan of the table unless
  // this launcher's own processes can be told from them (`launcherPid`).
  if (scope === "all" && context.heldBy !== undefined && context.launcherPid === undefined) {
    return probeOf(context, "ranks");
  }
  if (scope === "swept" || scope === "known")
    return {
      type: "probe",
      seq,
      groups: [],
      pids: scope === "swept" ? context.swept : context.pids,
      scan: false,
    };
  return {
    type: "probe",
    seq,
    groups: context.groups,
    pids: scope === "all" ? unique([...context.pids, ...context.candidates]) : context.pids,
    scan: scope === "all",
  };
}

const list = (ids: readonly number[]): string => ids.join(", ");

/**
 * The signals for one rank step: a group is signalled whole when it holds a live process of
 * the deployment and none proven foreign (unreadable members, such as a rank's `ssh` child,
 * go with it) and it never answered EPERM; otherwise only its members of the deployment are
 * signalled, one by one; a group with none is left alone (its id may have been reused).
 * Known pids outside those groups (a rank that left its group) are signalled by pid.
 */
function rankSignals(context: TeardownContext, table: ProcView[], signal: Signal) {
  const effects: TeardownEffect[] = [];
  const covered = new Set<number>();
  const wholeGroups: number[] = [];
  const single: number[] = [];
  const signalled = new Set<number>();
  const members: ProcView[] = [];
  for (const pgid of context.groups) {
    const group = table.filter((proc) => proc.pgid === pgid && alive(proc));
    if (group.length === 0) continue;
    const mine = group.filter((proc) => ours(context, proc, table));
    const whole =
      mine.length > 0 &&
      !context.forbidden.includes(pgid) &&
      !group.some((proc) => evidence(context, proc, table) === "foreign");
    if (whole) {
      effects.push({ type: "signalGroup", pgid, signal });
      wholeGroups.push(pgid);
      for (const proc of group) signalled.add(proc.pid);
      members.push(...group);
    } else {
      for (const proc of mine) effects.push({ type: "signal", pid: proc.pid, signal });
      single.push(...mine.map((proc) => proc.pid));
      members.push(...mine);
    }
    for (const proc of group) covered.add(proc.pid);
  }
  for (const proc of table) {
    if (covered.has(proc.pid) || !context.pids.includes(proc.pid) || !ours(context, proc, table))
      continue;
    effects.push({ type: "signal", pid: proc.pid, signal });
    single.push(proc.pid);
  }
  for (const pid of single) signalled.add(pid);
  const name = signal === "SIGKILL" ? "KILL" : "TERM";
  const parts = [
    ...(wholeGroups.length > 0 ? [`groups ${list(wholeGroups)}`] : []),
    ...(single.length > 0 ? [`pids ${list(single)}`] : []),
  ];
  return {
    effects,
    text: `${name} to ${parts.join(" and ")}`,
    stopped: context.pids.filter((pid) => signalled.has(pid)),
    members,
  };
}

/** Live processes of the deployment in a table, in pid order. */
const survivorsIn = (context: TeardownContext, table: ProcView[]): Survivor[] =>
  table
    .filter((proc) => ours(context, proc, table))
    .sort((a, b) => a.pid - b.pid)
    .map((proc) => ({ pid: proc.pid, state: proc.state }));

/** Live processes of the deployment in a table that the sweep never signalled. */
const unswept = (context: TeardownContext, table: ProcView[]): number[] =>
  survivorsIn(context, table)
    .map((survivor) => survivor.pid)
    .filter((pid) => !context.swept.includes(pid));

const describe = (survivors: Survivor[]): string =>
  survivors.map((survivor) => `${survivor.pid} (${survivor.state})`).join(", ");

type TableEvent = Extract<TeardownEvent, { type: "TABLE" }>;

/** A state that probes the ranks and, if any is alive, signals them and moves to `next`. */
function rankStep(signal: Signal, next: Phase) {
  return {
    entry: { type: "probe" as const, params: { scope: "ranks" as Scope } },
    on: {
      TABLE: [
        { guard: "staleTable" as const },
        {
          guard: "nothingAlive" as const,
          target: "#teardown.sweep",
          actions: { type: "step" as const, params: { text: "no rank left to signal" } },
        },
        { target: next, actions: { type: "signalRanks" as const, params: { signal } } },
      ],
    },
  };
}

/**
 * A sweep state: probes the whole table (with the markers' pids), notes the candidates that
 * no longer carry the deployment, and signals by pid every live process of the deployment.
 * When it finds none, that scan of the whole table, after the last signal, is the final
 * check: the teardown is verified without reading the table a second time.
 */
function sweepStep(signal: Signal, next: Phase) {
  return {
    entry: { type: "probe" as const, params: { scope: "all" as Scope } },
    on: {
      TABLE: [
        { guard: "staleTable" as const },
        {
          guard: "nothingAlive" as const,
          target: "#teardown.verified",
          actions: ["noteRefused" as const, "judge" as const],
        },
        {
          target: next,
          actions: ["noteRefused" as const, { type: "signalSweep" as const, params: { signal } }],
        },
      ],
    },
  };
}

/**
 * A wait of `phase`'s timeout, probing at {@link pollDelayMs}: it ends early at `gone` when nothing
 * it watches is alive, and at `next` when the time is up. A wait on the ranks first looks at
 * the known pids alone (cheap: no scan of the table for the groups' members); only when none
 * of them is alive and of the deployment does it probe the groups too.
 */
function awaitStep(phase: Phase, scope: Scope, gone: string, next: string) {
  return {
    entry: { type: "startWait" as const, params: { phase } },
    exit: "stopWait" as const,
    on: {
      POLL: {
        actions: {
          type: "probe" as const,
          params: { scope: scope === "ranks" ? ("known" as Scope) : scope },
        },
      },
      TABLE: [
        { guard: "staleTable" as const },
        ...(scope === "ranks"
          ? [
              { guard: "quickLookAlive" as const, actions: "schedulePoll" as const },
              {
                guard: "quickLook" as const,
                actions: { type: "probe" as const, params: { scope: "ranks" as Scope } },
              },
            ]
          : []),
        {
          guard: "nothingAlive" as const,
          target: gone,
          actions: { type: "step" as const, params: { text: `${phase}: all gone` } },
        },
        { actions: "schedulePoll" as const },
      ],
      DEADLINE: {
        target: next,
        actions: { type: "step" as const, params: { text: `${phase}: time is up` } },
      },
    },
  };
}

/** A wait for TERM to work, which `HURRY` ends at once (on entry too, when it came before). */
function termWait<State extends ReturnType<typeof awaitStep>>(state: State, kill: string) {
  return {
    ...state,
    always: {
      guard: "hurried" as const,
      target: kill,
      actions: { type: "step" as const, params: { text: "TERM wait cut short" } },
    },
  };
}

/**
 * Verified teardown of one rank group (DESIGN §4, §8):
 * `term → awaitTerm(grace) → kill → awaitKill → killAgain → awaitKillAgain → sweep → verify`,
 * ending in the final state `verified` or `unverified`. The machine never touches a process:
 * it emits `effects` (probe, signal, signalGroup, readCandidates) and learns the answers
 * from `TABLE`, `SIGNALLED` and `CANDIDATES` events, so it runs the same on real processes
 * and in the simulation.
 *
 * - Every wait probes liveness, first a few milliseconds in and backing off to every
 *   `pollMs` ({@link pollDelayMs}), and ends early when nothing of the deployment it watches
 *   is alive; a zombie counts as dead, a process in `disk-sleep` (D) as alive.
 * - A group is signalled whole only when it holds a live process of the deployment and none
 *   proven foreign (a readable process that does not carry it); otherwise its members that
 *   carry it are signalled by pid. A group answering EPERM was reused by another user: it
 *   is recorded, reported with a `groupForbidden` effect and never signalled again.
 * - The sweep reads the markers' pids, adds every process whose environment carries the
 *   deployment or that is in its cgroup, and signals each (TERM, wait, KILL, wait) only after a fresh probe shows it
 *   still carries the deployment.
 * - With a `launcherPid` (a launcher's own teardown), a process whose `BATON_LAUNCHER_PID`
 *   names another launcher is never the deployment's: another launcher of the name (one that
 *   took it over) started it.
 * - When the answer to `readCandidates` says the name is now another launcher's (`heldBy`:
 *   it took over a lease that went stale while this launcher lived), its processes carry the
 *   same name and state dir (and share its cgroup): no markers are read, and outside the
 *   ranks' groups and pids only a process that carries the deployment and names this
 *   launcher in `BATON_LAUNCHER_PID` is swept and checked. Without a `launcherPid` there is
 *   no sweep, and the final check looks at the ranks' groups and known pids alone.
 * - `HURRY` (a second Ctrl-C to the launcher) ends the TERM waits, of the ranks and of the
 *   sweep, at once, or as soon as one starts; the KILLs, their waits and the final check stay.
 * - A process it signalled that shows no arguments is exiting (its memory freed, not yet a
 *   zombie): alive until it is a zombie or gone.
 * - The final check reads the process table (the sweep's own scan when it had nothing left
 *   to signal): a process of the deployment the sweep never signalled (forked by a leftover
 *   after the sweep's look) sends it back to the sweep's KILL, at most
 *   {@link MOST_SWEEP_KILLS} KILLs in all; anything of the deployment alive then →
 *   `unverified` with the survivors and their states in the output.
 *
 * Timers are two delayed events with ids, `poll` and `deadline`, cancelled on leaving a wait.
 *
 * @example
 * ```ts
 * const teardown = createActor(teardownMachine, {
 *   clock,
 *   input: { deployment: "dep-abc", stateDir: "/srv/app/.baton/run", groups: [4711], pids: [4711], selfPid: process.pid },
 * });
 * teardown.on("effects", ({ effects }) => effects.forEach(perform));
 * teardown.start();
 * ```
 */
export const teardownMachine = setup({
  types: {
    context: {} as TeardownContext,
    events: {} as TeardownEvent,
    input: {} as TeardownInput,
    emitted: {} as { type: "effects"; effects: TeardownEffect[] },
    output: {} as TeardownOutput,
  },
  guards: {
    staleTable: ({ context, event }) =>
      context.awaiting === 0 || (event as TableEvent).seq !== context.awaiting,
    nothingAlive: ({ context, event }) =>
      !(event as TableEvent).procs.some((proc, _, table) => ours(context, proc, table)),
    quickLook: ({ context }) => context.probing === "known",
    quickLookAlive: ({ context, event }) =>
      context.probing === "known" &&
      (event as TableEvent).procs.some((proc, _, table) => ours(context, proc, table)),
    trustSingleKill: ({ context }) => context.trustSingleKill,
    hurried: ({ context }) => context.hurried,
    heldByAnother: ({ context, event }) =>
      event.type === "CANDIDATES" &&
      event.heldBy !== undefined &&
      context.launcherPid === undefined,
    startedSinceSweep: ({ context, event }) =>
      context.sweepKills < MOST_SWEEP_KILLS &&
      unswept(context, (event as TableEvent).procs).length > 0,
  },
  actions: {
    probe: enqueueActions(({ context, enqueue }, params: { scope: Scope }) => {
      // Without groups, the known pids are all the ranks: the quick look is the full one.
      const scope =
        params.scope === "known" && context.groups.length === 0 ? "ranks" : params.scope;
      const effect = probeOf(context, scope);
      enqueue.assign({ probes: effect.seq, awaiting: effect.seq, probing: scope });
      enqueue.emit({ type: "effects", effects: [effect] });
    }),
    step: enqueueActions(({ enqueue }, params: { text: string }) => {
      enqueue.emit({ type: "effects", effects: [{ type: "step", text: params.text }] });
    }),
    signalRanks: enqueueActions(({ context, event, enqueue }, params: { signal: Signal }) => {
      const { effects, text, stopped, members } = rankSignals(
        context,
        (event as TableEvent).procs,
        params.signal,
      );
      enqueue.assign({
        stopped: unique([...context.stopped, ...stopped]),
        others: withOthers(context, members, false),
      });
      enqueue.emit({ type: "effects", effects: [{ type: "step", text }, ...effects] });
    }),
    startWait: enqueueActions(({ context, enqueue }, params: { phase: Phase }) => {
      enqueue.raise(
        { type: "DEADLINE" },
        { delay: context.timeouts[WAIT[params.phase]], id: "deadline" },
      );
      enqueue.raise(
        { type: "POLL" },
        { delay: pollDelayMs(context.timeouts.pollMs, 0), id: "poll" },
      );
      enqueue.assign({ awaiting: 0, polls: 1 });
    }),
    schedulePoll: enqueueActions(({ context, enqueue }) => {
      enqueue.raise(
        { type: "POLL" },
        { delay: pollDelayMs(context.timeouts.pollMs, context.polls), id: "poll" },
      );
      enqueue.assign({ awaiting: 0, polls: context.polls + 1 });
    }),
    hurry: enqueueActions(({ context, enqueue }) => {
      if (context.hurried) return;
      enqueue.assign({ hurried: true });
      enqueue.emit({
        type: "effects",
        effects: [{ type: "step", text: "hurried: no more waiting for TERM" }],
      });
    }),
    stopWait: enqueueActions(({ enqueue }) => {
      enqueue.cancel("deadline");
      enqueue.cancel("poll");
    }),
    recordSignal: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "SIGNALLED" || event.outcome !== "EPERM") return;
      if (event.target === "pid") {
        enqueue.emit({
          type: "effects",
          effects: [{ type: "step", text: `pid ${event.id} answered EPERM` }],
        });
        return;
      }
      if (context.forbidden.includes(event.id)) return;
      enqueue.assign({ forbidden: unique([...context.forbidden, event.id]) });
      enqueue.emit({
        type: "effects",
        effects: [
          { type: "groupForbidden", pgid: event.id },
          {
            type: "step",
            text: `group ${event.id} answered EPERM: it now belongs to another user, never signalled again`,
          },
        ],
      });
    }),
    readCandidates: enqueueActions(({ enqueue }) => {
      enqueue.emit({ type: "effects", effects: [{ type: "readCandidates" }] });
    }),
    takeCandidates: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "CANDIDATES") return;
      if (event.heldBy !== undefined) {
        enqueue.assign({ heldBy: event.heldBy });
        const text =
          context.launcherPid === undefined
            ? `sweep: skipped: ${context.deployment} is now another launcher's (${event.heldBy}), whose processes carry it too; verifying this launcher's ranks alone`
            : `sweep: ${context.deployment} is now another launcher's (${event.heldBy}), whose processes carry it too: no markers, and only processes with BATON_LAUNCHER_PID=${context.launcherPid} (this launcher's) are swept`;
        enqueue.emit({ type: "effects", effects: [{ type: "step", text }] });
        return;
      }
      const candidates = unique(event.pids.filter((pid) => pid !== context.selfPid));
      enqueue.assign({ candidates });
      const text =
        event.error === undefined
          ? `sweep: markers name pids ${list(candidates) || "none"}`
          : `sweep: markers unreadable (${event.error}); sweeping what the process table shows`;
      enqueue.emit({ type: "effects", effects: [{ type: "step", text }] });
    }),
    signalSweep: enqueueActions(({ context, event, enqueue }, params: { signal: Signal }) => {
      const found = (event as TableEvent).procs.filter((proc, _, table) =>
        ours(context, proc, table),
      );
      const targets = found.map((proc) => proc.pid);
      const name = params.signal === "SIGKILL" ? "KILL" : "TERM";
      enqueue.assign({
        swept: unique([...context.swept, ...targets]),
        others: withOthers(context, found, true),
        sweepKills: context.sweepKills + (params.signal === "SIGKILL" ? 1 : 0),
      });
      enqueue.emit({
        type: "effects",
        effects: [
          { type: "step", text: `sweep: ${name} to pids ${list(targets)}` },
          ...targets.map((pid) => ({ type: "signal" as const, pid, signal: params.signal })),
        ],
      });
    }),
    noteRefused: enqueueActions(({ context, event, enqueue }) => {
      const table = (event as TableEvent).procs;
      const refused = table
        .filter((proc) => context.candidates.includes(proc.pid) && alive(proc))
        .filter((proc) => !ours(context, proc, table))
        .map((proc) => proc.pid);
      if (refused.length === 0) return;
      const text = `sweep: pids ${list(refused)} no longer carry ${context.deployment}: not signalled`;
      enqueue.emit({ type: "effects", effects: [{ type: "step", text }] });
    }),
    judge: enqueueActions(({ context, event, enqueue }) => {
      const survivors = survivorsIn(context, (event as TableEvent).procs);
      enqueue.assign({ verified: survivors.length === 0, survivors });
      const text =
        survivors.length === 0
          ? "verify: nothing of the deployment is alive"
          : `verify: still alive: ${describe(survivors)}`;
      enqueue.emit({ type: "effects", effects: [{ type: "step", text }] });
    }),
    noteStartedSinceSweep: enqueueActions(({ context, event, enqueue }) => {
      const late = unswept(context, (event as TableEvent).procs);
      const text = `verify: ${list(late)} started after the sweep's KILL: KILL ${late.length === 1 ? "it" : "them"} too`;
      enqueue.emit({ type: "effects", effects: [{ type: "step", text }] });
    }),
    trust: enqueueActions(({ enqueue }) => {
      enqueue.assign({ verified: true });
      enqueue.emit({
        type: "effects",
        effects: [{ type: "step", text: "planted bug: trusting the first KILL" }],
      });
    }),
  },
}).createMachine({
  id: "teardown",
  context: ({ input }) => ({
    deployment: input.deployment,
    stateDir: input.stateDir,
    selfPid: input.selfPid,
    launcherPid: input.launcherPid,
    groups: unique(input.groups),
    pids: unique(input.pids),
    forbidden: unique(input.forbiddenGroups ?? []),
    timeouts: { ...DEFAULT_TEARDOWN_TIMEOUTS, ...givenOverrides(input.timeouts ?? {}) },
    trustSingleKill: input.plantedBugs?.includes("teardown-trusts-single-kill") ?? false,
    candidates: [],
    heldBy: undefined,
    swept: [],
    stopped: [],
    others: [],
    probes: 0,
    probing: "ranks",
    polls: 0,
    awaiting: 0,
    verified: false,
    survivors: [],
    hurried: false,
    sweepKills: 0,
  }),
  on: { SIGNALLED: { actions: "recordSignal" }, HURRY: { actions: "hurry" } },
  initial: "term",
  states: {
    term: rankStep("SIGTERM", "awaitTerm"),
    awaitTerm: termWait(awaitStep("awaitTerm", "ranks", "#teardown.sweep", "kill"), "kill"),
    kill: rankStep("SIGKILL", "awaitKill"),
    awaitKill: {
      ...awaitStep("awaitKill", "ranks", "#teardown.sweep", "killAgain"),
      always: { guard: "trustSingleKill", target: "verified", actions: "trust" },
    },
    killAgain: rankStep("SIGKILL", "awaitKillAgain"),
    awaitKillAgain: awaitStep("awaitKillAgain", "ranks", "#teardown.sweep", "sweep"),
    sweep: {
      initial: "reading",
      states: {
        reading: {
          entry: "readCandidates",
          on: {
            CANDIDATES: [
              { guard: "heldByAnother", target: "#teardown.verify", actions: "takeCandidates" },
              { target: "term", actions: "takeCandidates" },
            ],
          },
        },
        term: sweepStep("SIGTERM", "sweepAwaitTerm"),
        sweepAwaitTerm: termWait(
          awaitStep("sweepAwaitTerm", "swept", "#teardown.verify", "kill"),
          "kill",
        ),
        kill: sweepStep("SIGKILL", "sweepAwaitKill"),
        sweepAwaitKill: awaitStep(
          "sweepAwaitKill",
          "swept",
          "#teardown.verify",
          "#teardown.verify",
        ),
      },
    },
    verify: {
      entry: { type: "probe", params: { scope: "all" } },
      on: {
        TABLE: [
          { guard: "staleTable" },
          { guard: "nothingAlive", target: "verified", actions: "judge" },
          {
            guard: "startedSinceSweep",
            target: "#teardown.sweep.kill",
            actions: "noteStartedSinceSweep",
          },
          { target: "unverified", actions: "judge" },
        ],
      },
    },
    verified: { type: "final" },
    unverified: { type: "final" },
  },
  output: ({ context }) => ({
    verified: context.verified,
    survivors: context.survivors,
    swept: context.swept,
    stopped: context.stopped,
    others: context.others,
    forbiddenGroups: context.forbidden,
  }),
});
