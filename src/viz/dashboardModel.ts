import type { FailureCause, JobState } from "../machines/jobBoard.ts";
import { mentionsWhole } from "../mentionsWhole.ts";
import type { ChartLayout } from "./chartLayout.ts";
import { type GraphLayout, graphLayout } from "./graphLayout.ts";
import type { RankProgress } from "./groupProgress.ts";
import { Throughput, type ThroughputView } from "./throughput.ts";

/** Job outcomes as a run's result counts them. */
export type Outcomes = Record<"completed" | "failed" | "skipped" | "cancelled" | "cached", number>;

/**
 * What the dashboard is told, with the time it happened (wall or virtual): the graph at
 * the start, job state changes, actors' states, rank groups' states and ranks' phases, and
 * the end of the run. A live run and a recorded simulation feed the same events.
 */
export type DashboardEvent =
  | { type: "run.started"; run: string }
  | {
      type: "graph";
      jobs: {
        id: string;
        kind: string;
        /** Its kind and a preview of its input, as messages and a simulation's trace name it. */
        label?: string | undefined;
        deps: string[];
        state: JobState;
        cached?: boolean | undefined;
      }[];
    }
  | {
      type: "job";
      id: string;
      kind: string;
      state: JobState;
      /** Its dependencies, when they may be news: a job `ctx.need` added, or one that needed it. */
      deps?: readonly string[] | undefined;
      /** Its label (see the graph's), with the first event of a job `ctx.need` added. */
      label?: string | undefined;
      cause?: FailureCause | undefined;
    }
  | {
      type: "actor";
      /** Stable within the run (`connection:memory:3`, `coordinator`). */
      id: string;
      machine: string;
      label: string;
      /** Ids of the active states, outermost first. */
      states: string[];
      status: "active" | "done" | "error" | "stopped";
      /** The job it works on now, if any. */
      job?: string | undefined;
      /** A finished connection that did not close normally: its close code and why. */
      closed?: string | undefined;
      /** The machine's chart, sent with the first actor of that machine. */
      chart?: ChartLayout | undefined;
    }
  | {
      type: "group";
      /** The deployment. */
      id: string;
      state: string;
      /** The rank job that launched it. */
      job?: string | undefined;
      worldSize?: number | undefined;
      /** Its teardown's state, dotted (`sweep.reading`), once it began to stop. */
      teardown?: string | undefined;
      /** The charts of the group's, the rank's and the teardown's machines, with the first event that shows each. */
      charts?: ChartLayout[] | undefined;
    }
  /** A rank of the group `group` (its deployment), as its launcher sees it. */
  | ({ type: "rank"; group: string } & RankProgress)
  | { type: "run.finished"; ok: boolean }
  /**
   * A simulation broke an invariant (only in a replay of `baton sim --ui`); `message` is the
   * simulation's, which names the invariant: "invariant N (what holds) violated: …".
   */
  | { type: "violation"; invariant: number; message: string };

/** The invariant a simulation broke, and when (virtual ms). */
export interface ViolationView {
  invariant: number;
  message: string;
  at: number;
  /** What its message names (`namedIn`), for the page to mark: jobs, their kinds, actors. */
  jobs: string[];
  kinds: string[];
  actors: string[];
}

export interface JobView {
  id: string;
  kind: string;
  /** Its kind and a preview of its input (`render "blog"`), which the page's hover shows. */
  label: string;
  deps: string[];
  state: JobState;
  /** Column: the longest chain of dependencies before it. */
  layer: number;
  /** Where the page draws it (`graphLayout`). */
  x: number;
  y: number;
}

export interface KindView {
  kind: string;
  deps: string[];
  counts: Record<JobState, number>;
  layer: number;
  x: number;
  y: number;
}

