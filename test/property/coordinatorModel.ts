import fc from "fast-check";
import { type Actor, createActor } from "xstate";
import type { Backoff, PlannedJob, Resources } from "../../src/graph/job.ts";
import {
  type CoordinatorEmitted,
  type CoordinatorEvent,
  type CoordinatorInput,
  coordinatorMachine,
} from "../../src/machines/coordinator.ts";
import type {
  CoordinatorEffect,
  FailureCause,
  JobBoard,
  Outcome,
} from "../../src/machines/jobBoard.ts";
import type { PlantedBug } from "../../src/machines/plantedBugs.ts";
import { InvariantChecker } from "../../src/sim/invariants.ts";
import { propertyRuns as runsOf } from "../fixtures/propertyRun.ts";

/**
 * The coordinator's model-based property, shared by the property tests and the planted-bug
 * tests: random graphs and workers (`scenarios`), random interleavings of what workers, the
 * clock and the operator can do (`steps`, as `fc.commands`), the `Harness` that drives the
 * real coordinator actor on a simulated clock and checks the invariants after every step, and
 * a liveness phase that must bring every run to `done`.
 *
 * The harness's model is learned from the coordinator's effects, as a worker learns it: a
 * connection holds the job it was granted until it reports or is lost, waits after a LEASE
 * that got no answer, and is closed (WORKER_LOST) after `lease.expired` or
 * `connection.released`, as the runtime does.
 */

const KINDS = ["fetch", "parse", "train", "report"];
const REQUIREMENTS: Resources[] = [
  {},
  { cpus: 1 },
  { cpus: 2 },
  { gpus: 1 },
  { cpus: 1, memory: 4096 },
];
const OFFERS: Resources[] = [
  {},
  { cpus: 1 },
  { cpus: 2, memory: 2048 },
  { cpus: 4, gpus: 1, memory: 8192 },
  { cpus: 8, memory: 16384 },
];
const BACKOFFS: (Backoff | undefined)[] = [
  undefined,
  { initialMs: 0 },
  { initialMs: 100 },
  { initialMs: 1_000, factor: 3, maxMs: 5_000 },
];
/** Attempt timeouts: mostly none, some shorter than the clock's usual steps, some longer. */
const TIMEOUTS: (number | undefined)[] = [undefined, undefined, undefined, 500, 1_500, 30_000];
/** Longer than any backoff: in the liveness phase, one tick makes every pending retry due. */
const LIVENESS_TICK_MS = 60_000;
const FAILURE_CAUSES: readonly FailureCause[] = [
  "error",
  "skipped",
  "poison",
  "cycle",
  "unsatisfiable",
  "cancelled",
  "shutdown",
];

/** Failures that stop a run with `failFast`: a job's own, not a skip, cancel or shutdown. */
const STOPS_FAIL_FAST: readonly FailureCause[] = ["error", "poison", "cycle", "unsatisfiable"];

interface JobSpec {
  kind: number;
  requires: number;
  /** Distances back to earlier jobs (so the graph is a DAG). */
  deps: number[];
  retries: number;
  backoff: number;
  /** An index into TIMEOUTS. */
  timeout: number;
}

interface Scenario {
  jobs: JobSpec[];
  /** One entry per worker: an index into OFFERS. */
  workers: number[];
  throttle: { kind: number; limit: number } | undefined;
  maxLost: number;
  leaseTimeoutMs: number;
  /** Jobs whose value is already stored from an earlier run (indices, modulo the job count). */
  stored: number[];
  /**
   * Results go to a store: a completed job is `storing` until STORED (or STORE_FAILED); a
   * STORE_FULL between keeps it there and holds back every lease.
   */
  durable: boolean;
  /** The run stops at the first job that fails for good. */
  failFast: boolean;
}

