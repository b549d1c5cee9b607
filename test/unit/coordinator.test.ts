import { describe, expect, it } from "vitest";
import { createActor, SimulatedClock } from "xstate";
import type { Json, PlannedJob, Resources } from "../../src/graph/job.ts";
import {
  type CoordinatorEmitted,
  type CoordinatorEvent,
  coordinatorMachine,
} from "../../src/machines/coordinator.ts";
import {
  type CoordinatorEffect,
  type JobBoardOptions,
  type JobRecord,
  LEASE_SWEEPS,
  type Outcome,
} from "../../src/machines/jobBoard.ts";

/** One effect of a batch, or the end of the run. */
type Recorded = CoordinatorEffect | Extract<CoordinatorEmitted, { type: "run.finished" }>;
type Emitted<T extends Recorded["type"]> = Extract<Recorded, { type: T }>;

function planned(id: string, options: Partial<Omit<PlannedJob, "id">> = {}): PlannedJob {
  return { id, kind: "work", input: null, deps: [], requires: {}, retries: 3, ...options };
}

const CPU: Resources = { cpus: 4, memory: 4096 };
/** How a lost worker's connection ended: it broke (1006), it went silent, it left on purpose. */
const BROKE = { code: 1006, reason: "" };
const SILENT = { code: 4005, reason: "no heartbeat for 20000 ms", silent: true };
const LEFT = { code: 1001, reason: "worker stopping (SIGTERM)" };

/**
 * A coordinator on a simulated clock. Every effect is recorded in order, flattened out of its
 * batch; `batches` keeps the batches as emitted (one per event).
 */
function startCoordinator(jobs: PlannedJob[], options: JobBoardOptions = {}) {
  const clock = new SimulatedClock();
  const actor = createActor(coordinatorMachine, { input: { jobs, ...options }, clock });
  const effects: Recorded[] = [];
  const batches: CoordinatorEffect[][] = [];
  actor.on("effects", ({ effects: batch }) => {
    batches.push(batch);
    effects.push(...batch);
  });
  actor.on("run.finished", (event) => effects.push(event));
  actor.start();
  const board = () => actor.getSnapshot().context.board;
  const send = (event: CoordinatorEvent) => actor.send(event);
  return {
    actor,
    clock,
    effects,
    batches,
    board,
    send,
    state: () => actor.getSnapshot().value,
    record: (id: string): JobRecord => {
      const record = board().jobs.get(id);
      if (!record) throw new Error(`no job ${id}`);
      return record;
    },
    lease: (conn: string, resources: Resources = CPU, worker = `w-${conn}`) =>
      send({ type: "LEASE", conn, worker, resources }),
    complete: (conn: string, job: string, value: Json = null) =>
      send({ type: "RESULT", conn, job, outcome: { status: "completed", value } }),
    fail: (conn: string, job: string, message = "boom") =>
      send({ type: "RESULT", conn, job, outcome: { status: "failed", error: { message } } }),
    /** A blocked answer; `stored`: the needed jobs' results the runtime found in the store. */
    block: (conn: string, job: string, needs: PlannedJob[], stored?: Map<string, Json>) =>
      send({
        type: "RESULT",
        conn,
        job,
        outcome: { status: "blocked", needs, ...(stored && { stored }) },
      }),
    /** Effects of one type emitted since `from` (an index into `effects`). */
    of: <T extends Recorded["type"]>(type: T, from = 0): Emitted<T>[] =>
      effects.slice(from).filter((e): e is Emitted<T> => e.type === type),
    /** `conn → job` for every lease granted since `from`. */
    grants: (from = 0): string[] =>
      effects
        .slice(from)
        .filter((e): e is Emitted<"lease.granted"> => e.type === "lease.granted")
        .map((e) => `${e.conn} → ${e.job.id}`),
  };
}

