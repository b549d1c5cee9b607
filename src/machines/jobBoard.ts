import { canTake } from "../graph/canTake.ts";
import { findCycle } from "../graph/findCycle.ts";
import type { Json, PlannedJob, Resources } from "../graph/job.ts";
import type { PlantedBug } from "./plantedBugs.ts";

/** The states of a job, as DESIGN §4 names them. */
export type JobState = "blocked" | "ready" | "running" | "completed" | "failed";

/** Why a job failed: its own error, or something around it. */
export type FailureCause =
  | "error"
  | "skipped"
  | "poison"
  | "cycle"
  | "unsatisfiable"
  | "cancelled"
  | "shutdown";

/** An error as it crosses the wire and lands in a result. */
export interface JobError {
  message: string;
  name?: string;
  stack?: string;
}

/** What a worker reported for the job it held. */
export type Outcome =
  | { status: "completed"; value: Json }
  | { status: "failed"; error: JobError }
  | { status: "blocked"; needs: PlannedJob[] };

/** Why a result was not accepted. */
export type DropReason = "not-held" | "unknown-job" | "finished";

/** Everything the coordinator asks the world to do, and everything it reports. */
export type CoordinatorEffect =
  | {
      type: "lease.granted";
      conn: string;
      job: PlannedJob;
      deps: Record<string, Json>;
      attempt: number;
    }
  | { type: "lease.cancelled"; conn: string; job: string }
  | { type: "lease.expired"; conn: string; job: string }
  | { type: "connection.released"; conn: string }
  | { type: "job.changed"; job: string; kind: string; state: JobState; cause?: FailureCause }
  | { type: "result.dropped"; conn: string; job: string; reason: DropReason };

/** A timer the board wants started or cancelled; the machine turns these into delayed events. */
export type TimerRequest =
  | { type: "start"; id: string; delayMs: number; event: TimerEvent }
  | { type: "cancel"; id: string };

export type TimerEvent =
  | { type: "LEASE_EXPIRED"; conn: string; job: string }
  | { type: "RETRY_DUE"; job: string };

export interface JobRecord {
  readonly job: PlannedJob;
  state: JobState;
  /** Leases granted so far. */
  attempts: number;
  /** Attempts that ended in a failed result. */
  failures: number;
  /** Workers lost while holding this job, in order. */
  lostWorkers: string[];
  /** Dependencies not completed yet. */
  waitingOn: number;
  dependents: string[];
  /** The connection holding the lease, while running. */
  holder: string | undefined;
  /** Waiting for a retry backoff to pass (state is blocked meanwhile). */
  retryPending: boolean;
  value: Json | undefined;
  error: JobError | undefined;
  cause: FailureCause | undefined;
  /** Completed jobs only: the value was already stored before the run (a rerun skip). */
  cached: boolean;
  /** A dependency id that is not in the graph (a malformed lazily added job). */
  unknownDep: string | undefined;
}

interface Waiter {
  worker: string;
  resources: Resources;
}

/**
 * Ready jobs of one kind and one set of requirements, first in first out. A job that stops
 * being ready other than by being leased (cancelled, skipped) stays in `queue` and is passed
 * over when it reaches the head: a FIFO array with a head index, because taking the first
 * entry of a Set that has had many deletions is not O(1).
 */
interface ReadyClass {
  kind: string;
  requires: Resources;
  queue: string[];
  head: number;
}

export interface JobBoardOptions {
  /** Losses of a worker while running one job before it is failed as poison (default 3). */
  maxLost?: number;
  /** Most jobs of a kind running at once. */
  throttle?: Readonly<Record<string, number>>;
  /** A lease not renewed by a heartbeat for this long expires (default 20 s; 0 = never). */
  leaseTimeoutMs?: number;
  /**
   * Resources of the workers this run can ever have. A job added while running that none of
   * them can take fails as unsatisfiable instead of waiting forever. Absent: not checked.
   */
  offers?: readonly Resources[];
  /** Values already stored from an earlier run, by job id: those jobs start completed. */
  stored?: ReadonlyMap<string, Json>;
  /** Deliberate bugs, only for proving that the property tests catch them. */
  plantedBugs?: readonly PlantedBug[];
}