/** An index into REQUIREMENTS: mostly jobs most workers can take, sometimes a GPU or memory. */
const requirement = fc.oneof(
  { weight: 3, arbitrary: fc.constant(0) },
  { weight: 3, arbitrary: fc.constant(1) },
  { weight: 2, arbitrary: fc.constant(2) },
  { weight: 1, arbitrary: fc.constantFrom(3, 4) },
);

const jobSpec: fc.Arbitrary<JobSpec> = fc.record({
  kind: fc.nat(KINDS.length - 1),
  requires: requirement,
  deps: fc.uniqueArray(fc.nat(199), { maxLength: 3 }),
  retries: fc.integer({ min: 0, max: 3 }),
  backoff: fc.nat(BACKOFFS.length - 1),
  timeout: fc.nat(TIMEOUTS.length - 1),
});

/**
 * Mostly small graphs, so that 1000 runs stay fast; one in six has up to 200 jobs. Every
 * branch starts at one job, so a failing graph shrinks down to the jobs that matter.
 */
const graphs = fc.oneof(
  { weight: 6, arbitrary: fc.array(jobSpec, { minLength: 1, maxLength: 10 }) },
  { weight: 3, arbitrary: fc.array(jobSpec, { minLength: 1, maxLength: 50, size: "max" }) },
  { weight: 2, arbitrary: fc.array(jobSpec, { minLength: 1, maxLength: 200, size: "max" }) },
);

const scenarios: fc.Arbitrary<Scenario> = fc.record({
  jobs: graphs,
  workers: fc.array(fc.nat(OFFERS.length - 1), { minLength: 1, maxLength: 16, size: "max" }),
  throttle: fc.option(
    fc.record({ kind: fc.nat(KINDS.length - 1), limit: fc.integer({ min: 1, max: 3 }) }),
    { nil: undefined },
  ),
  maxLost: fc.integer({ min: 1, max: 3 }),
  leaseTimeoutMs: fc.constantFrom(0, 1_000, 20_000),
  stored: fc.uniqueArray(fc.nat(199), { maxLength: 4 }),
  durable: fc.boolean(),
  failFast: fc.oneof(
    { weight: 3, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
});

/**
 * Virtual time as a real clock passes it: `advance` fires every timer due on the way, each at
 * its own time and in order, including timers those timers start. (XState's SimulatedClock
 * jumps to the end first and fires each pending timer once, so a periodic timer — the lease
 * sweep — would tick once per step however long the step.)
 */
class VirtualClock {
  private time = 0;
  private nextId = 0;
  private readonly timers = new Map<number, { due: number; fn: () => void }>();

  setTimeout(fn: () => void, ms: number): number {
    const id = this.nextId++;
    this.timers.set(id, { due: this.time + ms, fn });
    return id;
  }

  clearTimeout(id: number): void {
    this.timers.delete(id);
  }

  /** The virtual time. */
  get now(): number {
    return this.time;
  }

  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      let next: number | undefined;
      for (const [id, timer] of this.timers) {
        if (timer.due > end) continue;
        const best = next === undefined ? undefined : this.timers.get(next)!;
        if (best === undefined || timer.due < best.due) next = id;
      }
      if (next === undefined) break;
      const timer = this.timers.get(next)!;
      this.timers.delete(next);
      this.time = timer.due;
      timer.fn();
    }
    this.time = end;
  }
}

/** A connection as the harness knows it from what the coordinator told it. */
interface Conn {
  readonly id: string;
  readonly worker: string;
  readonly slot: number;
  holds?: string;
  waiting: boolean;
  /** Its lease expired or it was told to stop: the runtime closes it next. */
  closing: boolean;
}

/** A failure of liveness (invariant 6) or of the final verdict on the jobs. */
class LivenessFailure extends Error {
  override name = "LivenessFailure";
}

