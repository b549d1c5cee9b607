/**
 * Model-based property of the coordinator's side of the wire: the real coordinator, the real
 * `CoordinatorServer` and its connection machines, and a result store whose writes and
 * lookups take virtual time, driven through hand-driven links by random interleavings of
 * what workers do (connect, hello, results — completed, failed, blocked on new or stored
 * jobs —, stray results, pongs, closing their side, hearing the server's close), of the
 * clock, and of the operator (cancel, shutdown). The coordinator property drives the board
 * with events; this one lets the connections and the server produce those events, with
 * their own timers (probes, lease expiries, store lookups that hold a connection's later
 * frames back) racing each other.
 *
 * Checked after every step:
 * - DESIGN §4 invariants 1–5 and SIM_INVARIANTS 16–18 on the coordinator (the simulation's
 *   `CoordinatorWatch`);
 * - a connection sends WORKER_LOST at most once;
 * - a worker is never sent a job while it holds one it has not answered;
 * - a worker is closed for an expired lease (4005) only when its lease went unrenewed for
 *   the lease timeout (no job frame and no pong for that long), and for silence (4005, no
 *   heartbeat) only while a ping it was sent is unanswered;
 * and at the end, liveness (invariant 6): workers that answer everything finish the run, with
 * every job completed or failed with a cause.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 1000, this property runs half of it). To replay a
 * failure, set the variables the failure message prints: BATON_PROPERTY_SEED,
 * BATON_PROPERTY_PATH and BATON_PROPERTY_REPLAY_PATH.
 */
import fc from "fast-check";
import pino from "pino";
import { describe, it } from "vitest";
import { type Actor, createActor } from "xstate";
import type { Json, PlannedJob } from "../../src/graph/job.ts";
import { type CoordinatorEvent, coordinatorMachine } from "../../src/machines/coordinator.ts";
import { CoordinatorServer } from "../../src/runtime/coordinatorServer.ts";
import type { Link, Listener } from "../../src/runtime/ports.ts";
import { STORE_FULL_WAIT_MS, writeResults } from "../../src/runtime/resultWriter.ts";
import { CoordinatorWatch } from "../../src/sim/coordinatorWatch.ts";
import { InvariantChecker } from "../../src/sim/invariants.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { workerProof } from "../../src/transport/auth.ts";
import { PROTOCOL } from "../../src/transport/protocolVersion.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

const SECRET = new Uint8Array(32).fill(7);
const HEARTBEAT_MS = 5_000;
const DEAD_AFTER_MS = 20_000;
const silent = pino({ level: "silent" });

interface Scenario {
  /** Per job: distances back to earlier jobs it runs after, and its retries. */
  jobs: { deps: number[]; retries: number }[];
  slots: number;
  leaseTimeoutMs: number;
  maxLost: number;
  /** Virtual time a store write and a store lookup take. */
  putMs: number;
  lookupMs: number;
  /** Every `failPutEvery`-th write fails (0: none does). */
  failPutEvery: number;
  /** Those writes fail for want of room (ENOSPC: held and written again), else with EIO. */
  diskFull: boolean;
}

const scenarios: fc.Arbitrary<Scenario> = fc.record({
  jobs: fc.array(
    fc.record({
      deps: fc.uniqueArray(fc.nat(5), { maxLength: 2 }),
      retries: fc.integer({ min: 0, max: 2 }),
    }),
    { minLength: 1, maxLength: 8 },
  ),
  slots: fc.integer({ min: 1, max: 4 }),
  // Some shorter than the first probe (5 s) or the probe deadline (20 s): the lease of a live
  // worker then expires, and its expiry races the worker's answer.
  leaseTimeoutMs: fc.constantFrom(3_000, 3_000, 8_000, 20_000),
  maxLost: fc.integer({ min: 1, max: 3 }),
  putMs: fc.constantFrom(0, 1, 500, 3_000),
  lookupMs: fc.constantFrom(0, 1, 700, 2_500, 2_500),
  failPutEvery: fc.constantFrom(0, 0, 3),
  diskFull: fc.boolean(),
});

/** Lets promise callbacks (store writes, lookups, the server's backlog) run. */
async function flush(): Promise<void> {
  for (let hop = 0; hop < 50; hop++) await undefined;
}