/**
 * The coordinator's bookkeeping: every job's state, the lease table and the waiting
 * connections. Deterministic and free of I/O; each mutator appends what it wants done to
 * `effects` and `timers`, which the coordinator machine drains after every event.
 *
 * @example
 * ```ts
 * const board = new JobBoard([{ id: "a", kind: "noop", input: null, deps: [], requires: {}, retries: 3 }]);
 * board.lease("c1", "worker-1", {});
 * board.drain(); // [{ type: "lease.granted", conn: "c1", ... }]
 * ```
 */
export class JobBoard {
  readonly jobs = new Map<string, JobRecord>();
  /** Lease table: connection → job id. */
  readonly leases = new Map<string, string>();
  /** Connections waiting for a job, first come first served. */
  readonly waiting = new Map<string, Waiter>();
  readonly workerOf = new Map<string, string>();
  effects: CoordinatorEffect[] = [];
  timers: TimerRequest[] = [];
  /** Results dropped, by reason. */
  readonly dropped: Record<DropReason, number> = { "not-held": 0, "unknown-job": 0, finished: 0 };
  /** Set once the run is finished; from then on no lease is granted. */
  finished = false;
  /** Set by cancel(): the reason; no job starts or retries from then on. */
  private stopping: string | undefined;
  private readonly ready = new Map<string, ReadyClass>();
  private readyCount = 0;
  private runningCount = 0;
  private retryCount = 0;
  private readonly runningByKind = new Map<string, number>();
  private readonly maxLost: number;
  private readonly leaseTimeoutMs: number;
  private readonly bugs: ReadonlySet<PlantedBug>;

  constructor(
    jobs: Iterable<PlannedJob>,
    private readonly options: JobBoardOptions = {},
  ) {
    this.maxLost = options.maxLost ?? 3;
    this.leaseTimeoutMs = options.leaseTimeoutMs ?? 20_000;
    this.bugs = new Set(options.plantedBugs ?? []);
    this.add([...jobs]);
    // The starting state is not a change: readers take it from the board itself.
    this.effects = [];
  }

  /** Nothing is ready, running or waiting out a retry backoff. */
  get done(): boolean {
    return (
      this.finished || (this.readyCount === 0 && this.runningCount === 0 && this.retryCount === 0)
    );
  }

  /** How many jobs are in each state. */
  counts(): Record<JobState, number> {
    const counts: Record<JobState, number> = {
      blocked: 0,
      ready: 0,
      running: 0,
      completed: 0,
      failed: 0,
    };
    for (const record of this.jobs.values()) counts[record.state]++;
    return counts;
  }

  /** Hand out every effect and timer request gathered since the last drain. */
  drain(): { effects: CoordinatorEffect[]; timers: TimerRequest[] } {
    const out = { effects: this.effects, timers: this.timers };
    this.effects = [];
    this.timers = [];
    return out;
  }

  /** A connection asks for a job: it gets one now, or waits until one it can take is ready. */
  lease(conn: string, worker: string, resources: Resources): void {
    if (this.leases.has(conn) || this.waiting.has(conn)) return;
    this.workerOf.set(conn, worker);
    if (this.finished || this.stopping !== undefined) {
      this.effects.push({ type: "connection.released", conn });
      return;
    }
    const id = this.pickFor(resources);
    if (id === undefined) this.waiting.set(conn, { worker, resources });
    else this.grant(conn, id);
  }

  /** A worker reports the outcome of a job. Only the holder of the lease is heard. */
  result(conn: string, jobId: string, outcome: Outcome): void {
    const record = this.jobs.get(jobId);
    if (!record) {
      this.drop(conn, jobId, "unknown-job");
      return;
    }
    if (this.leases.get(conn) !== jobId) {
      const held = record.state === "running" || record.state === "ready";
      this.drop(conn, jobId, held ? "not-held" : "finished");
      return;
    }
    const wasRunning = record.state === "running";
    this.release(conn, record);
    // A job shut down while running keeps its verdict; its holder's answer only ends the lease.
    if (!wasRunning) this.drop(conn, jobId, "finished");
    else if (outcome.status === "completed") this.complete(record, outcome.value);
    else if (this.stopping !== undefined) this.cancelled(record);
    else if (outcome.status === "failed") this.fail(record, outcome.error);
    else this.block(record, outcome.needs);
    this.dispatch();
  }