describe("coordinator: leasing", () => {
  it("lease grants a ready job", () => {
    const c = startCoordinator([planned("a", { input: { n: 1 } })]);
    c.lease("c1");
    expect(c.of("lease.granted")).toEqual([
      {
        type: "lease.granted",
        conn: "c1",
        job: planned("a", { input: { n: 1 } }),
        deps: {},
        attempt: 1,
      },
    ]);
    expect(c.record("a")).toMatchObject({ state: "running", holder: "c1", attempts: 1 });
    expect(c.board().leases.get("c1")?.job.id).toBe("a");
    expect(c.state()).toBe("running");
  });

  it("a lease with nothing ready waits and is granted the moment a dependency completes (no polling)", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })]);
    c.lease("c1");
    c.lease("c2");
    expect(c.grants()).toEqual(["c1 → a"]);
    expect([...c.board().waiting.keys()]).toEqual(["c2"]);
    const mark = c.effects.length;
    c.complete("c1", "a", "A");
    expect(c.grants(mark)).toEqual(["c2 → b"]);
    expect(c.of("lease.granted", mark)[0]!.deps).toEqual({ a: "A" });
    expect(c.board().waiting.size).toBe(0);
  });

  it("a grant's deps, keyed by job ids, are an object with no prototype (a dictionary, not a hidden class for each id)", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })]);
    c.lease("c1");
    c.complete("c1", "a", "A");
    c.lease("c1");
    const [granted] = c.of("lease.granted").slice(1);
    expect(Object.getPrototypeOf(granted!.deps)).toBeNull();
    expect(JSON.stringify(granted!.deps)).toBe('{"a":"A"}');
  });

  it("resource matching: a gpu job only goes to a gpu worker; a cpu-only waiter stays waiting", () => {
    const c = startCoordinator([
      planned("a"),
      planned("g", { deps: ["a"], requires: { gpus: 1 } }),
    ]);
    c.lease("c1", { cpus: 4 });
    c.lease("c2", { cpus: 4 });
    c.complete("c1", "a");
    c.lease("c1", { cpus: 4 });
    expect(c.grants()).toEqual(["c1 → a"]);
    expect(c.record("g").state).toBe("ready");
    expect([...c.board().waiting.keys()]).toEqual(["c2", "c1"]);
    c.lease("c3", { cpus: 1, gpus: 2 });
    expect(c.grants()).toEqual(["c1 → a", "c3 → g"]);
    expect([...c.board().waiting.keys()]).toEqual(["c2", "c1"]);
  });

  it("resource matching: cpus and memory must both be offered", () => {
    const c = startCoordinator([
      planned("big", { requires: { cpus: 8 } }),
      planned("mem", { requires: { cpus: 1, memory: 8192 } }),
    ]);
    c.lease("small", { cpus: 2, memory: 16_384 });
    c.lease("nomem", { cpus: 16 });
    c.lease("tiny", { cpus: 1, memory: 1024 });
    expect(c.grants()).toEqual(["small → mem", "nomem → big"]);
    expect([...c.board().waiting.keys()]).toEqual(["tiny"]);
  });

  it("per-kind throttle: a second train job is not leased while one runs, and is leased right after", () => {
    const c = startCoordinator(
      [
        planned("t1", { kind: "train" }),
        planned("t2", { kind: "train" }),
        planned("e", { kind: "eval" }),
      ],
      { throttle: { train: 1 } },
    );
    c.lease("c1");
    c.lease("c2");
    c.lease("c3");
    expect(c.grants()).toEqual(["c1 → t1", "c2 → e"]);
    expect(c.record("t2").state).toBe("ready");
    expect([...c.board().waiting.keys()]).toEqual(["c3"]);
    const mark = c.effects.length;
    c.complete("c1", "t1");
    expect(c.grants(mark)).toEqual(["c3 → t2"]);
  });

  it("a connection that already holds a job gets no second one", () => {
    const c = startCoordinator([planned("a"), planned("b")]);
    c.lease("c1");
    c.lease("c1");
    expect(c.grants()).toEqual(["c1 → a"]);
    expect(c.record("b").state).toBe("ready");
    expect(c.board().waiting.size).toBe(0);
  });

  it("ready jobs are leased first in first out; a retried job queues behind those already ready", () => {
    const c = startCoordinator([planned("x"), planned("y"), planned("z")]);
    c.lease("c1");
    c.fail("c1", "x");
    c.lease("c1");
    c.lease("c2");
    c.lease("c3");
    expect(c.grants()).toEqual(["c1 → x", "c1 → y", "c2 → z", "c3 → x"]);
  });

  it("a job requeued by WORKER_LOST queues behind the jobs already ready", () => {
    const c = startCoordinator([planned("x"), planned("y")]);
    c.lease("c1");
    c.send({ type: "WORKER_LOST", conn: "c1", ...BROKE });
    c.lease("c2");
    c.lease("c3");
    expect(c.grants()).toEqual(["c1 → x", "c2 → y", "c3 → x"]);
  });

  it("the effects of one event come as one batch, in order", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })]);
    c.lease("c1");
    c.lease("c2");
    c.complete("c1", "a", "A");
    expect(c.batches.at(-1)).toEqual([
      { type: "job.changed", job: "a", kind: "work", state: "completed" },
      { type: "job.changed", job: "b", kind: "work", state: "ready" },
      {
        type: "lease.granted",
        conn: "c2",
        job: expect.objectContaining({ id: "b" }),
        deps: { a: "A" },
        attempt: 1,
      },
      { type: "job.changed", job: "b", kind: "work", state: "running" },
    ]);
    // c2's LEASE changed nothing (it waits): its batch is empty.
    expect(c.batches.map((batch) => batch.length)).toEqual([2, 0, 4]);
  });

  it("an event is one XState action: the board's decision and its emit (XState's cost a job)", () => {
    const actions: string[] = [];
    const actor = createActor(coordinatorMachine, {
      input: { jobs: [planned("a"), planned("b"), planned("c")] },
      inspect: (event) => {
        if (event.type === "@xstate.action") actions.push(event.action.type);
      },
    }).start();
    // c2's lease keeps the lease sweep's timer running through c1's result and next lease.
    actor.send({ type: "LEASE", conn: "c1", worker: "w1", resources: CPU });
    actor.send({ type: "LEASE", conn: "c2", worker: "w2", resources: CPU });
    actions.length = 0;
    actor.send({
      type: "RESULT",
      conn: "c1",
      job: "a",
      outcome: { status: "completed", value: 1 },
    });
    actor.send({ type: "LEASE", conn: "c1", worker: "w1", resources: CPU });
    expect(actions).toEqual(["xstate.emit", "xstate.emit"]);
    actor.stop();
  });

  it("a lease sweep starts the next one in its own step: one microstep a sweep (XState's cost a ping cycle)", () => {
    const clock = new SimulatedClock();
    let microsteps = 0;
    const actor = createActor(coordinatorMachine, {
      input: { jobs: [planned("a")], leaseTimeoutMs: 1000 },
      clock,
      inspect: (event) => {
        if (event.type === "@xstate.microstep") microsteps++;
      },
    }).start();
    actor.send({ type: "LEASE", conn: "c1", worker: "w1", resources: CPU });
    const sweepMs = 1000 / LEASE_SWEEPS;
    for (let i = 0; i < 5; i++) {
      microsteps = 0;
      clock.increment(sweepMs);
      expect(microsteps).toBe(1);
      actor.send({ type: "HEARTBEAT", conn: "c1" });
    }
    // Each sweep started the next: without heartbeats, the lease now expires on time.
    const expired: CoordinatorEffect[] = [];
    actor.on("effects", ({ effects }) => {
      expired.push(...effects.filter((e) => e.type === "lease.expired"));
    });
    for (let i = 0; i < LEASE_SWEEPS; i++) clock.increment(sweepMs);
    expect(expired).toEqual([]);
    clock.increment(sweepMs);
    expect(expired).toEqual([{ type: "lease.expired", conn: "c1", job: "a", attempt: 1 }]);
    actor.stop();
  });

  it("a connection lost while waiting is forgotten: no grant to it later", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })]);
    c.lease("c1");
    c.lease("c2");
    c.send({ type: "WORKER_LOST", conn: "c2", ...BROKE });
    expect(c.board().waiting.size).toBe(0);
    c.complete("c1", "a");
    expect(c.grants()).toEqual(["c1 → a"]);
    expect(c.record("b").state).toBe("ready");
    c.lease("c3");
    expect(c.grants()).toEqual(["c1 → a", "c3 → b"]);
  });
});

