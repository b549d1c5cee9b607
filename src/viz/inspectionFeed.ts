import type {
  ActorRefLike,
  AnyStateMachine,
  AnyStateNode,
  InspectionEvent,
  StateValue,
} from "xstate";
import { label } from "../graph/label.ts";
import type { ConnectionEmitted } from "../machines/connection.ts";
import type { CoordinatorEmitted } from "../machines/coordinator.ts";
import type { JobBoard } from "../machines/jobBoard.ts";
import { CloseCode, closeName } from "../transport/closeCodes.ts";
import { chartLayout } from "./chartLayout.ts";
import type { DashboardEvent } from "./dashboardModel.ts";
import { groupFeed, readGroupProgress } from "./groupProgress.ts";
import { stateChart } from "./stateChart.ts";

type Context = Record<string, unknown>;

/**
 * Turns XState inspection events (from the engine's or the simulation's `inspect` option)
 * into dashboard events: each actor's snapshot becomes its view (its active states, a
 * label, its job), the first actor of a machine brings that machine's chart, a
 * coordinator's first snapshot brings the graph (read from its job board; a restarted
 * coordinator brings it again), and the coordinator's emitted effects (seen as `xstate.emit`
 * actions) bring job changes and the end of the run. A rank job's progress (a connection's
 * emitted `progress` whose message is a group report, `readGroupProgress`) brings its rank
 * group and its ranks, wherever the worker runs; a group whose job stopped running before
 * it reported its end is shown `unreported`. A live run and a simulation feed the
 * dashboard the same way. Actors are named by what they stand
 * for (`coordinator`, `connection:<link id>`), not by XState's session ids.
 *
 * @example
 * ```ts
 * const feed = inspectionFeed((event) => model.apply(clock.now(), event));
 * createEngine({ jobs, inspect: feed });
 * ```
 */
export function inspectionFeed(
  emit: (event: DashboardEvent) => void,
): (event: InspectionEvent) => void {
  const names = new WeakMap<ActorRefLike, string>();
  const views = new WeakMap<ActorRefLike, string>();
  const charted = new Set<string>();
  const counters = new Map<string, number>();
  const workerLabels = new WeakMap<ActorRefLike, string>();
  const connections = new Map<string, number>();
  const groups = groupFeed(emit);
  const boards = new WeakMap<ActorRefLike, JobBoard>();
  /** The jobs each board's graph brought or an event labelled: a job `ctx.need` adds is news. */
  const labelled = new WeakMap<JobBoard, Set<string>>();
  return (inspection) => {
    if (inspection.type === "@xstate.action") {
      const { type, params } = inspection.action as { type: string; params?: { event?: unknown } };
      if (type !== "xstate.emit") return;
      const emitted = params?.event as CoordinatorEmitted | ConnectionEmitted | undefined;
      if (emitted?.type === "progress") {
        const progress = readGroupProgress(emitted.frame.message);
        if (progress !== undefined) groups.report(progress, emitted.frame.job);
      } else {
        const board = boards.get(inspection.actorRef);
        const known = board && labelled.get(board);
        fromEmitted(
          emitted as CoordinatorEmitted | undefined,
          emit,
          groups.jobChanged,
          board,
          known,
        );
      }
      return;
    }
    if (inspection.type !== "@xstate.snapshot") return;
    const actor = inspection.actorRef;
    const machine = (actor as { logic?: unknown }).logic as AnyStateMachine | undefined;
    if (machine?.root === undefined) return;
    const snapshot = inspection.snapshot as unknown as {
      value: StateValue;
      status: string;
      context: Context;
    };
    const context = snapshot.context ?? {};
    let name = names.get(actor);
    if (name === undefined) {
      name = nameOf(machine.id, context, counters);
      names.set(actor, name);
      if (machine.id === "coordinator" && context.board !== undefined) {
        const board = context.board as JobBoard;
        boards.set(actor, board);
        labelled.set(board, new Set(board.jobs.keys()));
        emit(graphOf(board));
      }
    }
    const states = activeStates(machine.root, snapshot.value);
    const label = labelOf(machine.id, context, name, () => {
      let worker = workerLabels.get(actor);
      if (worker === undefined) {
        worker = connectionLabel(context.worker as string, String(context.conn), connections);
        workerLabels.set(actor, worker);
      }
      return worker;
    });
    const job =
      typeof context.job === "string" && states.some((s) => s.endsWith(".busy"))
        ? context.job
        : undefined;
    const closed = snapshot.status === "active" ? undefined : abnormalClose(context);
    // Most snapshots change only context: an actor is reported when its view changes.
    const view = `${states.join(" ")}|${snapshot.status}|${label}|${job ?? ""}|${closed ?? ""}`;
    if (views.get(actor) === view) return;
    views.set(actor, view);
    const chart = charted.has(machine.id) ? undefined : chartLayout(stateChart(machine));
    charted.add(machine.id);
    emit({
      type: "actor",
      id: name,
      machine: machine.id,
      label,
      states,
      status: snapshot.status as "active",
      ...(job !== undefined && { job }),
      ...(closed !== undefined && { closed }),
      ...(chart && { chart }),
    });
  };
}