class BrokenRule extends Error {
  override name = "BrokenRule";
}

/** One worker's link as the worker sees it, driven by the harness. */
class Worker {
  readonly frames: ((text: string) => void)[] = [];
  readonly pongs: (() => void)[] = [];
  readonly closeHandlers: ((code: number, reason: string) => void)[] = [];
  /** The job it was sent and has not answered. */
  holds: { job: string; attempt: number } | undefined;
  nonce: string | undefined;
  helloSent = false;
  /** Time of the last ping not answered yet. */
  pingAt: number | undefined;
  /** Last time its lease was granted or could have been renewed (a pong). */
  renewedAt = 0;
  /** The server closed the link, with this code; the worker has not heard it yet. */
  serverClose: number | undefined;
  /** Its side of the link is closed: nothing more arrives from it. */
  gone = false;
  /** It was welcomed: the server registered it under its name. */
  welcomed = false;
  readonly link: Link;

  constructor(
    readonly id: string,
    /** Its worker name and process instance: a slot's are the same on each of its links. */
    readonly name: string,
    readonly instance: string,
    private readonly harness: Harness,
  ) {
    this.link = {
      id,
      remote: "property",
      bufferedAmount: 0,
      maxFrameBytes: Number.POSITIVE_INFINITY,
      send: (text) => this.received(JSON.parse(text) as Record<string, unknown>),
      close: (code, reason) => this.closedByServer(code, reason),
      ping: () => {
        this.pingAt ??= harness.clock.now();
      },
      onFrame: (handler) => this.frames.push(handler),
      onPong: (handler) => this.pongs.push(handler),
      onPing: () => {},
      onClose: (handler) => this.closeHandlers.push(handler),
      admit: () => {},
    };
  }

  arrive(frame: object): void {
    if (this.gone) return;
    for (const handler of this.frames) handler(JSON.stringify(frame));
  }

  hello(): void {
    if (this.nonce === undefined || this.gone) return;
    this.helloSent = true;
    this.arrive({
      type: "hello",
      protocol: [...PROTOCOL],
      worker: this.name,
      resources: {},
      codeHash: "code",
      proof: workerProof(SECRET, this.nonce, PROTOCOL, this.name),
      instance: this.instance,
    });
  }

  pong(): void {
    if (this.pingAt === undefined || this.gone) return;
    this.pingAt = undefined;
    this.renewedAt = this.harness.clock.now();
    for (const handler of this.pongs) handler();
  }

  /** Registered with the server, as far as the server knows: welcomed, and not closed. */
  get registered(): boolean {
    return this.welcomed && this.serverClose === undefined && !this.heardGone;
  }

  /** The server heard its link close. */
  private heardGone = false;

  /** Its side of the link vanishes unseen (half-open): the server still holds the connection. */
  vanish(): void {
    this.gone = true;
  }

  /** The link closes: from the worker's side (1006), or the worker hears the server's close. */
  close(): void {
    if (this.gone) return;
    this.gone = true;
    this.heardGone = true;
    const code = this.serverClose ?? 1006;
    for (const handler of this.closeHandlers) handler(code, "");
  }

  private received(frame: Record<string, unknown>): void {
    const now = this.harness.clock.now();
    if (frame.type === "challenge") this.nonce = frame.nonce as string;
    if (frame.type === "welcome") this.welcomed = true;
    if (frame.type !== "job") return;
    if (this.holds !== undefined) {
      this.harness.broke(
        `${this.id} was sent job ${frame.id} while it holds ${this.holds.job}, unanswered`,
      );
    }
    this.holds = { job: frame.id as string, attempt: frame.attempt as number };
    this.renewedAt = now;
  }

  private closedByServer(code: number, reason: string): void {
    const now = this.harness.clock.now();
    if (code === 4005 && reason.startsWith("lease of job")) {
      const unrenewed = now - this.renewedAt;
      if (unrenewed < this.harness.leaseTimeoutMs) {
        this.harness.broke(
          `${this.id} was closed at ${now} ms for an expired lease ("${reason}") though its lease was granted or renewed ${unrenewed} ms before, under the lease timeout of ${this.harness.leaseTimeoutMs} ms`,
        );
      }
    }
    if (code === 4005 && reason.startsWith("no heartbeat") && this.pingAt === undefined) {
      this.harness.broke(`${this.id} was closed at ${now} ms for silence with no ping unanswered`);
    }
    if (code === 4008) this.harness.replaced(this);
    this.serverClose ??= code;
  }
}