/** Drives one coordinator actor through one run; it is both the model and the real system. */
class Harness {
  private readonly clock = new VirtualClock();
  private readonly actor: Actor<typeof coordinatorMachine>;
  private readonly checker: InvariantChecker;
  private readonly offers: Resources[];
  /** Each worker's live connection, if it has one. */
  private readonly slots: (Conn | undefined)[];
  private readonly generations: number[];
  /** Leases that ended (reported or lost): material for late and duplicate results. */
  private readonly past: { conn: string; job: string }[] = [];
  /** Results the coordinator asked to store (`result.store`) that the store has not answered. */
  readonly storing: string[] = [];
  private added = 0;
  private runFinished = false;
  private readonly failFast: boolean;

  constructor(scenario: Scenario, plantedBugs: readonly PlantedBug[]) {
    this.failFast = scenario.failFast;
    this.offers = scenario.workers.map((w) => OFFERS[w]!);
    this.slots = scenario.workers.map(() => undefined);
    this.generations = scenario.workers.map(() => 0);
    const jobs = scenario.jobs.map((spec, i) =>
      this.plan(`j${i}`, spec, i, i === 0 ? [] : spec.deps.map((d) => `j${i - 1 - (d % i)}`)),
    );
    const input: CoordinatorInput = {
      jobs,
      maxLost: scenario.maxLost,
      leaseTimeoutMs: scenario.leaseTimeoutMs,
      stored: new Map(scenario.stored.map((i) => [`j${i % jobs.length}`, `stored ${i}`])),
      offers: this.offers,
      durable: scenario.durable,
      failFast: scenario.failFast,
      plantedBugs,
      ...(scenario.throttle && {
        throttle: { [KINDS[scenario.throttle.kind]!]: scenario.throttle.limit },
      }),
    };
    this.checker = new InvariantChecker({ ...input, now: () => this.clock.now });
    this.actor = createActor(coordinatorMachine, { input, clock: this.clock });
    this.actor.on("*", (effect) => this.learn(effect));
    this.actor.start();
    this.verify();
  }

  get board(): JobBoard {
    return this.actor.getSnapshot().context.board;
  }

  get slotCount(): number {
    return this.slots.length;
  }

  get connected(): Conn[] {
    return this.slots.filter((c) => c !== undefined);
  }

  get holders(): Conn[] {
    return this.connected.filter((c) => c.holds !== undefined);
  }

  get closing(): Conn[] {
    return this.connected.filter((c) => c.closing);
  }

  stop(): void {
    this.actor.stop();
  }

  /** The worker in `slot` asks for a job, connecting anew first if it has no connection. */
  lease(slot: number): void {
    const conn = this.slots[slot] ?? this.connect(slot);
    this.send({ type: "LEASE", conn: conn.id, worker: conn.worker, resources: this.offers[slot]! });
    if (conn.holds === undefined && !conn.closing) conn.waiting = true;
  }

  /** `conn`, which holds a job, reports its outcome; `needs` are resolved against the graph. */
  report(conn: Conn, outcome: OutcomeSpec): void {
    const job = conn.holds!;
    this.send({ type: "RESULT", conn: conn.id, job, outcome: this.outcome(job, outcome) });
    conn.holds = undefined;
    this.past.push({ conn: conn.id, job });
  }

  /** A RESULT the coordinator must drop, unless `late` happens to name a lease that still holds. */
  lateResult(late: LateSpec): void {
    const outcome: Outcome = late.failed
      ? { status: "failed", error: { message: "late failure" } }
      : { status: "completed", value: "late" };
    const stale = pick(this.past, late.n);
    const other = pick(this.connected, late.n);
    const notHeld = pick(
      [...this.board.jobs.keys()].filter((id) => id !== other?.holds),
      late.n,
    );
    if (late.mode === "stale" && stale) {
      this.send({ type: "RESULT", conn: stale.conn, job: stale.job, outcome });
    } else if (late.mode === "other" && other && notHeld) {
      this.send({ type: "RESULT", conn: other.id, job: notHeld, outcome });
    } else {
      this.send({ type: "RESULT", conn: `ghost${late.n}`, job: `ghost${late.n}`, outcome });
    }
  }