export interface ActorView {
  id: string;
  machine: string;
  label: string;
  states: string[];
  status: string;
  job?: string;
  /**
   * What its job is, when the graph has it, so that the page can say what it runs: its label
   * (kind and input, `fetch "https://x"`) in a graph drawn by job, its kind in one drawn by kind.
   */
  jobLabel?: string;
  /** A finished connection that did not close normally: its close code and why. */
  closed?: string;
}

export interface RankView {
  phase: string;
  pid?: number;
  code?: number;
  signal?: string;
}

export interface GroupView {
  id: string;
  state: string;
  job?: string;
  worldSize?: number;
  /** Its teardown's state (`sweep.reading`), once it began to stop. */
  teardown?: string;
  /** Each rank's view, by rank. */
  ranks: Record<string, RankView>;
}

/** Everything the page shows; sent whole when a page connects. */
export interface DashboardState {
  run: string | undefined;
  /** Time of the first event and of the last one, in ms. */
  startedAt: number | undefined;
  now: number;
  finished: boolean;
  ok: boolean | undefined;
  /** The invariant a replayed simulation broke, from the step it broke on. */
  violation: ViolationView | undefined;
  total: number;
  counts: Record<JobState, number>;
  outcomes: Outcomes;
  /** Each job, for a small graph; else each kind with counts (`graphMode`). */
  graphMode: "jobs" | "kinds";
  /** The drawn graph's size and, by job, its columns' headings. */
  graph: GraphLayout;
  jobs: Record<string, JobView>;
  kinds: Record<string, KindView>;
  actors: Record<string, ActorView>;
  groups: Record<string, GroupView>;
  /** Jobs finished (completed or failed) over the run, in bars as wide as its length asks. */
  throughput: ThroughputView;
  charts: Record<string, ChartLayout>;
}

/**
 * What changed since the last diff: absolute values (a job's new state, an actor's view,
 * a second's count), never increments, so applying a diff twice or after a snapshot that
 * already has it is harmless. `null` removes an actor.
 */
export interface DashboardDiff {
  /** The run's name, which may come after a page connected (a launch's, with its first report). */
  run: string | undefined;
  now: number;
  finished: boolean;
  ok: boolean | undefined;
  violation: ViolationView | undefined;
  total: number;
  counts: Record<JobState, number>;
  outcomes: Outcomes;
  /** By job or by kind: a graph that grows past `maxGraphJobs` while running is drawn by kind from then on. */
  graphMode: "jobs" | "kinds";
  /** Whole, when it changed. */
  graph?: GraphLayout;
  jobs?: Record<string, JobView>;
  kinds?: Record<string, KindView>;
  actors?: Record<string, ActorView | null>;
  groups?: Record<string, GroupView>;
  /** Whole (at most 120 bars), when it changed. */
  throughput?: ThroughputView;
  charts?: Record<string, ChartLayout>;
}

/** A graph with more jobs than this is drawn by kind unless told (`maxGraphJobs`). */
export const DEFAULT_MAX_GRAPH_JOBS = 300;
/** Finished actors kept for display unless told (`keepFinishedActors`). */
export const DEFAULT_KEEP_FINISHED_ACTORS = 50;

export interface DashboardModelOptions {
  /** A graph with more jobs than this is drawn by kind (default 300). */
  maxGraphJobs?: number;
  /** Finished actors kept for display; older ones are dropped (default 50). */
  keepFinishedActors?: number;
  /**
   * The run's whole length (ms), when it is known before it is shown (a replay, which
   * `replayTo` gives): the throughput's bars are as wide as it asks from the first step.
   */
  runMs?: number | undefined;
}

const FINISHED: ReadonlySet<JobState> = new Set(["completed", "failed"]);

function emptyCounts(): Record<JobState, number> {
  return { blocked: 0, ready: 0, running: 0, storing: 0, completed: 0, failed: 0 };
}

function outcomeOf(state: JobState, cause: FailureCause | undefined): keyof Outcomes | undefined {
  if (state === "completed") return "completed";
  if (state !== "failed") return undefined;
  if (cause === "skipped") return "skipped";
  if (cause === "cancelled" || cause === "shutdown") return "cancelled";
  return "failed";
}