  /** The single path that releases a lease: the job goes back to ready, no failure counted. */
  workerLost(conn: string): void {
    this.waiting.delete(conn);
    const jobId = this.leases.get(conn);
    const worker = this.workerOf.get(conn) ?? conn;
    this.workerOf.delete(conn);
    if (jobId === undefined) return;
    const record = this.jobs.get(jobId)!;
    const wasRunning = record.state === "running";
    this.release(conn, record);
    if (!wasRunning) {
      this.dispatch();
      return;
    }
    record.lostWorkers.push(worker);
    if (this.bugs.has("lost-counts-as-failure")) record.failures++;
    if (record.lostWorkers.length >= this.maxLost) {
      const names = record.lostWorkers.join(", ");
      this.terminate(record, "poison", {
        name: "PoisonJob",
        message: `job ${record.job.id} (${record.job.kind}) was running on ${record.lostWorkers.length} workers that were lost (${names}); it is failed as poison so it cannot take down more workers. Look at those workers' logs for how they died.`,
      });
    } else if (this.stopping !== undefined) {
      this.cancelled(record);
    } else {
      this.becomeReady(record);
    }
    this.dispatch();
  }

  /** The worker holding a lease is alive: push its deadline back. */
  heartbeat(conn: string): void {
    const jobId = this.leases.get(conn);
    if (jobId !== undefined) this.startLeaseTimer(conn, jobId);
  }

  /** A lease deadline passed without a heartbeat: ask for the connection to be closed. */
  leaseExpired(conn: string, jobId: string): void {
    if (this.leases.get(conn) === jobId)
      this.effects.push({ type: "lease.expired", conn, job: jobId });
  }

  /** A retry backoff is over: the job is ready again. */
  retryDue(jobId: string): void {
    const record = this.jobs.get(jobId);
    if (!record?.retryPending) return;
    record.retryPending = false;
    this.retryCount--;
    if (record.state === "blocked" && !this.finished) {
      this.becomeReady(record);
      this.dispatch();
    }
  }

  /**
   * Stop starting work: every job not running fails as `cancelled`, every running job's
   * worker is told to abort it. Running jobs end with whatever result their worker sends.
   */
  cancel(reason: string): void {
    this.stopping = reason;
    for (const record of this.jobs.values()) {
      if (record.state === "running") {
        this.effects.push({ type: "lease.cancelled", conn: record.holder!, job: record.job.id });
      } else if (record.state === "ready" || record.state === "blocked") {
        // No cascade: every job not started is cancelled in its own right, not skipped.
        this.terminate(record, "cancelled", { name: "Cancelled", message: reason }, false);
      }
    }
    for (const conn of this.waiting.keys()) {
      this.effects.push({ type: "connection.released", conn });
    }
    this.waiting.clear();
  }

  /** Marks the run finished (first), then releases every waiting connection. */
  finish(reason: string): void {
    this.finished = true;
    for (const record of this.jobs.values()) {
      if (record.state === "running") {
        this.effects.push({ type: "lease.cancelled", conn: record.holder!, job: record.job.id });
        this.terminate(record, "shutdown", { name: "Shutdown", message: reason }, false);
      } else if (record.state === "ready" || record.state === "blocked") {
        this.terminate(record, "shutdown", { name: "Shutdown", message: reason }, false);
      }
    }
    if (!this.bugs.has("forget-waiters-on-shutdown")) {
      for (const conn of this.waiting.keys()) {
        this.effects.push({ type: "connection.released", conn });
      }
      this.waiting.clear();
    }
  }

  /** A compact view for inspectors and logs: counts, not 100,000 records. */
  toJSON(): object {
    return {
      jobs: this.counts(),
      leases: this.leases.size,
      waiting: this.waiting.size,
      dropped: this.dropped,
      finished: this.finished,
    };
  }

