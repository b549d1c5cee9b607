import type { AnyStateMachine, InspectionEvent, StateValue } from "xstate";
import { argumentError } from "../argumentError.ts";
import { groupMachine } from "../machines/group.ts";
import { rankMachine } from "../machines/rank.ts";
import { teardownMachine } from "../machines/teardown.ts";
import { chartLayout } from "./chartLayout.ts";
import type { DashboardEvent } from "./dashboardModel.ts";
import { stateChart } from "./stateChart.ts";

/** The `format` of a rank group's progress report. */
export const GROUP_PROGRESS_FORMAT = "baton.groupProgress/1";

/** Ranks listed in one report at most; a larger group reports its first ones. */
export const MAX_REPORTED_RANKS = 256;

/** A report longer than this is not read (256 ranks fit in about 16 KB). */
const MAX_REPORT_CHARS = 64 * 1024;

/** One rank as its launcher sees it: its machine's state, its pid, how it ended. */
export interface RankProgress {
  rank: number;
  /** The rank machine's state: spawning, loading, ready, stopping, exited, failed, lost. */
  phase: string;
  pid?: number | undefined;
  /** Its exit code, once it exited by itself. */
  code?: number | undefined;
  /** The signal that ended it, if one did. */
  signal?: string | undefined;
}

/**
 * What a rank job reports about its group as the job's progress message (one JSON object,
 * like baton's state files): the deployment, the world size, the group machine's state and
 * each rank's. Names, states and numbers only: no argv, environment or log text.
 */
export interface GroupProgress {
  format: typeof GROUP_PROGRESS_FORMAT;
  deployment: string;
  worldSize: number;
  /** The group machine's state: reaping, launching, barrier, running, stopping, stopped… */
  state: string;
  /**
   * The state of its ranks' teardown on this machine (the teardown machine's, nested states
   * dotted: `sweep.reading`), once the group began to stop; the last attempt's.
   */
  teardown?: string | undefined;
  ranks: RankProgress[];
}

const DEPLOYMENT = /^[A-Za-z0-9_.-]{1,64}$/;
const STATE = /^[A-Za-z]{1,32}$/;
const STATE_PATH = /^[A-Za-z]{1,32}(\.[A-Za-z]{1,32}){0,3}$/;
const SIGNAL = /^SIG[A-Z0-9]{1,16}$/;

/** The group's events that a rank's machine emitted, whose new state XState shows after the group's. */
const RANK_EVENTS: ReadonlySet<string> = new Set(["RANK_READY", "RANK_EXITED", "RANK_LOST"]);

/**
 * Follows the inspection events of one rank group (`launchGroup`'s `inspect` option: the
 * group's actor, every rank's and its teardown's) and calls `report` with the group's
 * progress each time its view changes (a state, a pid, an exit, a teardown's step); a
 * marker's heartbeat alone is not a change. Nothing is reported before the group's own
 * actor is seen. A `report` that is no function is a `ConfigError` at the call, not a
 * TypeError at the group's first change, from inside its launch.
 *
 * @example
 * ```ts
 * const group = launchGroup({ argv: ["python3", "train.py"], worldSize: 2,
 *   inspect: watchGroup((p) => console.log(p.state, p.ranks.map((rank) => rank.phase))) }); // running [ "ready", "ready" ]
 * ```
 */
export function watchGroup(
  report: (progress: GroupProgress) => void,
): (event: InspectionEvent) => void {
  if (typeof report !== "function") {
    throw argumentError("watchGroup", "report", "a function, (progress) => …", report);
  }
  let group: { deployment: string; worldSize: number; state: string } | undefined;
  let teardown: string | undefined;
  const ranks = new Map<number, RankProgress>();
  let last = "";
  return (inspection) => {
    if (inspection.type !== "@xstate.snapshot") return;
    const machine = (inspection.actorRef as { logic?: { id?: unknown } }).logic?.id;
    const snapshot = inspection.snapshot as unknown as {
      value: StateValue;
      context: Record<string, unknown>;
    };
    const context = snapshot.context ?? {};
    const state = topState(snapshot.value);
    if (machine === "group") {
      group = {
        deployment: String(context.deployment),
        worldSize: Number(context.worldSize),
        state,
      };
      // XState hands a rank's emitted event (its RANK_READY, RANK_EXITED, RANK_LOST) to the
      // group before it shows the rank's own new state: the group's change is reported with
      // that rank's, which comes next, or the group would read `running` with a rank `loading`.
      if (RANK_EVENTS.has(inspection.event.type)) return;
    } else if (machine === "rank" && typeof context.rank === "number") {
      ranks.set(context.rank, rankOf(context.rank, state, context));
    } else if (machine === "teardown") {
      teardown = statePath(snapshot.value);
    } else return;
    if (group === undefined) return;
    const progress: GroupProgress = {
      format: GROUP_PROGRESS_FORMAT,
      ...group,
      ...(teardown !== undefined && { teardown }),
      ranks: [...ranks.values()].sort((a, b) => a.rank - b.rank).slice(0, MAX_REPORTED_RANKS),
    };
    const text = JSON.stringify(progress);
    if (text === last) return;
    last = text;
    report(progress);
  };
}