/** The coordinator, its server and the store, on one virtual clock. */
class Harness {
  readonly clock = new SimClock();
  readonly leaseTimeoutMs: number;
  private readonly coordinator: Actor<typeof coordinatorMachine>;
  private readonly server: CoordinatorServer;
  private readonly watch: CoordinatorWatch;
  /** The first invariant violation or broken rule; thrown by the next `verify`. */
  private violation: Error | undefined;
  private accept!: (link: Link) => void;
  /** Each slot's current worker. */
  readonly slots: (Worker | undefined)[];
  private readonly generations: number[];
  /** The result store: values written, and those an earlier run left. */
  private readonly store = new Map<string, Json>();
  private readonly lost = new Map<string, number>();
  private puts = 0;
  private fresh = 0;
  private twins = 0;
  /** Store lookups not answered yet: a connection's frames wait behind one. */
  private lookups = 0;

  get lookingUp(): boolean {
    return this.lookups > 0;
  }

  constructor(scenario: Scenario) {
    this.leaseTimeoutMs = scenario.leaseTimeoutMs;
    this.slots = Array.from({ length: scenario.slots }, () => undefined);
    this.generations = this.slots.map(() => 0);
    const jobs: PlannedJob[] = scenario.jobs.map((spec, i) => ({
      id: `j${i}`,
      kind: "work",
      input: i,
      deps: i === 0 ? [] : [...new Set(spec.deps.map((d) => `j${i - 1 - (d % i)}`))],
      requires: {},
      retries: spec.retries,
    }));
    const input = {
      jobs,
      durable: true,
      leaseTimeoutMs: scenario.leaseTimeoutMs,
      maxLost: scenario.maxLost,
    };
    this.coordinator = createActor(coordinatorMachine, { input, clock: this.clock });
    this.watch = new CoordinatorWatch(
      new InvariantChecker({ ...input, now: () => this.clock.now() }),
      (violation) => {
        this.violation ??= violation;
      },
      () => {},
    );
    this.watch.attach(this.coordinator);
    // One event can emit two batches (the one that ends the run, and the run's end): count it once.
    const heard = new WeakSet<CoordinatorEvent>();
    this.coordinator.on("effects", ({ event }) => {
      if (heard.has(event)) return;
      heard.add(event);
      if (event.type === "WORKER_LOST") {
        const times = (this.lost.get(event.conn) ?? 0) + 1;
        this.lost.set(event.conn, times);
        if (times > 1) this.broke(`${event.conn} sent WORKER_LOST ${times} times`);
      }
    });
    writeResults(
      this.coordinator,
      {
        dir: "store",
        put: (job, _kind, value) =>
          new Promise<void>((resolve, reject) => {
            const failing = scenario.failPutEvery > 0 && ++this.puts % scenario.failPutEvery === 0;
            this.clock.setTimeout(() => {
              if (failing) {
                const code = scenario.diskFull ? "ENOSPC" : "EIO";
                reject(Object.assign(new Error(`${code}: the disk says no`), { code }));
              } else {
                this.store.set(job, value);
                resolve();
              }
            }, scenario.putMs);
          }),
      },
      silent,
      {
        clock: this.clock,
        waitMs: STORE_FULL_WAIT_MS,
        said: () => {},
        // As the engine does: the run stops.
        giveUp: (error) => this.coordinator.send({ type: "SHUTDOWN", reason: error.message }),
      },
    );
    const listener: Listener = {
      address: "memory://property",
      onConnection: (handler) => {
        this.accept = handler;
      },
      close: async () => {},
    };
    this.server = new CoordinatorServer({
      listener,
      coordinator: this.coordinator,
      clock: this.clock,
      entropy: new SimEntropy(1),
      secret: SECRET,
      run: "r1",
      logger: silent,
      heartbeatMs: HEARTBEAT_MS,
      deadAfterMs: DEAD_AFTER_MS,
      lookup: (ids) => {
        this.lookups++;
        return new Promise((resolve) =>
          this.clock.setTimeout(() => {
            this.lookups--;
            const found = new Map<string, Json>();
            for (const id of ids) if (this.store.has(id)) found.set(id, this.store.get(id)!);
            resolve(found);
          }, scenario.lookupMs),
        );
      },
    });
    this.coordinator.start();
    this.verify();
  }