/**
 * The dashboard's state, folded from `DashboardEvent`s: pure, and O(1) per event (a
 * 100,000-job run costs one small update per job change), so it keeps up with a run and
 * can be rebuilt from a recorded trace to any point (`replayTo`). `takeDiff()` hands out
 * what changed since the last call, coalesced (ten changes of one job are one entry);
 * the server sends diffs at a bounded rate and `snapshot()` to a page that connects.
 *
 * @example
 * ```ts
 * const model = new DashboardModel();
 * model.apply(0, { type: "graph", jobs: [{ id: "a", kind: "k", deps: [], state: "ready" }] });
 * model.apply(5, { type: "job", id: "a", kind: "k", state: "completed" });
 * model.snapshot().outcomes.completed; // 1
 * ```
 */
export class DashboardModel {
  private readonly state: DashboardState = {
    run: undefined,
    startedAt: undefined,
    now: 0,
    finished: false,
    ok: undefined,
    violation: undefined,
    total: 0,
    counts: emptyCounts(),
    outcomes: { completed: 0, failed: 0, skipped: 0, cancelled: 0, cached: 0 },
    graphMode: "jobs",
    graph: { width: 0, height: 0, headings: [] },
    jobs: {},
    kinds: {},
    actors: {},
    groups: {},
    throughput: new Throughput().view(),
    charts: {},
  };
  /** Every job's state and outcome, whatever the graph mode. */
  private readonly jobStates = new Map<string, { state: JobState; outcome?: keyof Outcomes }>();
  private readonly kindOf = new Map<string, string>();
  private readonly finishedActors: string[] = [];
  private readonly throughput: Throughput;
  private readonly maxGraphJobs: number;
  private readonly keepFinishedActors: number;
  private changed = false;
  private dirtyJobs = new Set<string>();
  private dirtyKinds = new Set<string>();
  private dirtyActors = new Set<string>();
  private dirtyGroups = new Set<string>();
  /** The throughput view the last diff carried (JSON): a diff carries it again when it differs. */
  private sentThroughput: string;
  private dirtyGraph = false;
  private dirtyCharts = new Set<string>();

  constructor(options: DashboardModelOptions = {}) {
    this.maxGraphJobs = options.maxGraphJobs ?? DEFAULT_MAX_GRAPH_JOBS;
    this.keepFinishedActors = options.keepFinishedActors ?? DEFAULT_KEEP_FINISHED_ACTORS;
    this.throughput = new Throughput(options.runMs);
    this.state.throughput = this.throughput.view();
    this.sentThroughput = JSON.stringify(this.state.throughput);
  }

  /** Whether anything changed since the last `takeDiff()`. */
  get dirty(): boolean {
    return this.changed;
  }