describe("coordinator: results", () => {
  it("RESULT completed unblocks dependents once all their dependencies completed", () => {
    const c = startCoordinator([
      planned("a"),
      planned("b", { deps: ["a"] }),
      planned("c", { deps: ["a"] }),
      planned("d", { deps: ["b", "c"] }),
    ]);
    c.lease("c1");
    c.complete("c1", "a", 1);
    expect(c.record("a")).toMatchObject({ state: "completed", value: 1 });
    expect(c.record("b").state).toBe("ready");
    expect(c.record("c").state).toBe("ready");
    expect(c.record("d").state).toBe("blocked");
    c.lease("c1");
    c.complete("c1", "b", 2);
    expect(c.record("d").state).toBe("blocked");
    c.lease("c1");
    c.complete("c1", "c", 3);
    expect(c.record("d").state).toBe("ready");
    const mark = c.effects.length;
    c.lease("c1");
    expect(c.of("lease.granted", mark)[0]).toMatchObject({ conn: "c1", deps: { b: 2, c: 3 } });
  });

  it("RESULT failed retries up to `retries`, then is terminal and its dependents are skipped transitively", () => {
    const c = startCoordinator([
      planned("a", { retries: 2 }),
      planned("b", { deps: ["a"] }),
      planned("c", { deps: ["b"] }),
    ]);
    for (let attempt = 1; attempt <= 3; attempt++) {
      c.lease("c1");
      expect(c.record("a").state).toBe("running");
      c.fail("c1", "a", `boom ${attempt}`);
    }
    expect(c.of("lease.granted").map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(c.record("a")).toMatchObject({
      state: "failed",
      cause: "error",
      failures: 3,
      attempts: 3,
      error: { message: "boom 3" },
    });
    expect(c.record("b")).toMatchObject({ state: "failed", cause: "skipped" });
    expect(c.record("b").error!.message).toContain("dependency a (work) failed: boom 3");
    expect(c.record("c")).toMatchObject({ state: "failed", cause: "skipped" });
    expect(c.record("c").error!.message).toBe(
      "skipped because dependency b (work) was skipped, after job a (work) failed: boom 3",
    );
    expect(c.of("job.changed").filter((e) => e.state === "failed")).toEqual([
      { type: "job.changed", job: "a", kind: "work", state: "failed", cause: "error" },
      { type: "job.changed", job: "b", kind: "work", state: "failed", cause: "skipped" },
      { type: "job.changed", job: "c", kind: "work", state: "failed", cause: "skipped" },
    ]);
    expect(c.state()).toBe("done");
  });

  it("a failed job with the default of 3 retries runs at most 4 times", () => {
    const c = startCoordinator([planned("a")]);
    for (let attempt = 1; attempt <= 4; attempt++) {
      expect(c.record("a").state).toBe("ready");
      c.lease("c1");
      c.fail("c1", "a");
    }
    expect(c.record("a")).toMatchObject({ state: "failed", attempts: 4, failures: 4 });
    c.lease("c1");
    expect(c.of("lease.granted")).toHaveLength(4);
  });

  it("a failure the handler calls not retryable is terminal at once, whatever `retries` says", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })]);
    c.lease("c1");
    c.send({
      type: "RESULT",
      conn: "c1",
      job: "a",
      outcome: { status: "failed", error: { message: "bad input", retryable: false } },
    });
    expect(c.record("a")).toMatchObject({
      state: "failed",
      cause: "error",
      attempts: 1,
      failures: 1,
      error: { message: "bad input", retryable: false },
    });
    expect(c.record("b")).toMatchObject({ state: "failed", cause: "skipped" });
    expect(c.of("lease.granted")).toHaveLength(1);
    expect(c.state()).toBe("done");
  });

  it("backoff: RETRY_DUE comes after the delay and the job is not leasable before", () => {
    const c = startCoordinator([planned("a", { backoff: { initialMs: 1000, factor: 3 } })]);
    c.lease("c1");
    c.fail("c1", "a");
    expect(c.record("a")).toMatchObject({ state: "blocked", retryPending: true });
    c.lease("c1");
    expect([...c.board().waiting.keys()]).toEqual(["c1"]);
    expect(c.state()).toBe("running");
    c.clock.increment(999);
    expect(c.grants()).toEqual(["c1 → a"]);
    c.clock.increment(1);
    expect(c.grants()).toEqual(["c1 → a", "c1 → a"]);
    expect(c.of("lease.granted")[1]!.attempt).toBe(2);
    c.fail("c1", "a");
    c.lease("c1");
    c.clock.increment(2999);
    expect(c.grants()).toHaveLength(2);
    c.clock.increment(1);
    expect(c.grants()).toHaveLength(3);
  });

  it("backoff is capped at maxMs", () => {
    const c = startCoordinator([
      planned("a", { retries: 5, backoff: { initialMs: 100, factor: 10, maxMs: 500 } }),
    ]);
    c.lease("c1");
    c.fail("c1", "a");
    c.clock.increment(100);
    c.lease("c1");
    c.fail("c1", "a");
    c.lease("c1");
    c.clock.increment(499);
    expect(c.grants()).toHaveLength(2);
    c.clock.increment(1);
    expect(c.grants()).toHaveLength(3);
  });

  it("RESULT blocked with needs adds the needed jobs; the blocked job runs again after them with their results in deps", () => {
    const c = startCoordinator([planned("p", { kind: "parent" })]);
    c.lease("c1");
    c.block("c1", "p", [planned("n1", { kind: "need" }), planned("n2", { kind: "need" })]);
    expect(c.record("p").state).toBe("blocked");
    expect(c.record("n1").state).toBe("ready");
    expect(c.record("n2").state).toBe("ready");
    expect(c.record("p").job.deps).toEqual(["n1", "n2"]);
    c.lease("c1");
    c.lease("c2");
    expect(c.grants()).toEqual(["c1 → p", "c1 → n1", "c2 → n2"]);
    c.complete("c1", "n1", "one");
    expect(c.record("p").state).toBe("blocked");
    c.complete("c2", "n2", "two");
    expect(c.record("p").state).toBe("ready");
    const mark = c.effects.length;
    c.lease("c1");
    expect(c.of("lease.granted", mark)).toEqual([
      {
        type: "lease.granted",
        conn: "c1",
        job: expect.objectContaining({ id: "p" }),
        deps: { n1: "one", n2: "two" },
        attempt: 2,
      },
    ]);
    expect(c.record("p").failures).toBe(0);
  });

  it("RESULT blocked with stored results starts those needed jobs completed (cached) and runs only the rest", () => {
    const c = startCoordinator([planned("p", { kind: "parent" })]);
    c.lease("c1");
    c.block(
      "c1",
      "p",
      [planned("n1", { kind: "need" }), planned("n2", { kind: "need" })],
      new Map([["n1", "one"]]),
    );
    expect(c.record("n1")).toMatchObject({ state: "completed", value: "one", cached: true });
    expect(c.record("n2").state).toBe("ready");
    c.lease("c1");
    c.complete("c1", "n2", "two");
    const mark = c.effects.length;
    c.lease("c1");
    expect(c.of("lease.granted", mark)[0]).toMatchObject({ deps: { n1: "one", n2: "two" } });
    expect(c.grants()).toEqual(["c1 → p", "c1 → n2", "c1 → p"]);
  });

  it("a needed job whose dependency is stored too starts completed, never ready on the way (the simulation saw it complete from ready)", () => {
    const c = startCoordinator([planned("p", { kind: "parent" })]);
    c.lease("c1");
    const mark = c.effects.length;
    c.block(
      "c1",
      "p",
      [planned("n0"), planned("n1", { deps: ["n0"] }), planned("n2", { deps: ["n1"] })],
      new Map<string, Json>([
        ["n0", 0],
        ["n1", 1],
      ]),
    );
    const changes = c.of("job.changed", mark).map((e) => `${e.job} ${e.state}`);
    expect(changes).toEqual(["n0 completed", "n1 completed", "n2 ready", "p blocked"]);
    expect(c.record("n1")).toMatchObject({ state: "completed", value: 1, cached: true });
    c.lease("c1");
    expect(c.grants()).toEqual(["c1 → p", "c1 → n2"]);
  });

  it("RESULT blocked on a job that already completed makes the job ready again at once", () => {
    const c = startCoordinator([planned("a"), planned("p")]);
    c.lease("c1");
    c.complete("c1", "a", "A");
    c.lease("c1");
    c.block("c1", "p", [planned("a")]);
    expect(c.record("p").state).toBe("ready");
    const mark = c.effects.length;
    c.lease("c1");
    expect(c.of("lease.granted", mark)[0]).toMatchObject({ deps: { a: "A" }, attempt: 2 });
  });

  it("a skip at the end of a long chain names the failed job and the start of its error, not every skip before it", () => {
    const depth = 2_000;
    const chain = [planned("j0", { retries: 0 })];
    for (let i = 1; i <= depth; i++) chain.push(planned(`j${i}`, { deps: [`j${i - 1}`] }));
    const c = startCoordinator(chain);
    c.lease("c1");
    c.fail("c1", "j0", `boom ${"x".repeat(5_000)}`);
    const last = c.record(`j${depth}`);
    expect(last).toMatchObject({ state: "failed", cause: "skipped" });
    expect(last.error!.message).toBe(
      `skipped because dependency j${depth - 1} (work) was skipped, after job j0 (work) failed: boom ${"x".repeat(995)}… (4005 more characters in job j0's error)`,
    );
    expect(c.record("j1").error!.message).toMatch(
      /^skipped because dependency j0 \(work\) failed: boom x+… /,
    );
    expect(c.state()).toBe("done");
  });

  it("lazily needed jobs that close a cycle fail the blocked job with cause cycle; dependents are skipped", () => {
    const c = startCoordinator([planned("p", { kind: "parent" }), planned("q", { deps: ["p"] })]);
    c.lease("c1");
    c.block("c1", "p", [planned("n", { kind: "need", deps: ["p"] })]);
    const p = c.record("p");
    expect(p).toMatchObject({ state: "failed", cause: "cycle", error: { name: "GraphCycle" } });
    expect(p.error!.message).toContain("parent(p) → need(n) → parent(p)");
    expect(c.record("n")).toMatchObject({ state: "failed", cause: "skipped" });
    expect(c.record("q")).toMatchObject({ state: "failed", cause: "skipped" });
    expect(c.record("q").error!.message).toContain("dependency p (parent) failed");
    expect(c.state()).toBe("done");
  });

  it("a needed job that runs after its needer names the cycle through it, though the needs carry the needer too", () => {
    // ctx.need sends the needed job's whole plan, its own dependencies (here the needer) first.
    const c = startCoordinator([planned("p", { kind: "parent" })]);
    c.lease("c1");
    c.block("c1", "p", [
      planned("p", { kind: "parent" }),
      planned("n", { kind: "need", deps: ["p"] }),
    ]);
    expect(c.record("p").error!.message).toBe(
      "job p (parent) needs jobs that depend on it: parent(p) → need(n) → parent(p). Break the cycle in the job module.",
    );
  });

  it("a job that needs itself names the one-step cycle", () => {
    const c = startCoordinator([planned("p", { kind: "parent" })]);
    c.lease("c1");
    c.block("c1", "p", [planned("p", { kind: "parent" })]);
    expect(c.record("p").error!.message).toContain(
      "needs jobs that depend on it: parent(p) → parent(p).",
    );
  });

  it("an unsatisfiable job added lazily (offers given) fails with cause unsatisfiable, naming the pool's way out as planGraph does", () => {
    const c = startCoordinator([planned("p")], {
      offers: [{ cpus: 4, memory: 4096 }],
      offerMore: (enough) => `offer more, such as ${JSON.stringify(enough)}`,
    });
    c.lease("c1");
    c.block("c1", "p", [planned("g", { kind: "gpu", requires: { gpus: 1 } })]);
    const g = c.record("g");
    expect(g).toMatchObject({ state: "failed", cause: "unsatisfiable" });
    expect(g.error!.message).toBe(
      "No configured worker can take this job:\n" +
        "  job g (gpu) requires gpus 1\n" +
        "The workers offer:\n" +
        "  cpus 4, gpus 0, memory 4096 MiB\n" +
        'Lower what the job requires, or offer more, such as {"cpus":4,"gpus":1,"memory":4096} ' +
        "(a resource a worker does not declare counts as 0).",
    );
    expect(c.record("p")).toMatchObject({ state: "failed", cause: "skipped" });
    expect(c.state()).toBe("done");
  });
});