/**
 * The report as a progress message (`ctx.progress({ message })`).
 *
 * @example
 * ```ts
 * ctx.progress({ message: groupProgressMessage(progress) });
 * ```
 */
export function groupProgressMessage(progress: GroupProgress): string {
  return JSON.stringify(progress);
}

/**
 * Reads a job's progress message as a group report: undefined when it is not one (any other
 * job's message) or not well formed (every field is checked, so what reaches the page is
 * names, states and numbers).
 *
 * @example
 * ```ts
 * readGroupProgress(frame.message)?.ranks; // [{ rank: 0, phase: "ready", pid: 4242 }, …]
 * ```
 */
export function readGroupProgress(message: string | undefined): GroupProgress | undefined {
  if (message === undefined || message.length > MAX_REPORT_CHARS || !message.startsWith("{")) {
    return undefined;
  }
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(message) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (
    o?.format !== GROUP_PROGRESS_FORMAT ||
    typeof o.deployment !== "string" ||
    !DEPLOYMENT.test(o.deployment) ||
    !isCount(o.worldSize) ||
    typeof o.state !== "string" ||
    !STATE.test(o.state) ||
    (o.teardown !== undefined &&
      !(typeof o.teardown === "string" && STATE_PATH.test(o.teardown))) ||
    !Array.isArray(o.ranks) ||
    o.ranks.length > MAX_REPORTED_RANKS
  ) {
    return undefined;
  }
  const ranks: RankProgress[] = [];
  for (const r of o.ranks as Record<string, unknown>[]) {
    if (
      typeof r !== "object" ||
      r === null ||
      !isCount(r.rank) ||
      typeof r.phase !== "string" ||
      !STATE.test(r.phase) ||
      (r.pid !== undefined && !isCount(r.pid)) ||
      (r.code !== undefined && !isCount(r.code)) ||
      (r.signal !== undefined && !(typeof r.signal === "string" && SIGNAL.test(r.signal)))
    ) {
      return undefined;
    }
    ranks.push({
      rank: r.rank,
      phase: r.phase,
      ...(r.pid !== undefined && { pid: r.pid as number }),
      ...(r.code !== undefined && { code: r.code as number }),
      ...(r.signal !== undefined && { signal: r.signal as string }),
    });
  }
  return {
    format: GROUP_PROGRESS_FORMAT,
    deployment: o.deployment,
    worldSize: o.worldSize,
    state: o.state,
    ...(o.teardown !== undefined && { teardown: o.teardown as string }),
    ranks,
  };
}

/**
 * The dashboard events that bring the page from a group's `previous` report (if any) to
 * `progress`: the group's event when its state (or its teardown's) changed, and one event per rank that
 * changed, so a replay steps through real changes only. `job` names the rank job that
 * launched it (none for a group launched directly, as in a simulation).
 *
 * @example
 * ```ts
 * groupProgressEvents(progress, "train-1"); // [{ type: "group", … }, { type: "rank", … }, …]
 * ```
 */