  /** Folds one event that happened at time `at` (ms). */
  apply(at: number, event: DashboardEvent): void {
    const s = this.state;
    s.startedAt ??= at;
    s.now = at;
    this.changed = true;
    this.throughput.at(at - s.startedAt);
    switch (event.type) {
      case "run.started":
        s.run = event.run;
        return;
      case "graph":
        this.start(event);
        return;
      case "job":
        this.jobChanged(at, event.id, event.kind, event.state, event.cause, event.label);
        if (event.deps !== undefined) this.depsTold(event.id, event.deps);
        return;
      case "actor": {
        if (event.chart) this.chart(event.chart);
        const known = s.actors[event.id];
        if (!known && event.status !== "active") return;
        const jobLabel =
          event.job === undefined
            ? undefined
            : (s.jobs[event.job]?.label ?? this.kindOf.get(event.job));
        s.actors[event.id] = {
          id: event.id,
          machine: event.machine,
          label: event.label,
          states: event.states,
          status: event.status,
          ...(event.job !== undefined && { job: event.job }),
          ...(jobLabel !== undefined && { jobLabel }),
          ...(event.closed !== undefined && { closed: event.closed }),
        };
        this.dirtyActors.add(event.id);
        if (event.status !== "active" && known?.status === "active") this.retire(event.id);
        return;
      }
      case "group": {
        for (const chart of event.charts ?? []) this.chart(chart);
        const group = s.groups[event.id] ?? { id: event.id, state: event.state, ranks: {} };
        group.state = event.state;
        if (event.job !== undefined) group.job = event.job;
        if (event.worldSize !== undefined) group.worldSize = event.worldSize;
        if (event.teardown !== undefined) group.teardown = event.teardown;
        s.groups[event.id] = group;
        this.dirtyGroups.add(event.id);
        return;
      }
      case "rank": {
        const group = s.groups[event.group] ?? { id: event.group, state: "", ranks: {} };
        group.ranks[String(event.rank)] = {
          phase: event.phase,
          ...(event.pid !== undefined && { pid: event.pid }),
          ...(event.code !== undefined && { code: event.code }),
          ...(event.signal !== undefined && { signal: event.signal }),
        };
        s.groups[event.group] = group;
        this.dirtyGroups.add(event.group);
        return;
      }
      case "run.finished":
        s.finished = true;
        s.ok = event.ok;
        return;
      case "violation": {
        const jobs = namedIn(event.message, this.jobStates.keys());
        s.violation = {
          invariant: event.invariant,
          message: event.message,
          at,
          jobs,
          kinds: [...new Set(jobs.map((id) => this.kindOf.get(id)!))],
          actors: Object.values(s.actors)
            .filter((actor) => namedIn(event.message, actorNames(actor)).length > 0)
            .map((actor) => actor.id),
        };
        return;
      }
    }
  }

  /** The whole state, as a page needs it when it connects (a copy). */
  snapshot(): DashboardState {
    this.state.throughput = this.throughput.view();
    return structuredClone(this.state);
  }

  /** What changed since the last call, or undefined when nothing did. */
  takeDiff(): DashboardDiff | undefined {
    if (!this.changed) return undefined;
    const s = this.state;
    const diff: DashboardDiff = {
      run: s.run,
      now: s.now,
      finished: s.finished,
      ok: s.ok,
      violation: s.violation && structuredClone(s.violation),
      total: s.total,
      counts: { ...s.counts },
      outcomes: { ...s.outcomes },
      graphMode: s.graphMode,
    };
    const pick = <V>(ids: Set<string>, from: Record<string, V>): Record<string, V | null> => {
      const out: Record<string, V | null> = {};
      for (const id of ids) out[id] = from[id] === undefined ? null : structuredClone(from[id]!);
      ids.clear();
      return out;
    };
    if (this.dirtyGraph) {
      diff.graph = structuredClone(s.graph);
      this.dirtyGraph = false;
    }
    if (this.dirtyJobs.size > 0)
      diff.jobs = pick(this.dirtyJobs, s.jobs) as Record<string, JobView>;
    if (this.dirtyKinds.size > 0) {
      diff.kinds = pick(this.dirtyKinds, s.kinds) as Record<string, KindView>;
    }
    if (this.dirtyActors.size > 0) diff.actors = pick(this.dirtyActors, s.actors);
    if (this.dirtyGroups.size > 0) {
      diff.groups = pick(this.dirtyGroups, s.groups) as Record<string, GroupView>;
    }
    // Drawn here, at most once a diff, not at every event (up to 120 bars, and their words).
    s.throughput = this.throughput.view();
    const throughput = JSON.stringify(s.throughput);
    if (throughput !== this.sentThroughput) {
      diff.throughput = structuredClone(s.throughput);
      this.sentThroughput = throughput;
    }
    if (this.dirtyCharts.size > 0) {
      diff.charts = pick(this.dirtyCharts, s.charts) as Record<string, ChartLayout>;
    }
    this.changed = false;
    return diff;
  }

