/**
 * The dashboard's model: counts that match a run's outcome, diffs that rebuild exactly the
 * state the model holds, coalescing, large graphs drawn by kind, and replay to any step.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import type { FailureCause, JobState } from "../../src/machines/jobBoard.ts";
import {
  type DashboardDiff,
  type DashboardEvent,
  DashboardModel,
  type DashboardState,
  describeEvent,
  replayTo,
} from "../../src/viz/dashboardModel.ts";
import { Throughput } from "../../src/viz/throughput.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

const STATES: JobState[] = ["blocked", "ready", "running", "completed", "failed"];
const CAUSES: (FailureCause | undefined)[] = [undefined, "error", "skipped", "cancelled", "poison"];

function graph(n: number, kinds = 3): Extract<DashboardEvent, { type: "graph" }> {
  return {
    type: "graph",
    jobs: Array.from({ length: n }, (_, i) => ({
      id: `j${i}`,
      kind: `k${i % kinds}`,
      deps: i >= kinds ? [`j${i - kinds}`] : [],
      state: i < kinds ? ("ready" as const) : ("blocked" as const),
    })),
  };
}

/** What the page does with a diff (src/viz/page/dashboard.js `applyDiff`). */
function applyDiff(state: DashboardState, diff: DashboardDiff): void {
  Object.assign(state, {
    now: diff.now,
    finished: diff.finished,
    ok: diff.ok,
    violation: diff.violation,
    total: diff.total,
    counts: diff.counts,
    outcomes: diff.outcomes,
    graphMode: diff.graphMode,
  });
  if (diff.throughput) state.throughput = diff.throughput;
  if (diff.graph) state.graph = diff.graph;
  for (const key of ["jobs", "kinds", "groups", "charts", "actors"] as const) {
    const target = state[key] as Record<string, unknown>;
    for (const [id, value] of Object.entries(diff[key] ?? {})) {
      if (value === null) delete target[id];
      else target[id] = value;
    }
  }
}