  /**
   * The connection is closed: WORKER_LOST (`goingAway`: the worker closed first with 1001, stopped on
   * purpose), and its worker has no connection until it leases again.
   */
  lose(conn: Conn, goingAway = false): void {
    this.send({
      type: "WORKER_LOST",
      conn: conn.id,
      ...(goingAway ? { code: 1001, reason: "stopped" } : { code: 1006, reason: "" }),
    });
    this.slots[conn.slot] = undefined;
    if (conn.holds !== undefined) this.past.push({ conn: conn.id, job: conn.holds });
  }

  /**
   * The store answers the `n`th pending write: durable (STORED), not (STORE_FAILED), or no
   * room on its disk (STORE_FULL), after which the write stays pending, as the runtime holds
   * the result and writes it again.
   */
  store(n: number, answer: StoreAnswer): void {
    const at = n % this.storing.length;
    const job = this.storing[at]!;
    if (answer !== "full") this.storing.splice(at, 1);
    this.send(storeEvent(job, answer, "disk broke"));
  }

  /** A store answer for a job the coordinator did not ask to store (or no longer waits for). */
  strayStore(n: number, answer: StoreAnswer): void {
    const job = pick([...this.board.jobs.keys()], n)!;
    if (this.storing.includes(job)) return;
    this.send(storeEvent(job, answer, "stray"));
  }

  heartbeat(conn: Conn): void {
    this.send({ type: "HEARTBEAT", conn: conn.id });
  }

  tick(ms: number): void {
    this.clock.advance(ms);
    this.verify();
    this.verifyCounts();
  }

  send(event: CoordinatorEvent): void {
    this.checker.sent(event);
    this.actor.send(event);
    this.verify();
  }

  /**
   * Liveness (invariant 6): every worker reconnects, leases and completes whatever it is
   * given, the clock moves on when all of them wait, until the coordinator is done; then
   * every job must be completed, or failed with a cause and a message.
   */
  runToEnd(): void {
    const bound = 5 * this.board.jobs.size + 6 * this.slots.length + 16;
    for (let step = 0; this.actor.getSnapshot().value !== "done"; step++) {
      if (step === bound) {
        throw new LivenessFailure(
          `the run is not done after ${bound} liveness steps: ${JSON.stringify(this.board)}`,
        );
      }
      this.progress();
    }
    if (!this.runFinished) {
      throw new LivenessFailure("the run is done but run.finished was never emitted");
    }
    this.verifyCounts();
    for (const [id, record] of this.board.jobs) {
      if (record.state === "completed") continue;
      if (record.state !== "failed") {
        throw new LivenessFailure(`job ${id} is still ${record.state} after the run is done`);
      }
      if (!FAILURE_CAUSES.includes(record.cause!) || !record.error?.message) {
        throw new LivenessFailure(
          `job ${id} failed without a cause and a message: ${record.cause}, ${JSON.stringify(record.error)}`,
        );
      }
    }
  }

  /** One liveness step: store a result, answer a lease, close, reconnect, lease, or let time pass. */
  private progress(): void {
    if (this.storing.length > 0) {
      this.store(0, "stored");
      return;
    }
    const holder = this.holders[0];
    const closing = this.closing[0];
    const free = this.slots.findIndex(
      (c) => c === undefined || (!c.waiting && c.holds === undefined),
    );
    if (holder) this.report(holder, { status: "completed" });
    else if (closing) this.lose(closing);
    else if (free >= 0) this.lease(free);
    else this.tick(LIVENESS_TICK_MS);
  }

  private connect(slot: number): Conn {
    const generation = this.generations[slot]!++;
    const conn: Conn = {
      id: `c${slot}.${generation}`,
      worker: `w${slot}.${generation}`,
      slot,
      waiting: false,
      closing: false,
    };
    this.slots[slot] = conn;
    return conn;
  }

  private conn(id: string): Conn | undefined {
    return this.connected.find((c) => c.id === id);
  }