export function groupProgressEvents(
  progress: GroupProgress,
  job: string | undefined,
  previous?: GroupProgress,
): DashboardEvent[] {
  const events: DashboardEvent[] = [];
  if (
    previous === undefined ||
    previous.state !== progress.state ||
    previous.teardown !== progress.teardown ||
    previous.worldSize !== progress.worldSize
  ) {
    events.push({
      type: "group",
      id: progress.deployment,
      state: progress.state,
      ...(job !== undefined && { job }),
      worldSize: progress.worldSize,
      ...(progress.teardown !== undefined && { teardown: progress.teardown }),
    });
  }
  const before = new Map(previous?.ranks.map((r) => [r.rank, JSON.stringify(r)]));
  for (const rank of progress.ranks) {
    if (before.get(rank.rank) === JSON.stringify(rank)) continue;
    events.push({
      type: "rank",
      group: progress.deployment,
      rank: rank.rank,
      phase: rank.phase,
      ...(rank.pid !== undefined && { pid: rank.pid }),
      ...(rank.code !== undefined && { code: rank.code }),
      ...(rank.signal !== undefined && { signal: rank.signal }),
    });
  }
  return events;
}

function rankOf(rank: number, phase: string, context: Record<string, unknown>): RankProgress {
  const { pid, code, signal } = context;
  return {
    rank,
    phase,
    ...(typeof pid === "number" && { pid }),
    ...(typeof code === "number" && { code }),
    ...(typeof signal === "string" && { signal }),
  };
}

/** The outermost active state's name. */
function topState(value: StateValue): string {
  return typeof value === "string" ? value : (Object.keys(value)[0] ?? "");
}

/** The active state's path, outermost first, dotted (`sweep.reading`). */
function statePath(value: StateValue): string {
  if (typeof value === "string") return value;
  const [key, inner] = Object.entries(value)[0] ?? [];
  if (key === undefined) return "";
  return inner === undefined ? key : `${key}.${statePath(inner as StateValue)}`;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/** Group states after which a group reports nothing more that matters. */
const GROUP_ENDS: ReadonlySet<string> = new Set(["stopped", "teardownFailed"]);

/** The machines a group report shows the states of, by id: the page draws their charts. */
const GROUP_MACHINES: Record<string, AnyStateMachine> = {
  group: groupMachine,
  rank: rankMachine,
  teardown: teardownMachine,
};

/**
 * Rank groups on the dashboard from their reports, as the changes since each group's last
 * report (`groupProgressEvents`). The first group event brings the group's and the rank's
 * charts, the first with a teardown the teardown's (laid out once per feed), so the page
 * draws the state of a group, a rank or a teardown on its machine's chart.
 * `jobChanged` hears every job's state: a job that leaves
 * `running` before its group reported its end (its worker was lost, or it was cancelled and
 * its last report dropped) leaves the group `unreported` rather than shown running forever.
 *
 * @example
 * ```ts
 * const groups = groupFeed((event) => model.apply(clock.now(), event));
 * groups.report(progress, "train-1");
 * groups.jobChanged("train-1", "ready"); // the group is now "unreported"
 * ```
 */
export function groupFeed(emit: (event: DashboardEvent) => void): {
  report(progress: GroupProgress, job?: string): void;
  jobChanged(job: string, state: string): void;
} {
  const groups = new Map<string, GroupProgress>();
  const groupOfJob = new Map<string, string>();
  const charted = new Set<string>();
  /** A group event with the charts of the machines it shows that no event brought yet. */
  const withCharts = (event: DashboardEvent): DashboardEvent => {
    if (event.type !== "group") return event;
    const machines = ["group", "rank", ...(event.teardown === undefined ? [] : ["teardown"])];
    const fresh = machines.filter((machine) => !charted.has(machine));
    if (fresh.length === 0) return event;
    for (const machine of fresh) charted.add(machine);
    const charts = fresh.map((machine) => chartLayout(stateChart(GROUP_MACHINES[machine]!)));
    return { ...event, charts };
  };
  return {
    report(progress, job) {
      const events = groupProgressEvents(progress, job, groups.get(progress.deployment));
      groups.set(progress.deployment, progress);
      if (job !== undefined) groupOfJob.set(job, progress.deployment);
      for (const event of events) emit(withCharts(event));
    },
    jobChanged(job, state) {
      const deployment = groupOfJob.get(job);
      if (deployment === undefined || state === "running") return;
      groupOfJob.delete(job);
      const last = groups.get(deployment)!;
      if (GROUP_ENDS.has(last.state)) return;
      groups.set(deployment, { ...last, state: "unreported" });
      emit({ type: "group", id: deployment, state: "unreported", job });
    },
  };
}