describe("DashboardModel", () => {
  it("counts jobs by state and by outcome as a run's result does", () => {
    const model = new DashboardModel();
    model.apply(0, graph(6));
    const final: [string, JobState, FailureCause | undefined][] = [
      ["j0", "completed", undefined],
      ["j1", "failed", "error"],
      ["j2", "completed", undefined],
      ["j3", "completed", undefined],
      ["j4", "failed", "skipped"],
      ["j5", "failed", "cancelled"],
    ];
    for (const [id, state, cause] of final) {
      model.apply(10, { type: "job", id, kind: "k", state: "running" });
      model.apply(20, { type: "job", id, kind: "k", state, ...(cause && { cause }) });
    }
    const s = model.snapshot();
    expect(s.total).toBe(6);
    expect(s.counts).toEqual({
      blocked: 0,
      ready: 0,
      running: 0,
      storing: 0,
      completed: 3,
      failed: 3,
    });
    expect(s.outcomes).toEqual({ completed: 3, failed: 1, skipped: 1, cancelled: 1, cached: 0 });
    expect(s.throughput.bars.reduce((a, b) => a + b, 0)).toBe(6);
  });

  it("draws a day-long run's throughput in minutes, so its page stays as small as a minute's", () => {
    const model = new DashboardModel();
    model.apply(0, graph(3));
    const page = model.snapshot();
    // One job finished every second for a day, the page following by diffs every minute.
    for (let second = 0; second < 86_400; second++) {
      const id = `late${second}`;
      model.apply(second * 1000, { type: "job", id, kind: "k0", state: "completed" });
      if (second % 60 === 0) applyDiff(page, model.takeDiff()!);
    }
    applyDiff(page, model.takeDiff()!);
    const throughput = model.snapshot().throughput;
    expect(throughput.barMs).toBe(20 * 60_000);
    expect(throughput.bars).toHaveLength(72);
    expect(throughput.bars.every((n) => n === 20 * 60)).toBe(true);
    expect(throughput.caption).toBe("jobs finished per 20 min");
    expect(page.throughput).toEqual(throughput);
    expect(model.snapshot().outcomes.completed).toBe(86_400);
  });

  it("draws the throughput once a diff, not at every event (up to 120 bars and their words)", () => {
    const model = new DashboardModel();
    model.apply(0, graph(3));
    const view = vi.spyOn(Throughput.prototype, "view");
    for (let i = 0; i < 10_000; i++) {
      model.apply(i, { type: "job", id: `n${i}`, kind: "k0", state: "completed" });
      if (i % 1000 === 999) model.takeDiff();
    }
    expect(view.mock.calls.length).toBeLessThanOrEqual(10);
    view.mockRestore();
    expect(model.snapshot().throughput.peak).toBe("peak 100 in 100 ms");
  });

  it("coalesces: a thousand changes of one job are one entry of one diff", () => {
    const model = new DashboardModel();
    model.apply(0, graph(3));
    model.takeDiff();
    for (let i = 0; i < 1000; i++) {
      model.apply(i, { type: "job", id: "j0", kind: "k0", state: i % 2 ? "ready" : "running" });
    }
    const diff = model.takeDiff()!;
    expect(Object.keys(diff.jobs ?? {})).toEqual(["j0"]);
    expect(diff.jobs?.j0?.state).toBe("ready");
    expect(model.takeDiff()).toBeUndefined();
  });

  it("draws a 100,000-job graph by kind, so a diff stays small", () => {
    const model = new DashboardModel();
    model.apply(0, graph(100_000, 4));
    expect(model.snapshot().graphMode).toBe("kinds");
    model.takeDiff();
    for (let i = 0; i < 100_000; i++) {
      model.apply(i, { type: "job", id: `j${i}`, kind: `k${i % 4}`, state: "completed" });
    }
    const diff = model.takeDiff()!;
    expect(diff.jobs).toBeUndefined();
    expect(Object.keys(diff.kinds ?? {}).sort()).toEqual(["k0", "k1", "k2", "k3"]);
    expect(diff.outcomes.completed).toBe(100_000);
    expect(JSON.stringify(diff).length).toBeLessThan(20_000);
  });

  it("draws by kind once jobs added while running take the graph past maxGraphJobs, leaving none out", () => {
    const model = new DashboardModel({ maxGraphJobs: 10 });
    model.apply(0, graph(1, 1));
    const page = model.snapshot();
    model.takeDiff();
    for (let i = 1; i <= 12; i++) {
      model.apply(i, { type: "job", id: `n${i}`, kind: "load", state: "ready" });
      const diff = model.takeDiff();
      if (diff) applyDiff(page, diff);
    }
    expect(page.graphMode).toBe("kinds");
    expect(page.jobs).toEqual({});
    expect(page.kinds.load?.counts.ready).toBe(12);
    expect(page.kinds.k0?.counts.ready).toBe(1);
    expect(page).toEqual(model.snapshot());
  });

  it("shows a replayed simulation's broken invariant from the step it broke on", () => {
    const trace: { at: number; event: DashboardEvent }[] = [
      { at: 0, event: { type: "run.started", run: "seed 2" } },
      { at: 0, event: graph(3) },
      { at: 9_000, event: { type: "job", id: "j0", kind: "k0", state: "running" } },
      {
        at: 13_601,
        event: {
          type: "violation",
          invariant: 1,
          message: "invariant 1 (…) violated: job j0 leased twice",
        },
      },
    ];
    expect(replayTo(trace, 3).snapshot().violation).toBeUndefined();
    const broken = {
      invariant: 1,
      message: "invariant 1 (…) violated: job j0 leased twice",
      at: 13_601,
      jobs: ["j0"],
      kinds: ["k0"],
      actors: [],
    };
    expect(replayTo(trace, 4).snapshot().violation).toEqual(broken);
    const model = replayTo(trace, 3);
    model.takeDiff();
    model.apply(13_601, trace[3]!.event);
    expect(model.takeDiff()?.violation).toEqual(broken);
    expect(describeEvent(trace[3]!.event)).toBe("invariant 1 (…) violated: job j0 leased twice");
    const lost = {
      type: "actor" as const,
      id: "connection:sim:4",
      machine: "connection",
      label: "inproc-4",
      states: ["connection.closed"],
      status: "done" as const,
    };
    expect(describeEvent(lost)).toBe("inproc-4: closed");
    expect(describeEvent({ ...lost, closed: "1006: connection reset by peer" })).toBe(
      "inproc-4: closed (1006: connection reset by peer)",
    );
  });

  it("names the jobs, kinds and actors a broken invariant's message names, each as a whole", () => {
    const model = new DashboardModel();
    model.apply(0, graph(12, 2));
    const worker = (n: number, link: number) => ({
      type: "actor" as const,
      id: `connection:sim:${link}`,
      machine: "connection",
      label: `inproc-${n} (connection sim:${link})`,
      states: ["connection.registered.busy"],
      status: "active" as const,
    });
    for (const [n, link] of [
      [1, 1],
      [10, 2],
      [1, 12],
      [3, 3],
    ] as const) {
      model.apply(1, worker(n, link));
    }
    model.apply(2, {
      type: "violation",
      invariant: 3,
      message:
        "invariant 3 (…) violated: job j1 counts 1 failed attempts (workers lost while running it: inproc-1); connection sim:3 still holds j11",
    });
    const { violation } = model.snapshot();
    // j1 and j11, not j10 (whose id starts j1); inproc-1's two connections and sim:3, not inproc-10's.
    expect(violation?.jobs).toEqual(["j1", "j11"]);
    expect(violation?.kinds).toEqual(["k1"]);
    expect(violation?.actors).toEqual([
      "connection:sim:1",
      "connection:sim:12",
      "connection:sim:3",
    ]);
  });

  it("gives a busy actor its job's label (kind and input), from the graph, or its kind by kind", () => {
    const model = new DashboardModel();
    model.apply(0, {
      type: "graph",
      jobs: [{ id: "j1", kind: "fetch", label: 'fetch "https://x"', deps: [], state: "ready" }],
    });
    const actor = { type: "actor" as const, id: "c1", machine: "connection", label: "w1" };
    model.apply(1, {
      ...actor,
      states: ["connection.registered.busy"],
      status: "active",
      job: "j1",
    });
    // Its input too: a table of three busy `render` workers said which only by ids.
    expect(model.snapshot().actors.c1).toMatchObject({ job: "j1", jobLabel: 'fetch "https://x"' });
    // A job the graph does not hold (yet) gets no kind rather than a wrong one.
    model.apply(2, {
      ...actor,
      states: ["connection.registered.busy"],
      status: "active",
      job: "j9",
    });
    expect(model.snapshot().actors.c1?.jobLabel).toBeUndefined();
    // Drawn by kind, the model keeps no job's label: its kind.
    const byKind = new DashboardModel({ maxGraphJobs: 0 });
    byKind.apply(0, {
      type: "graph",
      jobs: [{ id: "j1", kind: "fetch", label: 'fetch "https://x"', deps: [], state: "ready" }],
    });
    byKind.apply(1, {
      ...actor,
      states: ["connection.registered.busy"],
      status: "active",
      job: "j1",
    });
    expect(byKind.snapshot().actors.c1).toMatchObject({ job: "j1", jobLabel: "fetch" });
  });

  it("keeps a bounded number of finished actors", () => {
    const model = new DashboardModel({ keepFinishedActors: 2 });
    for (let i = 0; i < 5; i++) {
      const actor = { type: "actor" as const, id: `c${i}`, machine: "connection", label: `w${i}` };
      model.apply(i, { ...actor, states: ["connection.registered"], status: "active" });
      model.apply(i, { ...actor, states: ["connection.closed"], status: "done" });
    }
    expect(Object.keys(model.snapshot().actors)).toEqual(["c3", "c4"]);
  });

  it("diffs rebuild exactly the model's state, and replay reaches any step (property)", () => {
    const step = fc.oneof(
      fc.record({
        type: fc.constant("job" as const),
        id: fc.integer({ min: 0, max: 12 }).map((i) => `j${i}`),
        kind: fc.constant("k"),
        state: fc.constantFrom(...STATES),
        cause: fc.constantFrom(...CAUSES),
      }),
      fc.record({
        type: fc.constant("actor" as const),
        id: fc.constantFrom("a1", "a2", "a3"),
        machine: fc.constant("connection"),
        label: fc.constant("w"),
        states: fc.constantFrom(["connection.registered"], ["connection.closed"]),
        status: fc.constantFrom("active" as const, "done" as const),
      }),
      fc.record({
        type: fc.constant("rank" as const),
        group: fc.constantFrom("g1", "g2"),
        rank: fc.integer({ min: 0, max: 3 }),
        phase: fc.constantFrom("loading", "ready", "exiting"),
      }),
    );
    const details = fc.check(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.array(fc.tuple(step, fc.boolean()), { maxLength: 60 }),
        (size, steps) => {
          const options = { keepFinishedActors: 1, maxGraphJobs: 8 };
          const model = new DashboardModel(options);
          const trace: { at: number; event: DashboardEvent }[] = [{ at: 0, event: graph(size) }];
          model.apply(0, trace[0]!.event);
          const page = model.snapshot();
          model.takeDiff();
          steps.forEach(([raw, flush], i) => {
            const { cause, ...rest } = raw as typeof raw & { cause?: FailureCause };
            const event = (cause ? { ...rest, cause } : rest) as DashboardEvent;
            trace.push({ at: (i + 1) * 100, event });
            model.apply((i + 1) * 100, event);
            if (flush) {
              const diff = model.takeDiff();
              if (diff) applyDiff(page, diff);
            }
          });
          const last = model.takeDiff();
          if (last) applyDiff(page, last);
          expect(page).toEqual(model.snapshot());
          expect(replayTo(trace, trace.length, options).snapshot()).toEqual(model.snapshot());
          const { counts, total } = model.snapshot();
          expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(total);
        },
      ),
      propertyParameters(propertyRuns(300)),
    );
    throwIfFailed(details, import.meta.url);
  });
});