describe("coordinator: dropped results", () => {
  function runningA() {
    const c = startCoordinator([planned("a"), planned("b")]);
    c.lease("c1");
    return c;
  }

  it("a late result after WORKER_LOST is dropped and counted", () => {
    const c = runningA();
    c.send({ type: "WORKER_LOST", conn: "c1", ...BROKE });
    const mark = c.effects.length;
    c.complete("c1", "a", "late");
    expect(c.of("result.dropped", mark)).toEqual([
      { type: "result.dropped", conn: "c1", job: "a", reason: "not-held" },
    ]);
    expect(c.board().dropped).toEqual({ "not-held": 1, "unknown-job": 0, finished: 0 });
    expect(c.record("a")).toMatchObject({ state: "ready", value: undefined });
    expect(c.effects).toHaveLength(mark + 1);
  });

  it("a duplicate result is dropped and counted", () => {
    const c = runningA();
    c.complete("c1", "a", "first");
    const mark = c.effects.length;
    c.complete("c1", "a", "second");
    expect(c.of("result.dropped", mark)).toEqual([
      { type: "result.dropped", conn: "c1", job: "a", reason: "finished" },
    ]);
    expect(c.board().dropped).toEqual({ "not-held": 0, "unknown-job": 0, finished: 1 });
    expect(c.record("a")).toMatchObject({ state: "completed", value: "first" });
    expect(c.effects).toHaveLength(mark + 1);
  });

  it("a result for an unknown job is dropped and counted", () => {
    const c = runningA();
    const mark = c.effects.length;
    c.complete("c1", "nope");
    expect(c.of("result.dropped", mark)).toEqual([
      { type: "result.dropped", conn: "c1", job: "nope", reason: "unknown-job" },
    ]);
    expect(c.board().dropped).toEqual({ "not-held": 0, "unknown-job": 1, finished: 0 });
    expect(c.board().jobs.has("nope")).toBe(false);
    expect(c.record("a")).toMatchObject({ state: "running", holder: "c1" });
  });

  it("a result from a connection that does not hold the job is dropped and counted", () => {
    const c = runningA();
    c.lease("c2");
    const mark = c.effects.length;
    c.fail("c2", "a");
    expect(c.of("result.dropped", mark)).toEqual([
      { type: "result.dropped", conn: "c2", job: "a", reason: "not-held" },
    ]);
    expect(c.board().dropped["not-held"]).toBe(1);
    expect(c.record("a")).toMatchObject({ state: "running", holder: "c1", failures: 0 });
    expect(c.record("b")).toMatchObject({ state: "running", holder: "c2" });
    expect(c.effects).toHaveLength(mark + 1);
  });
});

describe("coordinator: lost workers", () => {
  it("WORKER_LOST requeues without counting a failure; attempts increments on the next lease", () => {
    const c = startCoordinator([planned("a")]);
    c.lease("c1", CPU, "w1");
    c.lease("c2", CPU, "w2");
    const mark = c.effects.length;
    c.send({ type: "WORKER_LOST", conn: "c1", ...BROKE });
    expect(c.of("job.changed", mark)[0]).toMatchObject({ job: "a", state: "ready" });
    expect(c.grants(mark)).toEqual(["c2 → a"]);
    expect(c.of("lease.granted", mark)[0]!.attempt).toBe(2);
    expect(c.record("a")).toMatchObject({
      state: "running",
      holder: "c2",
      failures: 0,
      attempts: 2,
      lostWorkers: ["w1"],
    });
    expect(c.board().leases.has("c1")).toBe(false);
  });

  it("jobs that lost no worker share one frozen empty list; the first loss gives the job its own", () => {
    const c = startCoordinator([planned("a"), planned("b")]);
    expect(c.record("a").lostWorkers).toBe(c.record("b").lostWorkers);
    expect(Object.isFrozen(c.record("b").lostWorkers)).toBe(true);
    c.lease("c1", CPU, "w1");
    c.send({ type: "WORKER_LOST", conn: "c1", ...BROKE });
    expect(c.record("a")).toMatchObject({ lostWorkers: ["w1"], lostWhy: [BROKE] });
    expect(Object.isFrozen(c.record("a").lostWorkers)).toBe(false);
    expect(c.record("b")).toMatchObject({ lostWorkers: [], lostWhy: [] });
  });

  it("poison: a job whose workers are lost maxLost times fails with cause poison, naming them", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })], { maxLost: 3 });
    for (const worker of ["w1", "w2", "w3"]) {
      expect(c.record("a").state).toBe("ready");
      c.lease(`c-${worker}`, CPU, worker);
      c.send({ type: "WORKER_LOST", conn: `c-${worker}`, ...BROKE });
    }
    const a = c.record("a");
    expect(a).toMatchObject({ state: "failed", cause: "poison", failures: 0, attempts: 3 });
    expect(a.error!.message).toBe(
      "job a (work) was running on 3 workers that were lost (lost w1 (connection broke), w2 (connection broke), w3 (connection broke)); it is failed as poison so it cannot take down more workers. Look at those workers' logs for how they died.",
    );
    expect(c.record("b")).toMatchObject({ state: "failed", cause: "skipped" });
    expect(c.state()).toBe("done");
  });

  it("poison: says how many of the lost workers went silent, and what to do about it", () => {
    const poisoned = (silent: boolean[]) => {
      const c = startCoordinator([planned("a")], { maxLost: 3 });
      silent.forEach((quiet, i) => {
        c.lease(`c${i}`, CPU, `w${i}`);
        c.send({ type: "WORKER_LOST", conn: `c${i}`, ...(quiet ? SILENT : BROKE) });
      });
      return c.record("a").error!.message;
    };
    const advice =
      "stopped answering the coordinator's pings while running it, as a worker does while a handler computes synchronously for longer than the coordinator waits: run the workers with --handler-thread (handlerThread in localPool and slurmPool), or make the handler await between pieces of its work.";
    expect(poisoned([true, true, true])).toMatch(
      new RegExp(`how they died\\. All 3 ${advice.replace(/[.()]/g, "\\$&")}$`),
    );
    expect(poisoned([false, true, false])).toContain(`how they died. 1 of the 3 ${advice}`);
    expect(poisoned([false, false, false])).toMatch(/how they died\.$/);
    expect(poisoned([false, true, false])).toContain(
      "(lost w0 (connection broke), w1 (lease expired), w2 (connection broke));",
    );
  });

  it("a worker that goes away on purpose releases its job without counting towards poison", () => {
    const c = startCoordinator([planned("a")], { maxLost: 1 });
    for (const i of [1, 2, 3]) {
      c.lease(`c${i}`, CPU, `w${i}`);
      c.send({ type: "WORKER_LOST", conn: `c${i}`, ...LEFT });
      expect(c.record("a")).toMatchObject({ state: "ready", failures: 0, workersLeft: i });
    }
    c.lease("c4", CPU, "w4");
    c.send({ type: "WORKER_LOST", conn: "c4", ...BROKE });
    const a = c.record("a");
    expect(a).toMatchObject({ state: "failed", cause: "poison", attempts: 4 });
    expect(a.lostWorkers).toEqual(["w1", "w2", "w3", "w4"]);
    expect(a.lostWhy).toEqual([LEFT, LEFT, LEFT, BROKE]);
    expect(a.error!.message).toContain(
      "was running on 1 worker that was lost and 3 that went away on purpose (lost w4 (connection broke); went away w1, w2, w3);",
    );
  });

  it("maxLost defaults to 3", () => {
    const c = startCoordinator([planned("a")]);
    c.lease("c1");
    c.send({ type: "WORKER_LOST", conn: "c1", ...BROKE });
    c.lease("c2");
    c.send({ type: "WORKER_LOST", conn: "c2", ...BROKE });
    expect(c.record("a").state).toBe("ready");
    c.lease("c3");
    c.send({ type: "WORKER_LOST", conn: "c3", ...BROKE });
    expect(c.record("a")).toMatchObject({ state: "failed", cause: "poison" });
  });
});