  private learn(emitted: CoordinatorEmitted): void {
    this.checker.observe(emitted);
    if (emitted.type === "run.finished") this.runFinished = true;
    else for (const effect of emitted.effects) this.carryOut(effect);
  }

  private carryOut(effect: CoordinatorEffect): void {
    if (
      this.failFast &&
      effect.type === "job.changed" &&
      STOPS_FAIL_FAST.includes(effect.cause!) &&
      !this.board.cancelling &&
      !this.board.finished
    ) {
      throw new Error(`failFast: job ${effect.job} failed (${effect.cause}) and the run went on`);
    }
    switch (effect.type) {
      case "lease.granted": {
        const conn = this.conn(effect.conn);
        if (conn) {
          conn.holds = effect.job.id;
          conn.waiting = false;
        }
        break;
      }
      case "result.store":
        this.storing.push(effect.job);
        break;
      case "lease.expired":
      case "connection.released": {
        const conn = this.conn(effect.conn);
        if (conn) {
          conn.closing = true;
          conn.waiting = false;
        }
        break;
      }
    }
  }

  private verify(): void {
    const violation = this.checker.check(this.board);
    if (violation) throw violation;
    // The chart shows what the board decided: `running` never outlasts a cancel (failFast's own).
    if (this.board.cancelling && this.actor.getSnapshot().value === "running") {
      throw new Error("the board cancelled the run, yet the coordinator is still running");
    }
  }

  /** The board keeps its counts as jobs change (not by a walk); they must match a recount. */
  private verifyCounts(): void {
    const recount: Record<string, number> = {
      blocked: 0,
      ready: 0,
      running: 0,
      storing: 0,
      completed: 0,
      failed: 0,
    };
    for (const record of this.board.jobs.values()) recount[record.state]!++;
    const counts = this.board.counts();
    if (JSON.stringify(counts) !== JSON.stringify(recount)) {
      throw new Error(
        `board.counts() ${JSON.stringify(counts)} ≠ recount ${JSON.stringify(recount)}`,
      );
    }
  }

  private plan(id: string, spec: JobSpec, input: number, deps: string[]): PlannedJob {
    const backoff = BACKOFFS[spec.backoff];
    const timeoutMs = TIMEOUTS[spec.timeout];
    return {
      id,
      kind: KINDS[spec.kind]!,
      input,
      deps: [...new Set(deps)],
      requires: { ...REQUIREMENTS[spec.requires]! },
      retries: spec.retries,
      ...(backoff && { backoff }),
      ...(timeoutMs !== undefined && { timeoutMs }),
    };
  }

  private outcome(job: string, spec: OutcomeSpec): Outcome {
    if (spec.status === "completed") return { status: "completed", value: `${job} done` };
    if (spec.status === "failed") {
      const error = { message: `${job} broke` };
      return { status: "failed", error: spec.retryable ? error : { ...error, retryable: false } };
    }
    const known = [...this.board.jobs.keys()];
    return {
      status: "blocked",
      needs: spec.needs.map((need) => {
        if (need.link === "reuse") {
          const existing = this.board.jobs.get(pick(known, need.n)!)!;
          return { ...existing.job, deps: [...existing.job.deps] };
        }
        const deps = {
          none: [],
          existing: [pick(known, need.n)!],
          cycle: [job],
          dangling: [`nowhere${need.n}`],
        }[need.link];
        return this.plan(`n${this.added++}`, need, need.n, deps);
      }),
    };
  }
}

interface NeedSpec extends JobSpec {
  /**
   * none: no deps; existing: depends on a job on the board;
   * cycle: depends on the blocked job; dangling: depends on a job that is nowhere;
   * reuse: needs a job already on the board.
   */
  link: "none" | "existing" | "cycle" | "dangling" | "reuse";
  n: number;
}

type OutcomeSpec =
  | { status: "completed" }
  /** retryable false: the handler said another attempt cannot help (protocol 6). */
  | { status: "failed"; retryable: boolean }
  | { status: "blocked"; needs: NeedSpec[] };