  /** Keeps a machine's chart, the first one that came. */
  private chart(chart: ChartLayout): void {
    if (this.state.charts[chart.machine]) return;
    this.state.charts[chart.machine] = chart;
    this.dirtyCharts.add(chart.machine);
  }

  private start(event: Extract<DashboardEvent, { type: "graph" }>): void {
    const s = this.state;
    // A restarted coordinator (in a simulation) brings its graph again: start over.
    for (const id of Object.keys(s.jobs)) this.dirtyJobs.add(id);
    for (const kind of Object.keys(s.kinds)) this.dirtyKinds.add(kind);
    s.jobs = {};
    s.kinds = {};
    s.total = 0;
    s.counts = emptyCounts();
    s.outcomes = { completed: 0, failed: 0, skipped: 0, cancelled: 0, cached: 0 };
    this.jobStates.clear();
    this.kindOf.clear();
    s.graphMode = event.jobs.length > this.maxGraphJobs ? "kinds" : "jobs";
    const kindDeps = new Map<string, Set<string>>();
    const kindOfId = new Map(event.jobs.map((j) => [j.id, j.kind]));
    for (const job of event.jobs) {
      const deps = kindDeps.get(job.kind) ?? new Set<string>();
      kindDeps.set(job.kind, deps);
      for (const dep of job.deps) {
        const kind = kindOfId.get(dep);
        if (kind !== undefined && kind !== job.kind) deps.add(kind);
      }
    }
    if (s.graphMode === "jobs") {
      const layer = layers(event.jobs.map((j) => ({ id: j.id, deps: j.deps })));
      for (const job of event.jobs) {
        const { id, kind, deps, state } = job;
        const label = job.label ?? kind;
        s.jobs[id] = { id, kind, label, deps, state, layer: layer.get(id)!, x: 0, y: 0 };
      }
    }
    const layer = layers([...kindDeps].map(([id, deps]) => ({ id, deps: [...deps] })));
    for (const [kind, deps] of kindDeps) {
      s.kinds[kind] = {
        kind,
        deps: [...deps],
        counts: emptyCounts(),
        layer: layer.get(kind)!,
        x: 0,
        y: 0,
      };
    }
    this.layOut();
    for (const job of event.jobs) {
      this.kindOf.set(job.id, job.kind);
      this.jobStates.set(job.id, { state: job.state });
      s.total++;
      s.counts[job.state]++;
      s.kinds[job.kind]!.counts[job.state]++;
      const outcome = outcomeOf(job.state, undefined);
      if (outcome) {
        this.jobStates.get(job.id)!.outcome = outcome;
        s.outcomes[outcome]++;
      }
      if (job.cached) s.outcomes.cached++;
    }
  }

  private jobChanged(
    at: number,
    id: string,
    kind: string,
    state: JobState,
    cause: FailureCause | undefined,
    label = kind,
  ): void {
    const s = this.state;
    let known = this.jobStates.get(id);
    if (known === undefined) {
      // A job added while running (`ctx.need`).
      known = { state };
      this.jobStates.set(id, known);
      this.kindOf.set(id, kind);
      s.total++;
      s.counts[state]++;
      const k = s.kinds[kind] ?? { kind, deps: [], counts: emptyCounts(), layer: 0, x: 0, y: 0 };
      k.counts[state]++;
      const newKind = s.kinds[kind] === undefined;
      s.kinds[kind] = k;
      if (s.graphMode === "jobs" && s.total > this.maxGraphJobs) {
        // The graph outgrew a drawing by job: it is drawn by kind from now on, as a graph that
        // large from the start is, so that no job is left out of it.
        for (const drawnId of Object.keys(s.jobs)) this.dirtyJobs.add(drawnId);
        s.jobs = {};
        s.graphMode = "kinds";
        this.layOut();
      } else if (s.graphMode === "jobs") {
        s.jobs[id] = { id, kind, label, deps: [], state, layer: 0, x: 0, y: 0 };
        // It joins the first column (its dependencies are not told): the graph is laid out again.
        this.layOut();
      } else if (newKind) this.layOut();
    } else {
      s.counts[known.state]--;
      s.counts[state]++;
      const k = s.kinds[this.kindOf.get(id)!]!;
      k.counts[known.state]--;
      k.counts[state]++;
      known.state = state;
    }
    this.dirtyKinds.add(this.kindOf.get(id)!);
    const job = s.jobs[id];
    if (job) {
      job.state = state;
      this.dirtyJobs.add(id);
    }
    if (known.outcome) s.outcomes[known.outcome]--;
    const outcome = outcomeOf(state, cause);
    if (outcome) s.outcomes[outcome]++;
    known.outcome = outcome;
    if (FINISHED.has(state) && s.startedAt !== undefined)
      this.throughput.finished(at - s.startedAt);
  }