/** Moves the simulated clock on 10 ms at a time, as a real clock would, firing every sweep. */
function advance(c: ReturnType<typeof startCoordinator>, ms: number): void {
  for (let t = 0; t < ms; t += 10) c.clock.increment(10);
}

describe("coordinator: attempt timeouts", () => {
  const TIMEOUT = "job a (work) ran longer than its timeout of 500 ms (attempt 1)";

  /** Job `a` with a 500 ms timeout, leased to c1 and run past it. */
  function timedOut(options: Partial<PlannedJob> = {}, board: JobBoardOptions = {}) {
    const c = startCoordinator([planned("a", { timeoutMs: 500, ...options })], board);
    c.lease("c1");
    c.clock.increment(499);
    expect(c.of("lease.cancelled")).toEqual([]);
    c.clock.increment(1);
    return c;
  }

  it("past its timeout the holder is told to stop, and keeps the lease until it answers", () => {
    const c = timedOut();
    const [cancelled] = c.of("lease.cancelled");
    expect(cancelled).toMatchObject({ conn: "c1", job: "a", timedOut: true });
    expect(cancelled!.reason).toContain(TIMEOUT);
    expect(c.record("a")).toMatchObject({ state: "running", holder: "c1", timedOut: true });
    c.lease("c2");
    expect(c.grants()).toEqual(["c1 → a"]);
  });

  it("the holder's failed answer is the timed-out attempt's failure; the job is retried", () => {
    const c = timedOut();
    c.lease("c2");
    c.fail("c1", "a", "AbortError: aborted");
    expect(c.record("a")).toMatchObject({ failures: 1, lostWorkers: [], timedOut: false });
    expect(c.record("a").error).toMatchObject({ name: "JobTimeout" });
    expect(c.record("a").error!.message).toContain(TIMEOUT);
    expect(c.grants()).toEqual(["c1 → a", "c2 → a"]);
  });

  it("a completed answer after the timeout still counts: the value is there", () => {
    const c = timedOut();
    c.complete("c1", "a", 42);
    expect(c.record("a")).toMatchObject({ state: "completed", value: 42, failures: 0 });
  });

  it("losing the timed-out holder is a failed attempt, not a lost worker", () => {
    const c = timedOut({}, { maxLost: 1 });
    c.send({ type: "WORKER_LOST", conn: "c1", ...BROKE });
    expect(c.record("a")).toMatchObject({ state: "ready", failures: 1, lostWorkers: [] });
  });

  it("heartbeats no longer renew a timed-out lease: it expires, saying why", () => {
    const c = timedOut({}, { leaseTimeoutMs: 1000 });
    for (let i = 0; i < 20; i++) {
      c.send({ type: "HEARTBEAT", conn: "c1" });
      advance(c, 100);
    }
    expect(c.of("lease.expired")).toEqual([
      { type: "lease.expired", conn: "c1", job: "a", attempt: 1, timedOut: true },
    ]);
  });

  it("an answer in time cancels the timer; each attempt has its own", () => {
    const c = startCoordinator([planned("a", { timeoutMs: 500 })]);
    c.lease("c1");
    advance(c, 400);
    c.fail("c1", "a");
    c.lease("c1");
    advance(c, 400);
    expect(c.of("lease.cancelled")).toEqual([]);
    advance(c, 100);
    expect(c.of("lease.cancelled")).toHaveLength(1);
    expect(c.of("lease.cancelled")[0]!.reason).toContain("(attempt 2)");
    c.send({ type: "ATTEMPT_TIMEOUT", job: "a", attempt: 1 });
    expect(c.of("lease.cancelled")).toHaveLength(1);
  });

  it("timeouts use up the retries: then the job fails and its dependents are skipped", () => {
    const c = startCoordinator([
      planned("a", { timeoutMs: 500, retries: 1 }),
      planned("b", { deps: ["a"] }),
    ]);
    for (const attempt of [1, 2]) {
      c.lease("c1");
      advance(c, 500);
      expect(c.of("lease.cancelled")).toHaveLength(attempt);
      c.fail("c1", "a", "aborted");
    }
    expect(c.record("a")).toMatchObject({ state: "failed", cause: "error", failures: 2 });
    expect(c.record("a").error!.name).toBe("JobTimeout");
    expect(c.record("b")).toMatchObject({ state: "failed", cause: "skipped" });
  });

  it("a timed-out job answering after CANCEL is cancelled", () => {
    const c = timedOut();
    c.send({ type: "CANCEL", reason: "user pressed ^C" });
    c.fail("c1", "a", "aborted");
    expect(c.record("a")).toMatchObject({ state: "failed", cause: "cancelled", failures: 0 });
  });

  it("SHUTDOWN cancels a running attempt's timer", () => {
    const c = startCoordinator([planned("a", { timeoutMs: 500 })]);
    c.lease("c1");
    c.send({ type: "SHUTDOWN", reason: "done" });
    advance(c, 1000);
    expect(c.of("lease.cancelled")).toEqual([
      { type: "lease.cancelled", conn: "c1", job: "a", reason: "done" },
    ]);
  });
});