/**
 * The coordinator's effects and its end, as it emits them (other machines' emits are ignored).
 * A job that turns blocked or ready brings its dependencies from the coordinator's `board`:
 * a job `ctx.need` added, and the job that needed it, whose dependencies grew; a job not
 * `known` (not in the graph, nor labelled before) its label too.
 */
function fromEmitted(
  emitted: CoordinatorEmitted | undefined,
  emit: (event: DashboardEvent) => void,
  jobChanged: (job: string, state: string) => void,
  board: JobBoard | undefined,
  known: Set<string> | undefined,
): void {
  if (emitted?.type === "effects" && Array.isArray(emitted.effects)) {
    for (const effect of emitted.effects) {
      if (effect.type !== "job.changed") continue;
      jobChanged(effect.job, effect.state);
      const record =
        effect.state === "blocked" || effect.state === "ready"
          ? board?.jobs.get(effect.job)
          : undefined;
      const news = record !== undefined && known !== undefined && !known.has(effect.job);
      if (news) known.add(effect.job);
      emit({
        type: "job",
        id: effect.job,
        kind: effect.kind,
        state: effect.state,
        ...(record !== undefined && { deps: record.job.deps }),
        ...(news && { label: label(record.job) }),
        ...(effect.cause !== undefined && { cause: effect.cause }),
      });
    }
  } else if (emitted?.type === "run.finished") {
    const ok = Object.entries(emitted.counts).every(
      ([state, n]) => state === "completed" || n === 0,
    );
    emit({ type: "run.finished", ok });
  }
}

/**
 * Why a finished connection closed, when it was not the normal close at the end of a run:
 * its close code and the reason given (`4005: lease of job … expired: …`), or, with none,
 * what the code means (`1006 connection broke`: a crashed worker or a failed network).
 */
function abnormalClose(context: Context): string | undefined {
  const code = context.closeCode;
  if (typeof code !== "number" || code === CloseCode.normal) return undefined;
  const reason = context.closeReason;
  if (typeof reason === "string" && reason !== "") return `${code}: ${reason}`;
  return `${code} ${closeName(code)}`;
}

function nameOf(machine: string, context: Context, counters: Map<string, number>): string {
  if (machine === "coordinator") return "coordinator";
  for (const key of ["conn", "deployment", "rank"]) {
    const value = context[key];
    if (typeof value === "string" || typeof value === "number") return `${machine}:${value}`;
  }
  const n = (counters.get(machine) ?? 0) + 1;
  counters.set(machine, n);
  return `${machine}:${n}`;
}

/** An actor's label: its worker's (`workerLabel`) once it has one, else its name. */
function labelOf(
  machine: string,
  context: Context,
  name: string,
  workerLabel: () => string,
): string {
  const worker = context.worker;
  if (typeof worker === "string" && worker !== "") return workerLabel();
  return machine === "coordinator" ? "coordinator" : name;
}

/**
 * The label of the connection `conn` of the worker `worker`: its name and its connection
 * as the trace and the invariants name it (`inproc-2 (connection sim:2)`), so that a
 * violation's connection is found in the table without guessing; each connection after
 * its first (a worker that reconnected after its connection was lost, or after a
 * coordinator restart) also says which reconnect it is (`inproc-1 (connection sim:3,
 * reconnect 1)`), so that its lost connection and the new one are two rows that say which
 * came first.
 */
function connectionLabel(worker: string, conn: string, connections: Map<string, number>): string {
  const n = (connections.get(worker) ?? 0) + 1;
  connections.set(worker, n);
  return `${worker} (connection ${conn}${n === 1 ? "" : `, reconnect ${n - 1}`})`;
}

function graphOf(board: JobBoard): DashboardEvent {
  const jobs: Extract<DashboardEvent, { type: "graph" }>["jobs"] = [];
  for (const [id, record] of board.jobs) {
    jobs.push({
      id,
      kind: record.job.kind,
      label: label(record.job),
      deps: record.job.deps,
      state: record.state,
      ...(record.cached && { cached: true }),
    });
  }
  return { type: "graph", jobs };
}

/** Ids of the active states for a state value, outermost first. */
function activeStates(node: AnyStateNode, value: StateValue): string[] {
  if (typeof value === "string") {
    const child = node.states[value];
    return child ? [child.id] : [];
  }
  const out: string[] = [];
  for (const [key, inner] of Object.entries(value)) {
    const child = node.states[key];
    if (!child) continue;
    out.push(child.id);
    if (inner !== undefined) out.push(...activeStates(child, inner as StateValue));
  }
  return out;
}