interface LateSpec {
  /** stale: a lease that ended; other: a connection naming a job it does not hold; ghost: unknown ids. */
  mode: "stale" | "other" | "ghost";
  n: number;
  failed: boolean;
}

/** What the store says of a write: durable, failed, or no room on its disk. */
type StoreAnswer = "stored" | "failed" | "full";

const storeAnswer: fc.Arbitrary<StoreAnswer> = fc.oneof(
  { weight: 6, arbitrary: fc.constant("stored" as const) },
  { weight: 1, arbitrary: fc.constant("failed" as const) },
  { weight: 1, arbitrary: fc.constant("full" as const) },
);

function storeEvent(job: string, answer: StoreAnswer, message: string): CoordinatorEvent {
  if (answer === "stored") return { type: "STORED", job };
  if (answer === "full") return { type: "STORE_FULL", job };
  return { type: "STORE_FAILED", job, error: { name: "StoreError", message } };
}

function pick<T>(items: readonly T[], n: number): T | undefined {
  return items.length === 0 ? undefined : items[n % items.length];
}

type Step = fc.Command<Harness, Harness>;

/** A step that applies when `applies` holds; `toString` is what fast-check prints. */
class HarnessStep implements Step {
  constructor(
    private readonly label: string,
    private readonly applies: (h: Readonly<Harness>) => boolean,
    private readonly act: (h: Harness) => void,
  ) {}

  check(h: Readonly<Harness>): boolean {
    return this.applies(h);
  }

  run(_model: Harness, h: Harness): void {
    this.act(h);
  }

  toString(): string {
    return this.label;
  }
}

const always = () => true;

const needSpec: fc.Arbitrary<NeedSpec> = fc.record({
  kind: fc.nat(KINDS.length - 1),
  requires: requirement,
  deps: fc.constant([]),
  retries: fc.integer({ min: 0, max: 3 }),
  backoff: fc.nat(BACKOFFS.length - 1),
  timeout: fc.nat(TIMEOUTS.length - 1),
  link: fc.constantFrom("none", "existing", "cycle", "dangling", "reuse"),
  n: fc.nat(1_000),
});

const outcomeSpec: fc.Arbitrary<OutcomeSpec> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ status: "completed" as const }) },
  { weight: 2, arbitrary: fc.constant({ status: "failed" as const, retryable: true }) },
  { weight: 1, arbitrary: fc.constant({ status: "failed" as const, retryable: false }) },
  {
    weight: 2,
    arbitrary: fc
      .array(needSpec, { minLength: 1, maxLength: 2 })
      .map((needs) => ({ status: "blocked" as const, needs })),
  },
);

/**
 * What can happen next, by weight; cancel and shutdown weigh `operatorWeight` each (1: rare,
 * so most runs end by themselves or in the liveness phase). `#n` picks among the current
 * candidates (workers, holders, connections) modulo their number, so a step stays meaningful
 * while shrinking.
 */