describe("coordinator: lease deadline", () => {
  it(`no HEARTBEAT for leaseTimeoutMs → lease.expired at the next sweep (1/${LEASE_SWEEPS} of the timeout later at most)`, () => {
    const c = startCoordinator([planned("a")], { leaseTimeoutMs: 1000 });
    c.lease("c1");
    advance(c, 1000);
    expect(c.of("lease.expired")).toEqual([]);
    advance(c, 1000 / LEASE_SWEEPS);
    expect(c.of("lease.expired")).toEqual([
      { type: "lease.expired", conn: "c1", job: "a", attempt: 1 },
    ]);
    expect(c.record("a")).toMatchObject({ state: "running", holder: "c1" });
  });

  it("a lease expires once; a HEARTBEAT after that starts a new deadline", () => {
    const c = startCoordinator([planned("a")], { leaseTimeoutMs: 1000 });
    c.lease("c1");
    advance(c, 5000);
    expect(c.of("lease.expired")).toHaveLength(1);
    c.send({ type: "HEARTBEAT", conn: "c1" });
    advance(c, 1000);
    expect(c.of("lease.expired")).toHaveLength(1);
    advance(c, 1000 / LEASE_SWEEPS);
    expect(c.of("lease.expired")).toHaveLength(2);
  });

  it("a HEARTBEAT before the deadline pushes it back", () => {
    const c = startCoordinator([planned("a")], { leaseTimeoutMs: 1000 });
    c.lease("c1");
    advance(c, 600);
    c.send({ type: "HEARTBEAT", conn: "c1" });
    advance(c, 1000);
    expect(c.of("lease.expired")).toEqual([]);
    advance(c, 1000 / LEASE_SWEEPS);
    expect(c.of("lease.expired")).toEqual([
      { type: "lease.expired", conn: "c1", job: "a", attempt: 1 },
    ]);
  });

  it("each lease has its own deadline", () => {
    const c = startCoordinator([planned("a"), planned("b")], { leaseTimeoutMs: 1000 });
    c.lease("c1");
    advance(c, 500);
    c.lease("c2");
    advance(c, 600);
    expect(c.of("lease.expired")).toEqual([
      { type: "lease.expired", conn: "c1", job: "a", attempt: 1 },
    ]);
    advance(c, 500);
    expect(c.of("lease.expired")).toEqual([
      { type: "lease.expired", conn: "c1", job: "a", attempt: 1 },
      { type: "lease.expired", conn: "c2", job: "b", attempt: 1 },
    ]);
  });

  it("no sweep is pending once no lease can expire", () => {
    const c = startCoordinator([planned("a"), planned("b")], { leaseTimeoutMs: 1000 });
    c.lease("c1");
    expect(Object.keys(c.actor.system.getSnapshot()._scheduledEvents)).toHaveLength(1);
    c.complete("c1", "a");
    advance(c, 200);
    expect(Object.keys(c.actor.system.getSnapshot()._scheduledEvents)).toHaveLength(0);
  });

  it("a lease that ended with a result does not expire", () => {
    const c = startCoordinator([planned("a"), planned("b")], { leaseTimeoutMs: 1000 });
    c.lease("c1");
    c.complete("c1", "a");
    c.clock.increment(5000);
    expect(c.of("lease.expired")).toEqual([]);
  });

  it("SHUTDOWN stops the sweep: no lease expires once the run is finished", () => {
    const c = startCoordinator([planned("a")], { leaseTimeoutMs: 1000 });
    c.lease("c1");
    c.send({ type: "SHUTDOWN" });
    expect(Object.keys(c.actor.system.getSnapshot()._scheduledEvents)).toHaveLength(0);
    advance(c, 5000);
    expect(c.of("lease.expired")).toEqual([]);
  });

  it("leaseTimeoutMs 0 never expires", () => {
    const c = startCoordinator([planned("a")], { leaseTimeoutMs: 0 });
    c.lease("c1");
    c.clock.increment(10_000_000);
    expect(c.of("lease.expired")).toEqual([]);
  });
});

describe("coordinator: end of the run", () => {
  it("a graph of zero jobs is done at once", () => {
    const c = startCoordinator([]);
    expect(c.state()).toBe("done");
    expect(c.effects).toEqual([
      {
        type: "run.finished",
        counts: { blocked: 0, ready: 0, running: 0, storing: 0, completed: 0, failed: 0 },
      },
    ]);
  });

  it("stored results start completed and their dependents ready", () => {
    const c = startCoordinator([planned("b", { deps: ["a"] }), planned("a")], {
      stored: new Map<string, Json>([["a", 42]]),
    });
    expect(c.record("a")).toMatchObject({ state: "completed", cached: true, value: 42 });
    expect(c.record("b").state).toBe("ready");
    c.lease("c1");
    expect(c.of("lease.granted")).toEqual([
      {
        type: "lease.granted",
        conn: "c1",
        job: expect.objectContaining({ id: "b" }),
        deps: { a: 42 },
        attempt: 1,
      },
    ]);
    expect(c.record("a").attempts).toBe(0);
  });

  it("a graph fully stored is done at once", () => {
    const c = startCoordinator([planned("a")], { stored: new Map<string, Json>([["a", 1]]) });
    expect(c.state()).toBe("done");
    expect(c.of("run.finished")[0]!.counts.completed).toBe(1);
  });

  it("the run finishes (done) when everything is terminal", () => {
    const c = startCoordinator([planned("a"), planned("b", { retries: 0 })]);
    c.lease("c1");
    c.lease("c2");
    c.complete("c1", "a", "A");
    expect(c.state()).toBe("running");
    expect(c.of("run.finished")).toEqual([]);
    c.fail("c2", "b");
    expect(c.state()).toBe("done");
    expect(c.of("run.finished")).toEqual([
      {
        type: "run.finished",
        counts: { blocked: 0, ready: 0, running: 0, storing: 0, completed: 1, failed: 1 },
      },
    ]);
  });

  it("LEASE after the run is done → connection.released", () => {
    const c = startCoordinator([planned("a")]);
    c.lease("c1");
    c.complete("c1", "a");
    expect(c.state()).toBe("done");
    const mark = c.effects.length;
    c.lease("c1");
    c.lease("c2");
    expect(c.effects.slice(mark)).toEqual([
      { type: "connection.released", conn: "c1" },
      { type: "connection.released", conn: "c2" },
    ]);
  });

  it("a cancelled run tells the connections it releases why", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })]);
    c.lease("c1");
    c.lease("c2");
    const mark = c.effects.length;
    c.send({ type: "CANCEL", reason: "interrupted (Ctrl-C)" });
    c.complete("c1", "a");
    c.lease("c1");
    expect(c.of("connection.released", mark)).toEqual([
      { type: "connection.released", conn: "c2", reason: "interrupted (Ctrl-C)" },
      { type: "connection.released", conn: "c1", reason: "interrupted (Ctrl-C)" },
    ]);
  });

  it("SHUTDOWN releases every waiter, ends running jobs as shutdown and cancels their leases", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })]);
    c.lease("c1");
    c.lease("c2");
    c.lease("c3");
    const mark = c.effects.length;
    c.send({ type: "SHUTDOWN", reason: "operator said so" });
    expect(c.state()).toBe("done");
    expect(c.of("lease.cancelled", mark)).toEqual([
      { type: "lease.cancelled", conn: "c1", job: "a", reason: "operator said so" },
    ]);
    expect(c.of("connection.released", mark)).toEqual([
      { type: "connection.released", conn: "c2", reason: "operator said so" },
      { type: "connection.released", conn: "c3", reason: "operator said so" },
    ]);
    expect(c.record("a")).toMatchObject({
      state: "failed",
      cause: "shutdown",
      error: { message: "operator said so" },
    });
    expect(c.record("b")).toMatchObject({ state: "failed", cause: "shutdown" });
    expect(c.board().waiting.size).toBe(0);
    expect(c.effects.at(-1)).toEqual({
      type: "run.finished",
      counts: { blocked: 0, ready: 0, running: 0, storing: 0, completed: 0, failed: 2 },
    });
    // A connection that asks later is told the same.
    c.lease("c4");
    expect(c.of("connection.released", mark).at(-1)).toEqual({
      type: "connection.released",
      conn: "c4",
      reason: "operator said so",
    });
    expect(c.of("run.finished")).toHaveLength(1);
  });

  it("a result after SHUTDOWN does not change the verdict, is counted as dropped and grants nothing", () => {
    const c = startCoordinator([planned("a"), planned("b")]);
    c.lease("c1");
    c.send({ type: "SHUTDOWN" });
    const mark = c.effects.length;
    c.complete("c1", "a", "late");
    c.lease("c1");
    expect(c.record("a")).toMatchObject({
      state: "failed",
      cause: "shutdown",
      error: { message: "the run was shut down" },
    });
    expect(c.board().dropped.finished).toBe(1);
    expect(c.effects.slice(mark)).toEqual([
      { type: "result.dropped", conn: "c1", job: "a", reason: "finished" },
      { type: "connection.released", conn: "c1", reason: "the run was shut down" },
    ]);
  });
});