  private add(jobs: PlannedJob[]): PlannedJob[] {
    const added: PlannedJob[] = [];
    for (const job of jobs) {
      if (this.jobs.has(job.id)) continue;
      this.jobs.set(job.id, {
        job,
        state: "blocked",
        attempts: 0,
        failures: 0,
        lostWorkers: [],
        waitingOn: 0,
        dependents: [],
        holder: undefined,
        retryPending: false,
        value: undefined,
        error: undefined,
        cause: undefined,
        cached: false,
        unknownDep: undefined,
      });
      added.push(job);
    }
    for (const job of added) {
      const record = this.jobs.get(job.id)!;
      for (const dep of job.deps) {
        const parent = this.jobs.get(dep);
        if (!parent) {
          record.unknownDep = dep;
          continue;
        }
        parent.dependents.push(job.id);
        if (parent.state !== "completed") record.waitingOn++;
      }
    }
    for (const job of added) this.settleNew(this.jobs.get(job.id)!);
    return added;
  }

  /** Puts a newly added job where it belongs: stored, unsatisfiable, skipped, ready or blocked. */
  private settleNew(record: JobRecord): void {
    if (record.state === "completed" || record.state === "failed") return;
    const stored = this.options.stored?.get(record.job.id);
    if (stored !== undefined) {
      record.cached = true;
      this.complete(record, stored);
      return;
    }
    if (record.unknownDep !== undefined) {
      this.terminate(record, "error", {
        name: "UnknownDependency",
        message: `job ${record.job.id} (${record.job.kind}) depends on ${record.unknownDep}, which is not in the graph; a job handed to ctx.need() must come with the jobs it depends on`,
      });
      return;
    }
    if (this.stopping !== undefined) {
      this.cancelled(record);
      return;
    }
    const offers = this.options.offers;
    if (offers && offers.length > 0 && !offers.some((o) => canTake(o, record.job.requires))) {
      this.terminate(record, "unsatisfiable", {
        name: "Unsatisfiable",
        message: `no worker of this run can take job ${record.job.id} (${record.job.kind}): it requires ${JSON.stringify(record.job.requires)}, the workers offer ${offers.map((o) => JSON.stringify(o)).join(", ")}`,
      });
      return;
    }
    const failedDep = record.job.deps
      .map((d) => this.jobs.get(d))
      .find((d) => d?.state === "failed");
    if (failedDep) {
      this.skip(record, failedDep);
      return;
    }
    if (record.waitingOn === 0 && record.state === "blocked") this.becomeReady(record);
  }

  private pickFor(resources: Resources): string | undefined {
    if (this.readyCount === 0) return undefined;
    for (const cls of this.ready.values()) {
      if (!this.underThrottle(cls.kind) || !canTake(resources, cls.requires)) continue;
      const id = this.headOf(cls);
      if (id !== undefined) return id;
    }
    return undefined;
  }

  /** The first job of a class that is still ready, passing over (and dropping) stale entries. */
  private headOf(cls: ReadyClass): string | undefined {
    const leaseRunning = this.bugs.has("lease-running-job");
    while (cls.head < cls.queue.length) {
      const id = cls.queue[cls.head]!;
      const state = this.jobs.get(id)!.state;
      if (state === "ready" || (leaseRunning && state === "running")) return id;
      cls.head++;
    }
    if (cls.head > 0) {
      cls.queue = [];
      cls.head = 0;
    }
    return undefined;
  }

  private underThrottle(kind: string): boolean {
    const limit = this.options.throttle?.[kind];
    return limit === undefined || (this.runningByKind.get(kind) ?? 0) < limit;
  }

  /** Hands ready jobs to waiting connections until no waiting connection can take one. */
  private dispatch(): void {
    if (this.readyCount === 0 || this.waiting.size === 0 || this.finished) return;
    for (const [conn, waiter] of this.waiting) {
      const id = this.pickFor(waiter.resources);
      if (id === undefined) continue;
      this.waiting.delete(conn);
      this.grant(conn, id);
      if (this.readyCount === 0) return;
    }
  }