  /**
   * Draws the dependencies of job `id` that the graph did not have: those of a job `ctx.need`
   * added (it joined the first column with none), and the needed jobs of the job that needed
   * them. Its kind gains an arrow from each other kind it now depends on, and the jobs and
   * kinds are put in their columns again. Until an audit a kind first seen while the run ran
   * had no arrows in the graph by kind, nor such a job in the graph by job.
   */
  private depsTold(id: string, deps: readonly string[]): void {
    const s = this.state;
    const kind = this.kindOf.get(id)!;
    const k = s.kinds[kind]!;
    let grew = false;
    for (const dep of deps) {
      const depKind = this.kindOf.get(dep);
      if (depKind === undefined || depKind === kind || k.deps.includes(depKind)) continue;
      k.deps.push(depKind);
      this.dirtyKinds.add(kind);
      grew = true;
    }
    const job = s.jobs[id];
    if (job !== undefined && job.deps.length !== deps.length) {
      job.deps = [...deps];
      this.dirtyJobs.add(id);
      grew = true;
    }
    if (!grew) return;
    const relayer = <V extends { layer: number; deps: string[] }>(
      views: Record<string, V>,
      dirty: Set<string>,
    ) => {
      const layer = layers(Object.entries(views).map(([key, v]) => ({ id: key, deps: v.deps })));
      for (const [key, view] of Object.entries(views)) {
        if (view.layer === layer.get(key)) continue;
        view.layer = layer.get(key)!;
        dirty.add(key);
      }
    };
    relayer(s.kinds, this.dirtyKinds);
    relayer(s.jobs, this.dirtyJobs);
    this.layOut();
  }

  /**
   * Places every job and every kind (`graphLayout`), marking those that moved; the graph's
   * size and headings are the drawn mode's. O(jobs drawn), at most 300, once per graph and
   * once per job added while running.
   */
  private layOut(): void {
    const s = this.state;
    const place = <V extends { x: number; y: number }>(
      views: Record<string, V>,
      at: Map<string, { x: number; y: number }>,
      dirty: Set<string>,
    ) => {
      for (const [id, view] of Object.entries(views)) {
        const { x, y } = at.get(id)!;
        if (view.x === x && view.y === y) continue;
        view.x = x;
        view.y = y;
        dirty.add(id);
      }
    };
    const byJob = graphLayout(Object.values(s.jobs), "jobs");
    place(s.jobs, byJob.at, this.dirtyJobs);
    const kinds = Object.values(s.kinds).map(({ kind, layer }) => ({ id: kind, kind, layer }));
    const byKind = graphLayout(kinds, "kinds");
    place(s.kinds, byKind.at, this.dirtyKinds);
    s.graph = s.graphMode === "jobs" ? byJob.layout : byKind.layout;
    this.dirtyGraph = true;
  }