describe("coordinator: cancel", () => {
  it("CANCEL fails jobs not started as cancelled and tells running ones to stop", () => {
    const c = startCoordinator([
      planned("a"),
      planned("b"),
      planned("r"),
      planned("d", { deps: ["a"] }),
      planned("e", { deps: ["r"] }),
    ]);
    c.lease("c1");
    c.lease("c2");
    const mark = c.effects.length;
    c.send({ type: "CANCEL", reason: "user pressed ^C" });
    expect(c.state()).toBe("cancelling");
    expect(c.of("lease.cancelled", mark)).toEqual([
      { type: "lease.cancelled", conn: "c1", job: "a", reason: "user pressed ^C" },
      { type: "lease.cancelled", conn: "c2", job: "b", reason: "user pressed ^C" },
    ]);
    for (const id of ["r", "d", "e"]) {
      expect(c.record(id)).toMatchObject({
        state: "failed",
        cause: "cancelled",
        error: { name: "Cancelled", message: "user pressed ^C" },
      });
    }
    expect(c.record("a").state).toBe("running");
    expect(c.record("b").state).toBe("running");
  });

  it("after CANCEL a completed result still completes, a failed one does not retry, then done", () => {
    const c = startCoordinator([planned("a"), planned("b"), planned("r")]);
    c.lease("c1");
    c.lease("c2");
    c.lease("c3");
    c.send({ type: "WORKER_LOST", conn: "c3", ...BROKE });
    c.lease("c3");
    c.send({ type: "CANCEL" });
    expect(c.of("connection.released")).toEqual([]);
    c.complete("c1", "a", "A");
    expect(c.record("a")).toMatchObject({ state: "completed", value: "A" });
    expect(c.state()).toBe("cancelling");
    c.fail("c2", "b");
    expect(c.record("b")).toMatchObject({ state: "failed", cause: "cancelled", attempts: 1 });
    c.lease("c1");
    expect(c.of("connection.released")).toEqual([
      { type: "connection.released", conn: "c1", reason: "the run was cancelled" },
    ]);
    expect(c.grants()).toEqual(["c1 → a", "c2 → b", "c3 → r", "c3 → r"]);
    c.send({ type: "WORKER_LOST", conn: "c3", ...BROKE });
    expect(c.record("r")).toMatchObject({ state: "failed", cause: "cancelled", attempts: 2 });
    expect(c.state()).toBe("done");
    expect(c.of("run.finished")[0]!.counts).toEqual({
      blocked: 0,
      ready: 0,
      running: 0,
      storing: 0,
      completed: 1,
      failed: 2,
    });
  });

  it("CANCEL releases waiting connections and, with nothing running, is done at once", () => {
    const c = startCoordinator([planned("a"), planned("g", { requires: { gpus: 1 } })]);
    c.lease("c1", { cpus: 4 });
    c.lease("c2", { cpus: 4 });
    c.complete("c1", "a");
    const mark = c.effects.length;
    c.send({ type: "CANCEL" });
    expect(c.of("connection.released", mark)).toEqual([
      { type: "connection.released", conn: "c2", reason: "the run was cancelled" },
    ]);
    expect(c.record("g")).toMatchObject({ state: "failed", cause: "cancelled" });
    expect(c.state()).toBe("done");
  });

  it("CANCEL during a retry backoff cancels the job and its retry", () => {
    const c = startCoordinator([planned("a", { backoff: { initialMs: 1000 } })]);
    c.lease("c1");
    c.fail("c1", "a");
    c.send({ type: "CANCEL" });
    expect(c.record("a")).toMatchObject({
      state: "failed",
      cause: "cancelled",
      retryPending: false,
    });
    expect(c.state()).toBe("done");
    c.clock.increment(5000);
    expect(c.record("a").state).toBe("failed");
  });
});

describe("coordinator: failFast", () => {
  const graph = () => [
    planned("bad", { retries: 1 }),
    planned("child", { deps: ["bad"] }),
    planned("busy"),
    planned("later"),
  ];

  it("the first job that fails for good skips its dependents, then cancels the run, naming it", () => {
    const c = startCoordinator(graph(), { failFast: true });
    c.lease("c1");
    c.lease("c2");
    c.fail("c1", "bad", "first");
    // A failed attempt with a retry left does not stop the run.
    expect(c.state()).toBe("running");
    c.lease("c1");
    c.lease("c3");
    expect(c.grants()).toEqual(["c1 → bad", "c2 → busy", "c1 → later", "c3 → bad"]);
    const from = c.effects.length;
    c.fail("c3", "bad", "second");
    const reason =
      "the run stopped at its first failure (failFast, --fail-fast): job bad (work) failed";
    expect(c.effects.slice(from)).toEqual([
      { type: "job.changed", job: "bad", kind: "work", state: "failed", cause: "error" },
      { type: "job.changed", job: "child", kind: "work", state: "failed", cause: "skipped" },
      { type: "run.cancelled", reason },
      { type: "lease.cancelled", conn: "c2", job: "busy", reason },
      { type: "lease.cancelled", conn: "c1", job: "later", reason },
    ]);
    expect(c.record("child").error?.message).toContain("dependency bad (work) failed: second");
    expect(c.state()).toBe("cancelling");
    // The failure's batch, then the cancel's, both for the RESULT that failed it.
    expect(c.batches.length).toBeGreaterThanOrEqual(2);
    c.lease("c3");
    expect(c.of("connection.released", from)).toEqual([
      { type: "connection.released", conn: "c3", reason },
    ]);
    c.complete("c2", "busy", 1);
    c.fail("c1", "later", "aborted");
    expect(c.state()).toBe("done");
    expect(c.record("busy").state).toBe("completed");
    expect(c.record("later")).toMatchObject({ state: "failed", cause: "cancelled" });
  });

  it("without failFast the rest of the run goes on", () => {
    const c = startCoordinator(graph());
    c.lease("c1");
    c.fail("c1", "bad");
    c.lease("c1");
    c.fail("c1", "bad");
    expect(c.state()).toBe("running");
    expect(c.of("run.cancelled")).toEqual([]);
    c.lease("c1");
    expect(c.grants().at(-1)).toBe("c1 → busy");
  });

  it("a job that fails for good while the board is built (nothing can take it) cancels the run at start", () => {
    const c = startCoordinator([planned("gpu", { requires: { gpus: 1 } }), planned("cpu")], {
      failFast: true,
      offers: [CPU],
    });
    expect(c.state()).toBe("done");
    expect(c.record("gpu").cause).toBe("unsatisfiable");
    expect(c.record("cpu")).toMatchObject({ state: "failed", cause: "cancelled" });
    expect(c.of("run.cancelled")).toHaveLength(1);
  });

  it("a CANCEL before any failure is the run's only cancel: a later failure does not cancel again", () => {
    const c = startCoordinator(graph(), { failFast: true });
    c.lease("c1");
    c.send({ type: "CANCEL", reason: "by hand" });
    c.fail("c1", "bad");
    expect(c.of("run.cancelled")).toEqual([{ type: "run.cancelled", reason: "by hand" }]);
    expect(c.state()).toBe("done");
  });
});

describe("coordinator: outcomes carried through", () => {
  it.each([
    [{ status: "completed", value: { rows: 3 } }, "completed"],
    [{ status: "failed", error: { message: "x" } }, "ready"],
    [{ status: "blocked", needs: [] }, "ready"],
  ] as [Outcome, string][])("RESULT %o leaves the job %s", (outcome, state) => {
    const c = startCoordinator([planned("a")]);
    c.lease("c1");
    c.send({ type: "RESULT", conn: "c1", job: "a", outcome });
    expect(c.record("a").state).toBe(state);
    expect(c.record("a").failures).toBe(outcome.status === "failed" ? 1 : 0);
  });
});