  get workers(): Worker[] {
    return this.slots.filter((w): w is Worker => w !== undefined && !w.gone);
  }

  get done(): boolean {
    return this.coordinator.getSnapshot().value === "done";
  }

  stop(): void {
    this.server.stop();
    this.coordinator.stop();
  }

  /** A worker connects in `slot` (if its last link is gone) and says hello unless `mute`. */
  connect(slot: number, mute: boolean): void {
    const current = this.slots[slot];
    if (current !== undefined && !current.gone) return;
    const worker = new Worker(
      `c${slot}.${this.generations[slot]!++}`,
      `w-${slot}`,
      `instance-${slot}`,
      this,
    );
    this.slots[slot] = worker;
    this.accept(worker.link);
    if (!mute) worker.hello();
  }

  /**
   * The worker of `slot` loses its link unseen (half-open) and connects again at once, as the
   * same process: its new connection replaces the old one, whose lease is released once.
   */
  reconnect(slot: number): void {
    const old = this.slots[slot];
    const wasRegistered = old?.registered === true;
    old?.vanish();
    this.connect(slot, false);
    if (!wasRegistered) return;
    if (old!.serverClose === undefined && !this.lookingUp) {
      this.broke(`${old!.id} was not replaced by ${this.slots[slot]!.id}, of the same worker`);
    }
  }

  /**
   * Another process connects under the name of `slot`'s worker, with an instance of its own:
   * refused (4010) while that worker is registered, taken otherwise; it then leaves.
   */
  twin(slot: number): void {
    const holder = this.slots[slot];
    const name = `w-${slot}`;
    const twin = new Worker(`twin${this.twins++}`, name, "another-process", this);
    this.accept(twin.link);
    const registered = holder?.registered === true;
    twin.hello();
    if (registered && twin.serverClose !== 4010) {
      this.broke(`${twin.id} was not refused under ${name}, which ${holder!.id} holds`);
    }
    if (!registered && twin.serverClose === 4010) {
      this.broke(`${twin.id} was refused under ${name}, which no connection holds`);
    }
    twin.close();
  }

  /**
   * `worker`'s connection was closed as replaced (4008): its WORKER_LOST was sent once, and
   * it holds no lease any more.
   */
  replaced(worker: Worker): void {
    if (this.lost.get(worker.id) !== 1) {
      this.broke(`${worker.id} was replaced, with ${this.lost.get(worker.id) ?? 0} WORKER_LOST`);
    }
    for (const record of this.board.jobs.values()) {
      if (record.holder === worker.id) {
        this.broke(`${worker.id} was replaced but still holds job ${record.job.id}`);
      }
    }
  }

  /** The worker answers the job it holds. */
  answer(worker: Worker, outcome: OutcomeSpec): void {
    const held = worker.holds;
    if (held === undefined) return;
    worker.holds = undefined;
    worker.arrive({ type: "result", job: held.job, ...this.frameOf(outcome) });
  }

  /**
   * A result the worker was never asked for: for a job that has ended (completed or failed,
   * so it cannot be granted to it before the frame is read) or that is not in the graph. (A
   * worker sends one result per job frame, so a stray result on its own connection comes only
   * from a worker that breaks the protocol; one naming a job that may still be granted to it
   * would be taken as that grant's answer, since a result frame names no attempt.)
   */
  stray(worker: Worker, n: number): void {
    const ended = [...this.board.jobs.values()]
      .filter((record) => record.state === "completed" || record.state === "failed")
      .map((record) => record.job.id);
    const jobs = [...ended, `ghost${n}`];
    worker.arrive({
      type: "result",
      job: jobs[n % jobs.length],
      status: "completed",
      value: "stray",
    });
  }

  operator(event: CoordinatorEvent): void {
    this.coordinator.send(event);
  }