  private grant(conn: string, jobId: string): void {
    const record = this.jobs.get(jobId)!;
    // The planted bug leaves the job in the ready queue, so another connection can lease it.
    if (!this.bugs.has("lease-running-job")) this.leaveReady(record);
    else if (record.state === "ready") this.readyCount--;
    record.state = "running";
    record.holder = conn;
    record.attempts++;
    this.runningCount++;
    this.runningByKind.set(record.job.kind, (this.runningByKind.get(record.job.kind) ?? 0) + 1);
    this.leases.set(conn, jobId);
    const deps: Record<string, Json> = {};
    for (const dep of record.job.deps) deps[dep] = this.jobs.get(dep)?.value ?? null;
    this.effects.push({
      type: "lease.granted",
      conn,
      job: record.job,
      deps,
      attempt: record.attempts,
    });
    this.effects.push({ type: "job.changed", job: jobId, kind: record.job.kind, state: "running" });
    this.startLeaseTimer(conn, jobId);
  }

  private startLeaseTimer(conn: string, jobId: string): void {
    if (this.leaseTimeoutMs <= 0) return;
    this.timers.push({
      type: "start",
      id: `lease:${conn}`,
      delayMs: this.leaseTimeoutMs,
      event: { type: "LEASE_EXPIRED", conn, job: jobId },
    });
  }

  /** Ends a lease (result, loss, cancel). The job's state is the caller's business. */
  private release(conn: string, record: JobRecord): void {
    this.leases.delete(conn);
    if (this.leaseTimeoutMs > 0) this.timers.push({ type: "cancel", id: `lease:${conn}` });
    if (record.holder !== conn) return;
    record.holder = undefined;
    if (record.state === "running") {
      this.runningCount--;
      this.runningByKind.set(record.job.kind, this.runningByKind.get(record.job.kind)! - 1);
      record.state = "blocked";
    }
  }

  private becomeReady(record: JobRecord): void {
    record.state = "ready";
    const key = readyKey(record.job);
    let cls = this.ready.get(key);
    if (!cls) {
      cls = { kind: record.job.kind, requires: record.job.requires, queue: [], head: 0 };
      this.ready.set(key, cls);
    }
    if (cls.head > 1024 && cls.head * 2 > cls.queue.length) {
      cls.queue = cls.queue.slice(cls.head);
      cls.head = 0;
    }
    cls.queue.push(record.job.id);
    this.readyCount++;
    this.effects.push({
      type: "job.changed",
      job: record.job.id,
      kind: record.job.kind,
      state: "ready",
    });
  }

  /**
   * Takes a job out of the ready count. Its queue entry goes now if it is the head (a lease
   * always takes the head), else when it reaches the head: a job that is ready again later
   * (a retry, a lost worker) must queue behind the jobs already waiting.
   */
  private leaveReady(record: JobRecord): void {
    if (record.state !== "ready") return;
    this.readyCount--;
    const cls = this.ready.get(readyKey(record.job));
    if (cls?.queue[cls.head] === record.job.id) cls.head++;
  }

  private complete(record: JobRecord, value: Json): void {
    this.leaveReady(record);
    record.state = "completed";
    record.value = value;
    this.effects.push({
      type: "job.changed",
      job: record.job.id,
      kind: record.job.kind,
      state: "completed",
    });
    for (const id of record.dependents) {
      const child = this.jobs.get(id)!;
      child.waitingOn--;
      if (child.waitingOn === 0 && child.state === "blocked" && !child.retryPending) {
        this.becomeReady(child);
      }
    }
  }

  private fail(record: JobRecord, error: JobError): void {
    record.failures++;
    if (record.failures > record.job.retries) {
      this.terminate(record, "error", error);
      return;
    }
    record.error = error;
    const backoff = record.job.backoff;
    if (!backoff || backoff.initialMs <= 0) {
      this.becomeReady(record);
      return;
    }
    const delay = Math.min(
      backoff.initialMs * (backoff.factor ?? 2) ** (record.failures - 1),
      backoff.maxMs ?? Number.POSITIVE_INFINITY,
    );
    record.state = "blocked";
    record.retryPending = true;
    this.retryCount++;
    this.effects.push({
      type: "job.changed",
      job: record.job.id,
      kind: record.job.kind,
      state: "blocked",
    });
    this.timers.push({
      type: "start",
      id: `retry:${record.job.id}`,
      delayMs: delay,
      event: { type: "RETRY_DUE", job: record.job.id },
    });
  }