describe("coordinator: results written to a store (durable)", () => {
  const durable = { durable: true };
  const stored = (job: string): CoordinatorEvent => ({ type: "STORED", job });
  const storeFailed = (job: string): CoordinatorEvent => ({
    type: "STORE_FAILED",
    job,
    error: { name: "StoreError", message: "the disk is full" },
  });
  const storeFull = (job: string): CoordinatorEvent => ({ type: "STORE_FULL", job });

  it("a completed result makes its job storing and asks for the write; the worker leases again at once", () => {
    const c = startCoordinator([planned("a"), planned("b")], durable);
    c.lease("c1");
    const mark = c.effects.length;
    c.complete("c1", "a", "A");
    expect(c.effects.slice(mark)).toEqual([
      { type: "result.store", job: "a", kind: "work", value: "A" },
      { type: "job.changed", job: "a", kind: "work", state: "storing" },
    ]);
    expect(c.record("a")).toMatchObject({ state: "storing", holder: undefined, value: "A" });
    expect(c.board().leases.size).toBe(0);
    c.lease("c1");
    expect(c.grants(mark)).toEqual(["c1 → b"]);
    expect(c.board().counts()).toMatchObject({ running: 1, storing: 1 });
  });

  it("STORED completes the job, and only then do its dependents become ready", () => {
    const c = startCoordinator([planned("a"), planned("b", { deps: ["a"] })], durable);
    c.lease("c1");
    c.complete("c1", "a", "A");
    c.lease("c1");
    expect(c.record("b").state).toBe("blocked");
    expect([...c.board().waiting.keys()]).toEqual(["c1"]);
    const mark = c.effects.length;
    c.send(stored("a"));
    expect(c.record("a").state).toBe("completed");
    expect(c.grants(mark)).toEqual(["c1 → b"]);
    expect(c.of("lease.granted", mark)[0]!.deps).toEqual({ a: "A" });
  });

  it("the run is not done while a result is being stored", () => {
    const c = startCoordinator([planned("a")], durable);
    c.lease("c1");
    c.complete("c1", "a");
    expect(c.state()).toBe("running");
    c.send(stored("a"));
    expect(c.state()).toBe("done");
    expect(c.of("run.finished")[0]!.counts).toMatchObject({ completed: 1, storing: 0 });
  });

  it("STORE_FAILED is a failed attempt: retried, and terminal once retries are spent", () => {
    const c = startCoordinator([planned("a", { retries: 1 })], durable);
    c.lease("c1");
    c.complete("c1", "a");
    c.send(storeFailed("a"));
    expect(c.record("a")).toMatchObject({ state: "ready", failures: 1, value: undefined });
    c.lease("c1");
    c.complete("c1", "a");
    c.send(storeFailed("a"));
    expect(c.record("a")).toMatchObject({
      state: "failed",
      cause: "error",
      failures: 2,
      error: { name: "StoreError", message: "the disk is full" },
    });
    expect(c.state()).toBe("done");
  });

  it("STORE_FULL spends no attempt: the job stays storing, no lease is granted until the store answers", () => {
    const c = startCoordinator([planned("a", { retries: 0 }), planned("b"), planned("c")], durable);
    c.lease("c1");
    c.lease("c2");
    c.complete("c1", "a", "A");
    const mark = c.effects.length;
    c.send(storeFull("a"));
    expect(c.effects.slice(mark)).toEqual([]);
    expect(c.record("a")).toMatchObject({ state: "storing", failures: 0, value: "A" });
    // b runs on c2 and is held too; c1 asks and waits, though c is ready.
    c.lease("c1");
    c.complete("c2", "b", "B");
    c.send(storeFull("b"));
    c.lease("c2");
    expect(c.grants(mark)).toEqual([]);
    expect([...c.board().waiting.keys()]).toEqual(["c1", "c2"]);
    expect(c.record("c").state).toBe("ready");
    // The held write of a goes through: room again, and the waiting connection gets c.
    c.send(stored("a"));
    expect(c.grants(mark)).toEqual(["c1 → c"]);
    expect(c.record("a")).toMatchObject({ state: "completed", failures: 0, attempts: 1 });
    c.send(stored("b"));
    c.complete("c1", "c");
    c.send(stored("c"));
    expect(c.state()).toBe("done");
  });

  it("a STORE_FAILED after STORE_FULL is a failed attempt and lets leases go again", () => {
    const c = startCoordinator([planned("a", { retries: 1 }), planned("b")], durable);
    c.lease("c1");
    c.complete("c1", "a");
    c.send(storeFull("a"));
    c.lease("c1");
    expect(c.grants()).toEqual(["c1 → a"]);
    c.send(storeFailed("a"));
    expect(c.record("a")).toMatchObject({ state: "ready", failures: 1 });
    expect(c.grants()).toEqual(["c1 → a", "c1 → b"]);
  });

  it("STORE_FULL for a job not being stored holds nothing back", () => {
    const c = startCoordinator([planned("a"), planned("b")], durable);
    c.lease("c1");
    c.send(storeFull("a"));
    c.send(storeFull("nope"));
    c.lease("c2");
    expect(c.grants()).toEqual(["c1 → a", "c2 → b"]);
  });

  it("CANCEL while the store is full: the held result still completes its job once written", () => {
    const c = startCoordinator([planned("a"), planned("b")], durable);
    c.lease("c1");
    c.complete("c1", "a");
    c.send(storeFull("a"));
    c.lease("c1");
    c.send({ type: "CANCEL", reason: "stop" });
    expect(c.of("connection.released").map((e) => e.conn)).toEqual(["c1"]);
    expect(c.record("b")).toMatchObject({ state: "failed", cause: "cancelled" });
    expect(c.state()).toBe("cancelling");
    c.send(stored("a"));
    expect(c.record("a")).toMatchObject({ state: "completed", failures: 0 });
    expect(c.state()).toBe("done");
  });

  it("SHUTDOWN while the store is full ends the held job as shut down, with no attempt spent", () => {
    const c = startCoordinator([planned("a")], durable);
    c.lease("c1");
    c.complete("c1", "a");
    c.send(storeFull("a"));
    c.send({ type: "SHUTDOWN", reason: "the result store is full" });
    expect(c.record("a")).toMatchObject({ state: "failed", cause: "shutdown", failures: 0 });
    expect(c.state()).toBe("done");
  });

  it("STORED or STORE_FAILED for a job that is not being stored changes nothing", () => {
    const c = startCoordinator([planned("a"), planned("b")], durable);
    c.lease("c1");
    const before = c.effects.length;
    c.send(stored("a"));
    c.send(storeFailed("a"));
    c.send(stored("nope"));
    expect(c.record("a")).toMatchObject({ state: "running", failures: 0 });
    c.complete("c1", "a");
    c.send(stored("a"));
    c.send(storeFailed("a"));
    expect(c.record("a")).toMatchObject({ state: "completed", failures: 0 });
    expect(c.of("job.changed", before).map((e) => `${e.job} ${e.state}`)).toEqual([
      "a storing",
      "a completed",
    ]);
  });

  it("after CANCEL a result being stored still completes its job, then the run is done", () => {
    const c = startCoordinator([planned("a"), planned("b")], durable);
    c.lease("c1");
    c.complete("c1", "a");
    c.send({ type: "CANCEL", reason: "stop" });
    expect(c.state()).toBe("cancelling");
    c.send(stored("a"));
    expect(c.record("a").state).toBe("completed");
    expect(c.record("b")).toMatchObject({ state: "failed", cause: "cancelled" });
    expect(c.state()).toBe("done");
  });

  it("a write that fails after CANCEL cancels the job instead of retrying it", () => {
    const c = startCoordinator([planned("a")], durable);
    c.lease("c1");
    c.complete("c1", "a");
    c.send({ type: "CANCEL", reason: "stop" });
    c.send(storeFailed("a"));
    expect(c.record("a")).toMatchObject({ state: "failed", cause: "cancelled", failures: 0 });
    expect(c.state()).toBe("done");
  });

  it("SHUTDOWN while a result is being stored fails its job as shut down; a later STORED is ignored", () => {
    const c = startCoordinator([planned("a")], durable);
    c.lease("c1");
    c.complete("c1", "a", "A");
    c.send({ type: "SHUTDOWN", reason: "the pool failed" });
    expect(c.record("a")).toMatchObject({ state: "failed", cause: "shutdown", value: undefined });
    c.send(stored("a"));
    expect(c.record("a").state).toBe("failed");
    expect(c.of("run.finished")[0]!.counts).toMatchObject({ storing: 0, failed: 1 });
  });

  it("a completed result after the attempt's timeout is stored and counts", () => {
    const c = startCoordinator([planned("a", { timeoutMs: 100 })], durable);
    c.lease("c1");
    c.clock.increment(100);
    expect(c.record("a").timedOut).toBe(true);
    c.complete("c1", "a", "late but right");
    expect(c.record("a").state).toBe("storing");
    c.send(stored("a"));
    expect(c.record("a")).toMatchObject({ state: "completed", value: "late but right" });
  });
});