  /** Runs every timer due in the next `ms`, letting promise callbacks run between them. */
  async tick(ms: number): Promise<void> {
    const end = this.clock.now() + ms;
    await flush();
    while (this.clock.fireNext(end)) {
      await flush();
      this.verify();
    }
  }

  /** A rule was broken inside a callback of the server or a machine: `verify` throws it. */
  broke(message: string): void {
    this.violation ??= new BrokenRule(message);
  }

  verify(): void {
    if (this.violation) throw this.violation;
  }

  /** Liveness: workers that answer everything, promptly, bring the run to its end. */
  async runToEnd(): Promise<void> {
    const bound = 40 * this.board.jobs.size + 20 * this.slots.length + 100;
    for (let step = 0; !this.done; step++) {
      if (step === bound) {
        throw new BrokenRule(`the run is not done after ${bound} liveness steps`);
      }
      for (let slot = 0; slot < this.slots.length; slot++) this.connect(slot, false);
      for (const worker of [...this.workers]) {
        if (worker.serverClose !== undefined) worker.close();
        else if (!worker.helloSent) worker.hello();
        else if (worker.holds !== undefined) this.answer(worker, { status: "completed" });
        worker.pong();
      }
      await this.tick(1_000);
    }
    for (const [id, record] of this.board.jobs) {
      if (record.state === "completed") continue;
      if (record.state !== "failed" || !record.cause || !record.error?.message) {
        throw new BrokenRule(`job ${id} ended ${record.state} (${record.cause}) after the run`);
      }
    }
  }

  get board() {
    return this.coordinator.getSnapshot().context.board;
  }

  private frameOf(outcome: OutcomeSpec): object {
    if (outcome.status === "completed") return { status: "completed", value: "done" };
    if (outcome.status === "failed") return { status: "failed", error: { message: "broke" } };
    const known = [...this.board.jobs.values()].map((record) => record.job);
    const needs = outcome.needs.map((need): PlannedJob => {
      if (need.kind === "existing") {
        const job = known[need.n % known.length]!;
        return { ...job, deps: [...job.deps] };
      }
      const id = `n${this.fresh++}`;
      // A job an earlier run computed: the lookup finds it, and the blocked job is ready at once.
      if (need.kind === "stored") this.store.set(id, `stored ${id}`);
      return { id, kind: "work", input: id, deps: [], requires: {}, retries: 0 };
    });
    return { status: "blocked", needs };
  }
}

type OutcomeSpec =
  | { status: "completed" }
  | { status: "failed" }
  | { status: "blocked"; needs: { kind: "existing" | "new" | "stored"; n: number }[] };

const outcomes: fc.Arbitrary<OutcomeSpec> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ status: "completed" as const }) },
  { weight: 2, arbitrary: fc.constant({ status: "failed" as const }) },
  {
    weight: 4,
    arbitrary: fc
      .array(
        fc.record({ kind: fc.constantFrom("existing", "new", "stored", "stored"), n: fc.nat(50) }),
        { minLength: 1, maxLength: 2 },
      )
      .map((needs) => ({ status: "blocked" as const, needs })),
  },
);

type Step = fc.AsyncCommand<Harness, Harness>;

/** A step that applies when `applies` holds; `toString` is what fast-check prints. */
class HarnessStep implements Step {
  constructor(
    private readonly label: string,
    private readonly applies: (h: Readonly<Harness>) => boolean,
    private readonly act: (h: Harness) => void | Promise<void>,
  ) {}

  check(h: Readonly<Harness>): boolean {
    return this.applies(h);
  }

  async run(_model: Harness, h: Harness): Promise<void> {
    await this.act(h);
    await flush();
    h.verify();
  }

  toString(): string {
    return this.label;
  }
}

const some = (pickFrom: (h: Readonly<Harness>) => Worker[]) => (h: Readonly<Harness>) =>
  pickFrom(h).length > 0;
const nth = (workers: Worker[], n: number): Worker => workers[n % workers.length]!;
const holders = (h: Readonly<Harness>) => h.workers.filter((w) => w.holds !== undefined);
const closedByServer = (h: Readonly<Harness>) =>
  h.workers.filter((w) => w.serverClose !== undefined);
const pinged = (h: Readonly<Harness>) => h.workers.filter((w) => w.pingAt !== undefined);