const steps = (operatorWeight: number): fc.Arbitrary<Step> =>
  fc.oneof(
    {
      weight: 480,
      arbitrary: fc
        .nat(15)
        .map(
          (n) => new HarnessStep(`lease(worker #${n})`, always, (h) => h.lease(n % h.slotCount)),
        ),
    },
    {
      weight: 480,
      arbitrary: fc.tuple(fc.nat(15), outcomeSpec).map(
        ([n, outcome]) =>
          new HarnessStep(
            `report(holder #${n}, ${JSON.stringify(outcome)})`,
            (h) => h.holders.length > 0,
            (h) => h.report(pick(h.holders, n)!, outcome),
          ),
      ),
    },
    {
      weight: 96,
      arbitrary: fc.tuple(fc.nat(15), fc.boolean()).map(
        ([n, goingAway]) =>
          new HarnessStep(
            `lose(connection #${n}${goingAway ? ", going away" : ""})`,
            (h) => h.connected.length > 0,
            (h) => h.lose(pick(h.connected, n)!, goingAway),
          ),
      ),
    },
    {
      weight: 96,
      arbitrary: fc.nat(15).map(
        (n) =>
          new HarnessStep(
            `close(closing #${n})`,
            (h) => h.closing.length > 0,
            (h) => h.lose(pick(h.closing, n)!),
          ),
      ),
    },
    {
      weight: 96,
      arbitrary: fc
        .record({
          mode: fc.constantFrom("stale" as const, "other" as const, "ghost" as const),
          n: fc.nat(1_000),
          failed: fc.boolean(),
        })
        .map(
          (late) =>
            new HarnessStep(`late(${JSON.stringify(late)})`, always, (h) => h.lateResult(late)),
        ),
    },
    {
      weight: 240,
      arbitrary: fc.tuple(fc.nat(15), storeAnswer).map(
        ([n, answer]) =>
          new HarnessStep(
            `store(write #${n}, ${answer})`,
            (h) => h.storing.length > 0,
            (h) => h.store(n, answer),
          ),
      ),
    },
    {
      weight: 16,
      arbitrary: fc
        .tuple(fc.nat(1_000), storeAnswer)
        .map(
          ([n, answer]) =>
            new HarnessStep(`strayStore(job #${n}, ${answer})`, always, (h) =>
              h.strayStore(n, answer),
            ),
        ),
    },
    {
      weight: 64,
      arbitrary: fc.nat(15).map(
        (n) =>
          new HarnessStep(
            `heartbeat(connection #${n})`,
            (h) => h.connected.length > 0,
            (h) => h.heartbeat(pick(h.connected, n)!),
          ),
      ),
    },
    {
      weight: 128,
      arbitrary: fc
        .oneof(fc.integer({ min: 1, max: 2_000 }), fc.constantFrom(1_000, 20_000, 60_000))
        .map((ms) => new HarnessStep(`tick(${ms} ms)`, always, (h) => h.tick(ms))),
    },
    {
      weight: operatorWeight,
      arbitrary: fc.constant(
        new HarnessStep("cancel", always, (h) =>
          h.send({ type: "CANCEL", reason: "cancelled by the test" }),
        ),
      ),
    },
    {
      weight: operatorWeight,
      arbitrary: fc.constant(
        new HarnessStep("shutdown", always, (h) =>
          h.send({ type: "SHUTDOWN", reason: "shut down by the test" }),
        ),
      ),
    },
  );

/** Every step kind, drawn with fast-check's command shrinker; replayable with `replayPath`. */
const interleavings = (replayPath: string | undefined, operatorWeight: number) =>
  fc.commands([steps(operatorWeight)], {
    maxCommands: 600,
    size: "max",
    ...(replayPath && { replayPath }),
  });

/**
 * The property: for any scenario and interleaving, every step keeps invariants 1–5 and 16–18
 * (the checker's: dependencies first, failures only when due, timeouts and backoffs kept) and the
 * liveness phase finishes the run (6). `plantedBugs` are switched on in the coordinator;
 * `operatorWeight` (default 1) is how often cancel and shutdown come, relative to the other
 * steps.
 */
export function coordinatorProperty(
  plantedBugs: readonly PlantedBug[] = [],
  { operatorWeight = 1 }: { operatorWeight?: number } = {},
) {
  return fc.property(
    scenarios,
    interleavings(process.env.BATON_PROPERTY_REPLAY_PATH, operatorWeight),
    (scenario, commands) => {
      const harness = new Harness(scenario, plantedBugs);
      try {
        fc.modelRun(() => ({ model: harness, real: harness }), commands);
        harness.runToEnd();
      } finally {
        harness.stop();
      }
    },
  );
}

/** Runs per property: BATON_PROPERTY_RUNS, 1000 by default. */
export const propertyRuns = runsOf(1000);

/** A vitest timeout that grows with the runs (one run takes well under 10 ms here). */
export const propertyTimeoutMs = Math.max(60_000, 100 * propertyRuns);