  /** The job stopped to wait for jobs it discovered it needs; it runs again after them. */
  private block(record: JobRecord, needs: PlannedJob[]): void {
    this.add(needs);
    const fresh = needs.map((n) => n.id).filter((id) => !record.job.deps.includes(id));
    const cycle = findCycle([record.job.id], (id) =>
      id === record.job.id ? fresh : this.jobs.get(id)?.job.deps,
    );
    if (cycle) {
      const names = cycle.map((id) => `${this.jobs.get(id)?.job.kind ?? "?"}(${id})`).join(" → ");
      this.terminate(record, "cycle", {
        name: "GraphCycle",
        message: `job ${record.job.id} (${record.job.kind}) needs jobs that depend on it: ${names}. Break the cycle in the job module.`,
      });
      return;
    }
    const mutable = record.job as { deps: string[] };
    mutable.deps = [...record.job.deps, ...fresh];
    for (const id of fresh) {
      const dep = this.jobs.get(id)!;
      dep.dependents.push(record.job.id);
      if (dep.state === "failed") {
        this.skip(record, dep);
        return;
      }
      if (dep.state !== "completed") record.waitingOn++;
    }
    if (record.waitingOn === 0) this.becomeReady(record);
    else {
      this.effects.push({
        type: "job.changed",
        job: record.job.id,
        kind: record.job.kind,
        state: "blocked",
      });
    }
  }

  private cancelled(record: JobRecord): void {
    this.terminate(record, "cancelled", {
      name: "Cancelled",
      message: this.stopping ?? "cancelled",
    });
  }

  private skip(record: JobRecord, failedDep: JobRecord): void {
    this.terminate(record, "skipped", skippedError(failedDep));
  }

  /**
   * A job's final failure. Its dependents that have not finished are skipped with the cause
   * named (unless `cascade` is off, as when everything not finished fails anyway).
   */
  private terminate(record: JobRecord, cause: FailureCause, error: JobError, cascade = true): void {
    this.leaveReady(record);
    if (record.retryPending) {
      record.retryPending = false;
      this.retryCount--;
      this.timers.push({ type: "cancel", id: `retry:${record.job.id}` });
    }
    if (record.state === "running") {
      // The holder keeps its lease until it answers or is lost; the job no longer counts as running.
      this.runningCount--;
      this.runningByKind.set(record.job.kind, this.runningByKind.get(record.job.kind)! - 1);
    }
    record.state = "failed";
    record.cause = cause;
    record.error = error;
    this.effects.push({
      type: "job.changed",
      job: record.job.id,
      kind: record.job.kind,
      state: "failed",
      cause,
    });
    if (!cascade) return;
    const stack = [record];
    while (stack.length > 0) {
      const parent = stack.pop()!;
      for (const id of parent.dependents) {
        const child = this.jobs.get(id)!;
        if (child.state === "blocked" || child.state === "ready") {
          this.terminate(child, "skipped", skippedError(parent), false);
          stack.push(child);
        }
      }
    }
  }

  private drop(conn: string, jobId: string, reason: DropReason): void {
    this.dropped[reason]++;
    this.effects.push({ type: "result.dropped", conn, job: jobId, reason });
  }
}

function readyKey(job: PlannedJob): string {
  const r = job.requires;
  return `${job.kind}\u0000${r.cpus ?? 0}/${r.gpus ?? 0}/${r.memory ?? 0}`;
}

function skippedError(failedDep: JobRecord): JobError {
  return {
    name: "Skipped",
    message: `skipped because dependency ${failedDep.job.id} (${failedDep.job.kind}) failed: ${failedDep.error?.message ?? "unknown error"}`,
  };
}