const steps: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.nat(7), fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)))
      .map(
        ([n, mute]) =>
          new HarnessStep(
            `connect(slot #${n}${mute ? ", mute" : ""})`,
            () => true,
            (h) => h.connect(n % h.slots.length, mute),
          ),
      ),
  },
  {
    weight: 20,
    arbitrary: fc
      .tuple(fc.nat(7), outcomes)
      .map(
        ([n, outcome]) =>
          new HarnessStep(`answer(holder #${n}, ${JSON.stringify(outcome)})`, some(holders), (h) =>
            h.answer(nth(holders(h), n), outcome),
          ),
      ),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.nat(7), fc.nat(50)).map(
      ([n, job]) =>
        new HarnessStep(
          `stray(worker #${n}, job #${job})`,
          some((h) => h.workers),
          (h) => h.stray(nth(h.workers, n), job),
        ),
    ),
  },
  {
    weight: 8,
    arbitrary: fc
      .nat(7)
      .map(
        (n) => new HarnessStep(`pong(worker #${n})`, some(pinged), (h) => nth(pinged(h), n).pong()),
      ),
  },
  {
    weight: 3,
    arbitrary: fc.nat(7).map(
      (n) =>
        new HarnessStep(
          `reconnect(slot #${n})`,
          () => true,
          (h) => h.reconnect(n % h.slots.length),
        ),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.nat(7).map(
      (n) =>
        new HarnessStep(
          `twin(slot #${n})`,
          () => true,
          (h) => h.twin(n % h.slots.length),
        ),
    ),
  },
  {
    weight: 2,
    arbitrary: fc.nat(7).map(
      (n) =>
        new HarnessStep(
          `drop(worker #${n})`,
          some((h) => h.workers),
          (h) => nth(h.workers, n).close(),
        ),
    ),
  },
  {
    weight: 4,
    arbitrary: fc
      .nat(7)
      .map(
        (n) =>
          new HarnessStep(`hearClose(worker #${n})`, some(closedByServer), (h) =>
            nth(closedByServer(h), n).close(),
          ),
      ),
  },
  {
    weight: 7,
    arbitrary: fc.oneof(fc.integer({ min: 1, max: 3_000 }), fc.constantFrom(8_000, 20_000)).map(
      (ms) =>
        new HarnessStep(
          `tick(${ms} ms)`,
          () => true,
          (h) => h.tick(ms),
        ),
    ),
  },
  {
    // Close to a lease's end, where an answer races the lease sweep.
    weight: 3,
    arbitrary: fc.integer({ min: 70, max: 110 }).map(
      (percent) =>
        new HarnessStep(
          `tick(${percent}% of the lease timeout)`,
          () => true,
          (h) => h.tick(Math.round((h.leaseTimeoutMs * percent) / 100)),
        ),
    ),
  },

  {
    weight: 1,
    arbitrary: fc.constantFrom("CANCEL" as const, "SHUTDOWN" as const).map(
      (type) =>
        new HarnessStep(
          type.toLowerCase(),
          () => true,
          (h) => h.operator({ type, reason: `${type} by the property` }),
        ),
    ),
  },
);

const { BATON_PROPERTY_REPLAY_PATH } = process.env;
const runs = Math.max(1, Math.floor(propertyRuns(1000) / 2));

const property = fc.asyncProperty(
  scenarios,
  fc.commands([steps], {
    maxCommands: 120,
    size: "max",
    ...(BATON_PROPERTY_REPLAY_PATH && { replayPath: BATON_PROPERTY_REPLAY_PATH }),
  }),
  async (scenario, commands) => {
    const harness = new Harness(scenario);
    try {
      await fc.asyncModelRun(() => ({ model: harness, real: harness }), commands);
      await harness.runToEnd();
    } finally {
      harness.stop();
    }
  },
);

describe("coordinator server under interleaved frames, timers and store answers", () => {
  it(
    "keeps invariants 1–5 and 16–18, loses a connection once, expires only unrenewed leases, and finishes",
    async () => {
      const details = await fc.check(property, propertyParameters(runs));
      throwIfFailed(details, import.meta.url);
    },
    Math.max(60_000, 300 * runs),
  );
});