  /** Keeps the last few finished actors; older ones leave the view. */
  private retire(id: string): void {
    this.finishedActors.push(id);
    while (this.finishedActors.length > this.keepFinishedActors) {
      const gone = this.finishedActors.shift()!;
      delete this.state.actors[gone];
      this.dirtyActors.add(gone);
    }
  }
}

/**
 * The names among `names` that `message` mentions as a whole (`inproc-1` is not in
 * `inproc-10`, nor `sim:1` in `sim:12`). O(names × message), once per broken invariant.
 */
function namedIn(message: string, names: Iterable<string>): string[] {
  return [...names].filter((name) => mentionsWhole(message, name, /[\w-]/));
}

/**
 * What a broken invariant may call an actor: its worker's name (`inproc-5`, which its label
 * starts with) and its connection's (`connection sim:5`), or its id.
 */
function actorNames(actor: ActorView): string[] {
  const names = [actor.id, actor.label.split(" (")[0]!];
  if (actor.id.startsWith("connection:")) names.push(`connection ${actor.id.slice(11)}`);
  return names;
}

/**
 * The column of each node: the longest chain of dependencies before it (iteratively, for
 * deep graphs).
 */
function layers(nodes: { id: string; deps: string[] }[]): Map<string, number> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const layer = new Map<string, number>();
  for (const node of nodes) {
    const stack: { id: string; next: number }[] = [{ id: node.id, next: 0 }];
    const onStack = new Set([node.id]);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (layer.has(top.id)) {
        stack.pop();
        onStack.delete(top.id);
        continue;
      }
      const deps = byId.get(top.id)?.deps ?? [];
      const dep = deps[top.next];
      if (dep !== undefined) {
        top.next++;
        if (byId.has(dep) && !layer.has(dep) && !onStack.has(dep)) {
          stack.push({ id: dep, next: 0 });
          onStack.add(dep);
        }
        continue;
      }
      let depth = 0;
      for (const d of deps) depth = Math.max(depth, (layer.get(d) ?? -1) + 1);
      layer.set(top.id, depth);
      stack.pop();
      onStack.delete(top.id);
    }
  }
  return layer;
}

/**
 * One line saying what an event did, for a replay's step display.
 *
 * @example
 * ```ts
 * describeEvent({ type: "job", id: "a1", kind: "fetch", state: "running" }); // "job a1 (fetch) running"
 * ```
 */
export function describeEvent(event: DashboardEvent): string {
  switch (event.type) {
    case "run.started":
      return `run ${event.run} started`;
    case "graph":
      return `graph of ${event.jobs.length} jobs`;
    case "job":
      return `job ${event.id} (${event.kind}) ${event.state}${event.cause ? ` (${event.cause})` : ""}`;
    case "actor":
      return `${event.label}: ${event.states.at(-1)?.split(".").slice(1).join(".") ?? event.status}${event.closed ? ` (${event.closed})` : ""}`;
    case "group":
      return `group ${event.id} ${event.state}${event.teardown ? ` (teardown ${event.teardown})` : ""}`;
    case "rank":
      return `group ${event.group} rank ${event.rank} ${event.phase}${event.code !== undefined ? ` (code ${event.code})` : ""}${event.signal !== undefined ? ` (${event.signal})` : ""}`;
    case "run.finished":
      return `run finished (${event.ok ? "ok" : "not ok"})`;
    case "violation":
      return event.message;
  }
}

/**
 * The model after the first `upTo` events of a recorded trace: what a replay shows at that
 * step of its time slider.
 *
 * @example
 * ```ts
 * const model = replayTo(trace, 120); // the state after 120 events
 * ```
 */
export function replayTo(
  trace: readonly { at: number; event: DashboardEvent }[],
  upTo: number,
  options?: DashboardModelOptions,
): DashboardModel {
  const runMs = trace.length === 0 ? 0 : trace.at(-1)!.at - trace[0]!.at;
  const model = new DashboardModel({ runMs, ...options });
  for (const { at, event } of trace.slice(0, upTo)) model.apply(at, event);
  return model;
}
