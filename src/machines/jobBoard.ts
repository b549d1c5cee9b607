import { canTake, someTakes } from "../graph/canTake.ts";
import { findCycle } from "../graph/findCycle.ts";
import type { Json, PlannedJob, Resources } from "../graph/job.ts";
import { noWorkerCanTake } from "../graph/noWorkerCanTake.ts";
import { cutText } from "../transport/cutText.ts";
import type { PlantedBug } from "./plantedBugs.ts";
import { leftOnPurpose, namedLosses, type WorkerClose } from "./workerClose.ts";

/** How long a lease lasts without a heartbeat renewing it. */
export const DEFAULT_LEASE_TIMEOUT_MS = 20_000;
/** How many workers a job may lose while it runs before it fails as poison. */
export const DEFAULT_MAX_LOST = 3;

/**
 * The states of a job: DESIGN §4's, and `storing` between a completed result and its being
 * durable (only with a result store, `durable`): the worker has given the job back and takes
 * its next one while the result is written; the job completes once it is stored.
 */
export type JobState = "blocked" | "ready" | "running" | "storing" | "completed" | "failed";

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
  name?: string | undefined;
  stack?: string | undefined;
  /** `false`: the handler said another attempt cannot help; the job is not retried. */
  retryable?: false | undefined;
}

/** What a worker reported for the job it held. */
export type Outcome =
  | { status: "completed"; value: Json }
  | { status: "failed"; error: JobError }
  /**
   * The job needs jobs that have no result yet. `stored`: results of needed jobs the runtime
   * found in the result store (an earlier run or coordinator computed them); those jobs start
   * completed instead of running again.
   */
  | { status: "blocked"; needs: PlannedJob[]; stored?: ReadonlyMap<string, Json> };

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
  /**
   * The holder is to stop the job (the run is cancelled or shut down, or the attempt ran past
   * its `timeoutMs`: then `timedOut`); `reason` says why, for the handler's AbortSignal.
   */
  | { type: "lease.cancelled"; conn: string; job: string; reason: string; timedOut?: true }
  /**
   * The lease of `attempt` was not renewed in time (`timedOut`: the job ran past its timeout
   * and went on). The attempt names the lease: a later lease of the same job on the same
   * connection is another one.
   */
  | { type: "lease.expired"; conn: string; job: string; attempt: number; timedOut?: true }
  /** `reason`: why the run stopped early (a cancel, a shutdown); none when it is done. */
  | { type: "connection.released"; conn: string; reason?: string }
  /**
   * The run stopped starting work, for `reason` (a CANCEL, or with `failFast` its first
   * failure): running jobs were told to stop; the runtime may give them a grace period.
   */
  | { type: "run.cancelled"; reason: string }
  | { type: "job.changed"; job: string; kind: string; state: JobState; cause?: FailureCause }
  | { type: "result.dropped"; conn: string; job: string; reason: DropReason }
  /**
   * Make this completed result durable, then tell the coordinator: STORED or STORE_FAILED,
   * or STORE_FULL (and write it again) while the store's disk has no room for it.
   */
  | { type: "result.store"; job: string; kind: string; value: Json };

/** A timer the board wants started or cancelled; the machine turns these into delayed events. */
export type TimerRequest =
  | { type: "start"; id: string; delayMs: number; event: TimerEvent }
  | { type: "cancel"; id: string };

export type TimerEvent =
  | { type: "LEASE_SWEEP" }
  | { type: "RETRY_DUE"; job: string }
  | { type: "ATTEMPT_TIMEOUT"; job: string; attempt: number };

/**
 * Lease sweeps per lease timeout. Lease deadlines are checked by one periodic sweep (every
 * `leaseTimeoutMs / LEASE_SWEEPS`, and only while some lease can expire) instead of a timer
 * per lease, which cost a cancel and a start on every grant. A lease not renewed for
 * `leaseTimeoutMs` therefore expires at the first sweep after its deadline: never early, and
 * at most a tenth of the timeout late. Time is counted in sweeps the coordinator performs: a
 * coordinator that stalls (and so could not hear heartbeats) counts a late sweep as one
 * period and does not expire every lease at once when it resumes.
 */
export const LEASE_SWEEPS = 10;

/** `dependents` of a job nothing depends on: shared (most jobs of a wide graph), so frozen. */
const NO_DEPENDENTS: string[] = Object.freeze([]) as unknown as string[];

function addDependent(parent: JobRecord, id: string): void {
  if (parent.dependents === NO_DEPENDENTS) parent.dependents = [id];
  else parent.dependents.push(id);
}

/**
 * `lostWorkers` and `lostWhy` of a job that lost no worker: shared (nearly every job), so
 * frozen; the first loss gives the job lists of its own.
 */
const NO_LOSSES = Object.freeze([]) as unknown as never[];

/** How much of the failed job's error a skipped job's message repeats. */
const SKIP_MESSAGE_CHARS = 1_000;

/** `deps` of a job frame for a job without dependencies: shared, so frozen. */
const NO_DEPS: Record<string, Json> = Object.freeze({}) as Record<string, Json>;

export interface JobRecord {
  readonly job: PlannedJob;
  state: JobState;
  /** Leases granted so far. */
  attempts: number;
  /** Attempts that ended in a failed result. */
  failures: number;
  /** Workers lost while holding this job, in order (a shared empty list until the first). */
  lostWorkers: string[];
  /**
   * How the connection of each of `lostWorkers` ended, in the same order (a shared empty
   * list until the first loss).
   */
  lostWhy: WorkerClose[];
  /**
   * Of `lostWorkers`, those that went away on purpose (stopped by a signal, preempted): they
   * do not count towards `maxLost`, since the job did not take them down.
   */
  workersLeft: number;
  /** Dependencies not completed yet. */
  waitingOn: number;
  /** Jobs that run after this one (a shared empty list until the first one is added). */
  dependents: string[];
  /** The connection holding the lease, while running. */
  holder: string | undefined;
  /** Waiting for a retry backoff to pass (state is blocked meanwhile). */
  retryPending: boolean;
  /** The timer of the running attempt's `timeoutMs` is set. */
  timeoutPending: boolean;
  /**
   * The running attempt ran past its `timeoutMs`: its holder was told to stop, its lease is
   * no longer renewed, and however it ends, short of a completed result, is a failed attempt.
   */
  timedOut: boolean;
  value: Json | undefined;
  error: JobError | undefined;
  cause: FailureCause | undefined;
  /** Completed jobs only: the value was already stored before the run (a rerun skip). */
  cached: boolean;
  /** A dependency id that is not in the graph (a malformed lazily added job). */
  unknownDep: string | undefined;
  /**
   * A skipped job: the job whose own failure (not a skip) it was skipped for, at the far end
   * of a chain of skipped dependencies, so each skip names it without repeating the chain.
   */
  skippedFor: JobRecord | undefined;
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
  queue: JobRecord[];
  head: number;
}

export interface JobBoardOptions {
  /** Losses of a worker while running one job before it is failed as poison (default 3). */
  maxLost?: number;
  /** Most jobs of a kind running at once. */
  throttle?: Readonly<Record<string, number>>;
  /**
   * A lease not renewed by a heartbeat for this long expires (default 20 s; 0 = never), at the
   * first lease sweep after that (at most `leaseTimeoutMs / LEASE_SWEEPS` later).
   */
  leaseTimeoutMs?: number;
  /**
   * Resources of the workers this run can ever have. A job added while running that none of
   * them can take fails as unsatisfiable instead of waiting forever. Absent: not checked.
   */
  offers?: readonly Resources[];
  /**
   * The way out named to such a job, given the amounts that would take it, as `planGraph`'s
   * (`PlanOptions.offerMore`): "have each Slurm worker offer enough with --slurm-resources
   * cpus=4". Absent: "configure a worker that offers enough".
   */
  offerMore?: ((enough: Resources) => string) | undefined;
  /** Values already stored from an earlier run, by job id: those jobs start completed. */
  stored?: ReadonlyMap<string, Json>;
  /**
   * Results go to a result store: a completed result makes its job `storing` (and asks for it
   * with `result.store`), and the job completes only when the store reports it durable.
   */
  durable?: boolean;
  /**
   * Stop the run at the first job that fails for good (an error after its retries, poison, a
   * cycle, nothing can take it): the board cancels as on CANCEL, naming that job.
   */
  failFast?: boolean;
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
 * board.takeEffects(); // [{ type: "lease.granted", conn: "c1", ... }, { type: "job.changed", ... }]
 * board.takeTimers(); // [{ type: "start", id: "lease-sweep", delayMs: 2000, ... }]
 * ```
 */
export class JobBoard {
  readonly jobs = new Map<string, JobRecord>();
  /**
   * Lease table: connection → the record of the job it holds. The record, not its id: a
   * result finds its job here, among a few connections, where a lookup by id in the map of
   * every job was the costliest line of a 100,000-job run beyond XState (ARCHITECTURE,
   * "Performance, measured").
   */
  readonly leases = new Map<string, JobRecord>();
  /** Connections waiting for a job, first come first served. */
  readonly waiting = new Map<string, Waiter>();
  readonly workerOf = new Map<string, string>();
  effects: CoordinatorEffect[] = [];
  timers: TimerRequest[] = [];
  /** Jobs in each state. */
  private readonly tally: Record<JobState, number> = {
    blocked: 0,
    ready: 0,
    running: 0,
    storing: 0,
    completed: 0,
    failed: 0,
  };
  /** Results dropped, by reason. */
  readonly dropped: Record<DropReason, number> = { "not-held": 0, "unknown-job": 0, finished: 0 };
  /** Set once the run is finished; from then on no lease is granted. */
  finished = false;
  /** Set by cancel(): the reason; no job starts or retries from then on. */
  private stopping: string | undefined;
  /** With `failFast`: the first job that failed for good (not skipped, cancelled or shut down). */
  private firstFailure: JobRecord | undefined;
  /** The reason of a shutdown that finished the run early (see `finish`). */
  private stoppedBecause: string | undefined;
  private readonly ready = new Map<string, ReadyClass>();
  /**
   * The class of the last job made ready or taken out of ready: the next job's too when it has
   * the same kind and the same `requires` object (planning gives every job that requires
   * nothing one shared object), which is most jobs of most graphs, so their key is not built.
   */
  private lastClass: ReadyClass | undefined;
  private readyCount = 0;
  /**
   * While `add` settles new jobs: those of them it completes from the store. A stored job's
   * stored dependency, completing first, would make it ready on the way to completed (a
   * `ready` no worker may take; the simulation's checker read it as a job completed from
   * ready, before its result was stored).
   */
  private joiningStored: ReadonlySet<string> | undefined;
  private runningCount = 0;
  private retryCount = 0;
  private storingCount = 0;
  /**
   * The store's last answer about a result was STORE_FULL: its disk has no room. No lease is
   * granted until it answers STORED or STORE_FAILED; the connections that ask wait.
   */
  private noRoom = false;
  /** Jobs running by kind; kept only when a throttle is set (nothing else reads it). */
  private readonly runningByKind = new Map<string, number>();
  private readonly throttled: boolean;
  private readonly maxLost: number;
  private readonly leaseTimeoutMs: number;
  /** Lease sweeps so far. */
  private sweeps = 0;
  private sweepPending = false;
  /** Leases that can still expire: connection → the sweep count when granted or last renewed. */
  private readonly renewed = new Map<string, number>();
  /** Per job, how many of its lost workers went silent (empty unless some did). */
  private readonly silentLosses = new Map<string, number>();
  private readonly bugs: ReadonlySet<PlantedBug>;
  /**
   * While the constructor adds the first jobs. The starting state is not a change (readers take
   * it from the board itself), so the jobs it makes ready or completes from the store say
   * nothing: those `job.changed` effects, one a job, were made, kept in a list as long as the
   * constructor ran (the collector copying them), then dropped.
   */
  private starting = true;

  constructor(
    jobs: Iterable<PlannedJob>,
    private readonly options: JobBoardOptions = {},
  ) {
    this.maxLost = options.maxLost ?? DEFAULT_MAX_LOST;
    this.leaseTimeoutMs = options.leaseTimeoutMs ?? DEFAULT_LEASE_TIMEOUT_MS;
    this.throttled = options.throttle !== undefined && Object.keys(options.throttle).length > 0;
    this.bugs = new Set(options.plantedBugs ?? []);
    this.add([...jobs]);
    this.starting = false;
    // The starting state is not a change: what a failure as it was added said goes too.
    this.effects = [];
  }

  /** Cancelled (by CANCEL, or by `failFast`): no job starts or retries any more. */
  get cancelling(): boolean {
    return this.stopping !== undefined;
  }

  /**
   * With `failFast`, a job has failed for good and the run is not cancelled yet: the
   * coordinator then calls `cancelAtFirstFailure`, once the event that failed it is over.
   */
  get failedFast(): boolean {
    return this.firstFailure !== undefined && this.stopping === undefined && !this.finished;
  }

  /** Cancels the run (as `cancel`) for the first job that failed for good, naming it. */
  cancelAtFirstFailure(): void {
    const { id, kind } = this.firstFailure!.job;
    this.cancel(
      `the run stopped at its first failure (failFast, --fail-fast): job ${id} (${kind}) failed`,
    );
  }

  /**
   * The store's disk has no room (its last answer was STORE_FULL): no lease is granted, so
   * connections wait while jobs are ready, until it answers STORED or STORE_FAILED.
   */
  get storeFull(): boolean {
    return this.noRoom;
  }

  /** Nothing is ready, running, being stored or waiting out a retry backoff. */
  get done(): boolean {
    return (
      this.finished ||
      (this.readyCount === 0 &&
        this.runningCount === 0 &&
        this.retryCount === 0 &&
        this.storingCount === 0)
    );
  }

  /** How many jobs are in each state (kept as they change: progress asks often). */
  counts(): Record<JobState, number> {
    return { ...this.tally };
  }

  /** Hand out every effect and timer request gathered since the last drain. */
  drain(): { effects: CoordinatorEffect[]; timers: TimerRequest[] } {
    return { effects: this.takeEffects(), timers: this.takeTimers() };
  }

  /** Hand out the effects gathered since they were last taken. */
  takeEffects(): CoordinatorEffect[] {
    const effects = this.effects;
    this.effects = [];
    return effects;
  }

  /** Hand out the timer requests gathered since they were last taken. */
  takeTimers(): TimerRequest[] {
    const timers = this.timers;
    if (timers.length > 0) this.timers = [];
    return timers;
  }

  /** A connection asks for a job: it gets one now, or waits until one it can take is ready. */
  lease(conn: string, worker: string, resources: Resources): void {
    if (this.leases.has(conn) || this.waiting.has(conn)) return;
    this.workerOf.set(conn, worker);
    if (this.finished || this.stopping !== undefined) {
      this.releaseConnection(conn);
      return;
    }
    const cls = this.noRoom ? undefined : this.pickFor(resources);
    if (cls === undefined) this.waiting.set(conn, { worker, resources });
    else this.grant(conn, cls);
  }

  /** A worker reports the outcome of a job. Only the holder of the lease is heard. */
  result(conn: string, jobId: string, outcome: Outcome): void {
    const leased = this.leases.get(conn);
    const record = leased?.job.id === jobId ? leased : this.jobs.get(jobId);
    if (!record) {
      this.drop(conn, jobId, "unknown-job");
      return;
    }
    if (record !== leased) {
      const held = record.state === "running" || record.state === "ready";
      this.drop(conn, jobId, held ? "not-held" : "finished");
      return;
    }
    const wasRunning = record.state === "running";
    this.release(conn, record);
    // A job shut down while running keeps its verdict; its holder's answer only ends the lease.
    // A completed result counts even after a timeout: the value is there.
    if (!wasRunning) this.drop(conn, jobId, "finished");
    else if (outcome.status === "completed") this.completed(record, outcome.value);
    else if (this.stopping !== undefined) this.cancelled(record);
    else if (record.timedOut) this.fail(record, timeoutError(record));
    else if (outcome.status === "failed") this.fail(record, outcome.error);
    else this.block(record, outcome.needs, outcome.stored);
    this.dispatch();
  }

  /**
   * The single path that releases a lease: the job goes back to ready, no failure counted.
   * `close`: how its connection ended, kept with the loss (1001: it closed saying it was
   * stopped, `leftOnPurpose`); `silent`: the worker stopped answering.
   */
  workerLost(conn: string, close: WorkerClose, { silent = false } = {}): void {
    this.waiting.delete(conn);
    const record = this.leases.get(conn);
    const worker = this.workerOf.get(conn) ?? conn;
    this.workerOf.delete(conn);
    if (record === undefined) return;
    const jobId = record.job.id;
    const wasRunning = record.state === "running";
    this.release(conn, record);
    if (!wasRunning) {
      this.dispatch();
      return;
    }
    if (record.timedOut) {
      // The attempt had already failed by its timeout; losing its worker adds nothing.
      if (this.stopping !== undefined) this.cancelled(record);
      else this.fail(record, timeoutError(record));
      this.dispatch();
      return;
    }
    if (record.lostWorkers === NO_LOSSES) {
      record.lostWorkers = [worker];
      record.lostWhy = [close];
    } else {
      record.lostWorkers.push(worker);
      record.lostWhy.push(close);
    }
    if (leftOnPurpose(close)) record.workersLeft++;
    if (silent) this.silentLosses.set(jobId, (this.silentLosses.get(jobId) ?? 0) + 1);
    if (this.bugs.has("lost-counts-as-failure")) record.failures++;
    if (record.lostWorkers.length - record.workersLeft >= this.maxLost) {
      this.terminate(record, "poison", {
        name: "PoisonJob",
        message: poisonMessage(record, this.silentLosses.get(jobId) ?? 0),
      });
    } else if (this.stopping !== undefined) {
      this.cancelled(record);
    } else {
      this.becomeReady(record);
    }
    this.dispatch();
  }

  /**
   * The worker holding a lease is alive: push its deadline back, unless its job ran past its
   * timeout (that lease then expires `leaseTimeoutMs` after its last renewal, so a handler
   * that ignores its AbortSignal cannot keep its worker).
   */
  heartbeat(conn: string): void {
    const record = this.leases.get(conn);
    if (record !== undefined && !record.timedOut) this.renew(conn);
  }

  /** The result of a `storing` job is durable: the job completes, and the store has room. */
  stored(jobId: string): void {
    const record = this.jobs.get(jobId);
    if (record?.state !== "storing") return;
    this.storingCount--;
    this.noRoom = false;
    this.complete(record, record.value!);
    this.dispatch();
  }

  /**
   * The store's disk has no room for the result of a `storing` job (ENOSPC, EDQUOT), which the
   * runtime holds and writes again: the job stays `storing`, no attempt of it is spent, and no
   * lease is granted until the store answers STORED or STORE_FAILED, so that the workers do
   * not compute results there is no room for (the runtime stops the run if no room comes).
   */
  storeFullFor(jobId: string): void {
    if (this.jobs.get(jobId)?.state === "storing") this.noRoom = true;
  }

  /**
   * The result of a `storing` job could not be made durable: the attempt failed (and is
   * retried, as any failed attempt), or the job is cancelled if the run is being cancelled.
   */
  storeFailed(jobId: string, error: JobError): void {
    const record = this.jobs.get(jobId);
    if (record?.state !== "storing") return;
    this.storingCount--;
    this.noRoom = false;
    record.value = undefined;
    this.setState(record, "blocked");
    if (this.stopping !== undefined) this.cancelled(record);
    else this.fail(record, error);
    this.dispatch();
  }

  /**
   * The attempt `attempt` of job `jobId` has run for its `timeoutMs`. If it still runs, the
   * attempt has failed: its holder is told to stop, and the job fails or is retried when the
   * holder answers or is lost (it keeps its lease till then, so the job has one lease).
   */
  attemptTimedOut(jobId: string, attempt: number): void {
    const record = this.jobs.get(jobId);
    if (record === undefined || !record.timeoutPending) return;
    record.timeoutPending = false;
    if (record.state !== "running" || record.attempts !== attempt || record.timedOut) return;
    if (this.bugs.has("timeout-releases-lease")) {
      this.requeueHeld(record.holder!, record);
      this.dispatch();
      return;
    }
    record.timedOut = true;
    this.effects.push({
      type: "lease.cancelled",
      conn: record.holder!,
      job: jobId,
      reason: timeoutError(record).message,
      timedOut: true,
    });
  }

  /**
   * The periodic lease sweep: every lease not renewed for more than `LEASE_SWEEPS` sweeps
   * (so for more than `leaseTimeoutMs`) has expired: ask for its connection to be closed,
   * once. The release comes later, through WORKER_LOST.
   */
  leaseSweep(): void {
    this.sweepPending = false;
    const now = ++this.sweeps;
    for (const [conn, at] of this.renewed) {
      if (now - at <= LEASE_SWEEPS) continue;
      this.renewed.delete(conn);
      const record = this.leases.get(conn)!;
      const job = record.job.id;
      this.effects.push({
        type: "lease.expired",
        conn,
        job,
        attempt: record.attempts,
        ...(record.timedOut && { timedOut: true as const }),
      });
      // The planted bug releases the expired lease here, and WORKER_LOST releases it again.
      if (this.bugs.has("release-lease-twice")) this.requeueHeld(conn, record);
    }
    if (this.renewed.size > 0) this.scheduleSweep();
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
   * worker is told to abort it. Running jobs end with whatever result their worker sends, and
   * a result being stored completes its job once it is durable.
   */
  cancel(reason: string): void {
    this.stopping = reason;
    this.effects.push({ type: "run.cancelled", reason });
    for (const record of this.jobs.values()) {
      if (record.state === "running") {
        this.effects.push({
          type: "lease.cancelled",
          conn: record.holder!,
          job: record.job.id,
          reason,
        });
      } else if (record.state === "ready" || record.state === "blocked") {
        // No cascade: every job not started is cancelled in its own right, not skipped.
        this.terminate(record, "cancelled", { name: "Cancelled", message: reason }, false);
      }
    }
    for (const conn of this.waiting.keys()) this.releaseConnection(conn);
    this.waiting.clear();
  }

  /**
   * Marks the run finished (first), then releases every waiting connection. `stopped`: by a
   * shutdown, whose reason the released workers are told, not because it is done.
   */
  finish(reason: string, stopped = false): void {
    this.finished = true;
    if (stopped) this.stoppedBecause ??= reason;
    // No lease expires once the run is finished (holders answer or are lost, as ever).
    this.renewed.clear();
    if (this.sweepPending) {
      this.sweepPending = false;
      this.timers.push({ type: "cancel", id: "lease-sweep" });
    }
    for (const record of this.jobs.values()) {
      if (record.state === "running") {
        this.effects.push({
          type: "lease.cancelled",
          conn: record.holder!,
          job: record.job.id,
          reason,
        });
        this.terminate(record, "shutdown", { name: "Shutdown", message: reason }, false);
      } else if (
        record.state === "ready" ||
        record.state === "blocked" ||
        record.state === "storing"
      ) {
        this.terminate(record, "shutdown", { name: "Shutdown", message: reason }, false);
      }
    }
    if (!this.bugs.has("forget-waiters-on-shutdown")) {
      for (const conn of this.waiting.keys()) this.releaseConnection(conn);
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

  /**
   * Adds jobs not on the board yet; `stored` holds results for some of them (rerun skips).
   * The new records are kept in a list as they are made: looking each up again by id, twice,
   * cost as much as making them (a lookup in the map of every job misses the caches).
   */
  private add(jobs: PlannedJob[], stored = this.options.stored): void {
    const added: JobRecord[] = [];
    for (const job of jobs) {
      if (this.jobs.has(job.id)) continue;
      const record: JobRecord = {
        job,
        state: "blocked",
        attempts: 0,
        failures: 0,
        lostWorkers: NO_LOSSES,
        lostWhy: NO_LOSSES,
        workersLeft: 0,
        waitingOn: 0,
        dependents: NO_DEPENDENTS,
        holder: undefined,
        retryPending: false,
        timeoutPending: false,
        timedOut: false,
        value: undefined,
        error: undefined,
        cause: undefined,
        cached: false,
        unknownDep: undefined,
        skippedFor: undefined,
      };
      this.jobs.set(job.id, record);
      this.tally.blocked++;
      added.push(record);
    }
    for (const record of added) {
      const { job } = record;
      for (const dep of job.deps) {
        const parent = this.jobs.get(dep);
        if (!parent) {
          record.unknownDep = dep;
          continue;
        }
        addDependent(parent, job.id);
        if (parent.state !== "completed") record.waitingOn++;
      }
    }
    if (stored !== undefined && stored.size > 0) {
      const ids = added.map((record) => record.job.id);
      this.joiningStored = new Set(ids.filter((id) => stored.has(id)));
    }
    for (const record of added) this.settleNew(record, stored);
    this.joiningStored = undefined;
  }

  /** Puts a newly added job where it belongs: stored, unsatisfiable, skipped, ready or blocked. */
  private settleNew(record: JobRecord, storedResults: ReadonlyMap<string, Json> | undefined): void {
    if (record.state === "completed" || record.state === "failed") return;
    const stored = storedResults?.get(record.job.id);
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
    if (offers && offers.length > 0 && !someTakes(offers, record.job.requires)) {
      this.terminate(record, "unsatisfiable", {
        name: "Unsatisfiable",
        message: noWorkerCanTake([record.job], offers, this.options.offerMore),
      });
      return;
    }
    for (const dep of record.job.deps) {
      const parent = this.jobs.get(dep);
      if (parent?.state === "failed") {
        this.skip(record, parent);
        return;
      }
    }
    if (record.waitingOn === 0 && record.state === "blocked") this.becomeReady(record);
  }

  /** A ready class whose head job a connection offering `resources` may take now. */
  private pickFor(resources: Resources): ReadyClass | undefined {
    if (this.readyCount === 0) return undefined;
    for (const cls of this.ready.values()) {
      if (!this.underThrottle(cls.kind) || !canTake(resources, cls.requires)) continue;
      if (this.headOf(cls) !== undefined) return cls;
    }
    return undefined;
  }

  /** The first job of a class that is still ready, passing over (and dropping) stale entries. */
  private headOf(cls: ReadyClass): JobRecord | undefined {
    const leaseRunning = this.bugs.has("lease-running-job");
    while (cls.head < cls.queue.length) {
      const record = cls.queue[cls.head]!;
      const state = record.state;
      if (state === "ready" || (leaseRunning && state === "running")) return record;
      cls.head++;
    }
    if (cls.head > 0) {
      cls.queue = [];
      cls.head = 0;
    }
    return undefined;
  }

  private underThrottle(kind: string): boolean {
    if (!this.throttled) return true;
    const limit = this.options.throttle?.[kind];
    return limit === undefined || (this.runningByKind.get(kind) ?? 0) < limit;
  }

  /** Hands ready jobs to waiting connections until no waiting connection can take one. */
  private dispatch(): void {
    if (this.readyCount === 0 || this.waiting.size === 0 || this.finished || this.noRoom) return;
    for (const [conn, waiter] of this.waiting) {
      const cls = this.pickFor(waiter.resources);
      if (cls === undefined) continue;
      this.waiting.delete(conn);
      this.grant(conn, cls);
      if (this.readyCount === 0) return;
    }
  }

  /** Leases the head job of `cls` (which `pickFor` found ready) to `conn`. */
  private grant(conn: string, cls: ReadyClass): void {
    const record = cls.queue[cls.head]!;
    const job = record.job;
    if (record.state === "ready") {
      this.readyCount--;
      // The planted bug leaves the job in the ready queue, so another connection can lease it.
      if (!this.bugs.has("lease-running-job")) cls.head++;
    }
    this.setState(record, "running");
    record.holder = conn;
    record.attempts++;
    record.timedOut = false;
    if (job.timeoutMs !== undefined) {
      record.timeoutPending = true;
      this.timers.push({
        type: "start",
        id: `timeout:${job.id}`,
        delayMs: job.timeoutMs,
        event: { type: "ATTEMPT_TIMEOUT", job: job.id, attempt: record.attempts },
      });
    }
    this.runningCount++;
    if (this.throttled)
      this.runningByKind.set(job.kind, (this.runningByKind.get(job.kind) ?? 0) + 1);
    this.leases.set(conn, record);
    let deps = NO_DEPS;
    if (job.deps.length > 0) {
      // Keyed by job ids, which no other object shares: with no prototype the object is a
      // dictionary from the start, where `{}` took a new hidden class for each new id.
      deps = Object.create(null) as Record<string, Json>;
      for (const dep of job.deps) deps[dep] = this.jobs.get(dep)?.value ?? null;
    }
    this.effects.push(
      { type: "lease.granted", conn, job, deps, attempt: record.attempts },
      { type: "job.changed", job: job.id, kind: job.kind, state: "running" },
    );
    this.renew(conn);
  }

  /** Starts or pushes back the deadline of `conn`'s lease. */
  private renew(conn: string): void {
    if (this.leaseTimeoutMs <= 0 || this.finished) return;
    this.renewed.set(conn, this.sweeps);
    if (!this.sweepPending) this.scheduleSweep();
  }

  private scheduleSweep(): void {
    this.sweepPending = true;
    this.timers.push({
      type: "start",
      id: "lease-sweep",
      delayMs: Math.ceil(this.leaseTimeoutMs / LEASE_SWEEPS),
      event: { type: "LEASE_SWEEP" },
    });
  }

  /** Tells a connection there is no job for it: the run is done, or stopped early, and why. */
  private releaseConnection(conn: string): void {
    const reason = this.stopping ?? this.stoppedBecause;
    this.effects.push({
      type: "connection.released",
      conn,
      ...(reason !== undefined && { reason }),
    });
  }

  /** Ends a lease (result, loss, cancel). The job's state is the caller's business. */
  private release(conn: string, record: JobRecord): void {
    this.leases.delete(conn);
    this.renewed.delete(conn);
    if (record.holder !== conn) return;
    record.holder = undefined;
    this.stopTimeout(record);
    if (record.state === "running") {
      this.runningCount--;
      if (this.throttled)
        this.runningByKind.set(record.job.kind, this.runningByKind.get(record.job.kind)! - 1);
      this.setState(record, "blocked");
    }
  }

  /** Planted bugs only: the job is ready again while `conn` still holds its lease. */
  private requeueHeld(conn: string, record: JobRecord): void {
    this.release(conn, record);
    this.leases.set(conn, record);
    this.becomeReady(record);
  }

  /** Cancels the timer of the running attempt's timeout, if it is set. */
  private stopTimeout(record: JobRecord): void {
    if (!record.timeoutPending) return;
    record.timeoutPending = false;
    this.timers.push({ type: "cancel", id: `timeout:${record.job.id}` });
  }

  /** The one place a job's state changes, so that `counts()` stays exact. */
  private setState(record: JobRecord, state: JobState): void {
    // Two switches, not `tally[state]++`: a keyed access by a variable name is megamorphic.
    this.count(record.state, -1);
    this.count(state, 1);
    record.state = state;
  }

  private count(state: JobState, by: number): void {
    const tally = this.tally;
    switch (state) {
      case "blocked":
        tally.blocked += by;
        return;
      case "ready":
        tally.ready += by;
        return;
      case "running":
        tally.running += by;
        return;
      case "storing":
        tally.storing += by;
        return;
      case "completed":
        tally.completed += by;
        return;
      case "failed":
        tally.failed += by;
        return;
    }
  }

  private becomeReady(record: JobRecord): void {
    this.setState(record, "ready");
    const cls = this.classOf(record.job);
    if (cls.head > 1024 && cls.head * 2 > cls.queue.length) {
      cls.queue = cls.queue.slice(cls.head);
      cls.head = 0;
    }
    cls.queue.push(record);
    this.readyCount++;
    if (this.starting) return;
    this.effects.push({
      type: "job.changed",
      job: record.job.id,
      kind: record.job.kind,
      state: "ready",
    });
  }

  /** The ready class of `job`'s kind and requirements, made the first time one is ready. */
  private classOf(job: PlannedJob): ReadyClass {
    const last = this.lastClass;
    if (last !== undefined && last.kind === job.kind && last.requires === job.requires) return last;
    const key = readyKey(job);
    let cls = this.ready.get(key);
    if (!cls) {
      cls = { kind: job.kind, requires: job.requires, queue: [], head: 0 };
      this.ready.set(key, cls);
    }
    this.lastClass = cls;
    return cls;
  }

  /**
   * Takes a job out of the ready count. Its queue entry goes now if it is the head (a lease
   * always takes the head), else when it reaches the head: a job that is ready again later
   * (a retry, a lost worker) must queue behind the jobs already waiting.
   */
  private leaveReady(record: JobRecord): void {
    if (record.state !== "ready") return;
    this.readyCount--;
    const cls = this.classOf(record.job);
    if (cls.queue[cls.head] === record) cls.head++;
  }

  /**
   * The holder's completed result: with a result store the job is `storing` until the store
   * says the value is durable (STORED); without one, it completes now.
   */
  private completed(record: JobRecord, value: Json): void {
    if (!this.options.durable) {
      this.complete(record, value);
      return;
    }
    const { id, kind } = record.job;
    this.effects.push({ type: "result.store", job: id, kind, value });
    // The planted bug counts the job completed (its dependents start) before it is durable.
    if (this.bugs.has("complete-before-durable")) {
      this.complete(record, value);
      return;
    }
    this.setState(record, "storing");
    record.value = value;
    this.storingCount++;
    this.effects.push({ type: "job.changed", job: id, kind, state: "storing" });
  }

  private complete(record: JobRecord, value: Json): void {
    this.leaveReady(record);
    this.setState(record, "completed");
    record.value = value;
    if (!this.starting) {
      this.effects.push({
        type: "job.changed",
        job: record.job.id,
        kind: record.job.kind,
        state: "completed",
      });
    }
    for (const id of record.dependents) {
      const child = this.jobs.get(id)!;
      child.waitingOn--;
      if (
        child.waitingOn === 0 &&
        child.state === "blocked" &&
        !child.retryPending &&
        !this.joiningStored?.has(id)
      ) {
        this.becomeReady(child);
      }
    }
  }

  private fail(record: JobRecord, error: JobError): void {
    record.failures++;
    if (record.failures > record.job.retries || error.retryable === false) {
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
    this.setState(record, "blocked");
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
  private block(
    record: JobRecord,
    needs: PlannedJob[],
    stored: ReadonlyMap<string, Json> | undefined,
  ): void {
    this.add(needs, stored);
    const fresh = needs.map((n) => n.id).filter((id) => !record.job.deps.includes(id));
    // The needs carry the needed jobs' own dependencies, so a needed job that runs after this
    // one brings this one along: searched last, the cycle is found through the job that
    // closes it (`loop → helper → loop`), not as this job needing itself (`loop → loop`).
    const self = record.job.id;
    const searched = fresh.includes(self) ? [...fresh.filter((id) => id !== self), self] : fresh;
    const cycle = findCycle([self], (id) => (id === self ? searched : this.jobs.get(id)?.job.deps));
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
      addDependent(dep, record.job.id);
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
    this.terminate(record, "skipped", this.skippedError(record, failedDep));
  }

  /**
   * Why `record` is skipped: its dependency `failedDep` failed, or was itself skipped for the
   * failure of `skippedFor`. The message names that job and the start of its error only, so
   * it stays short at the end of a long chain (10,000 skips used to repeat every message
   * before them, gigabytes in all).
   */
  private skippedError(record: JobRecord, failedDep: JobRecord): JobError {
    const root = failedDep.skippedFor ?? failedDep;
    record.skippedFor = root;
    const { id, kind } = failedDep.job;
    const message = root.error?.message ?? "unknown error";
    const shown = cutText(message, SKIP_MESSAGE_CHARS, `job ${root.job.id}'s error`);
    return {
      name: "Skipped",
      message:
        root === failedDep
          ? `skipped because dependency ${id} (${kind}) failed: ${shown}`
          : `skipped because dependency ${id} (${kind}) was skipped, after job ${root.job.id} (${root.job.kind}) failed: ${shown}`,
    };
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
      this.stopTimeout(record);
      this.runningCount--;
      if (this.throttled)
        this.runningByKind.set(record.job.kind, this.runningByKind.get(record.job.kind)! - 1);
    } else if (record.state === "storing") {
      // Shut down while its result was being written: whatever the store says later is ignored.
      this.storingCount--;
      record.value = undefined;
    }
    this.setState(record, "failed");
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
          this.terminate(child, "skipped", this.skippedError(child, parent), false);
          stack.push(child);
        }
      }
    }
    if (this.options.failFast && cause !== "skipped") this.firstFailure ??= record;
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

function timeoutError(record: JobRecord): JobError {
  const { id, kind, timeoutMs } = record.job;
  return {
    name: "JobTimeout",
    message: `job ${id} (${kind}) ran longer than its timeout of ${timeoutMs} ms (attempt ${record.attempts}), so its worker was told to stop it; give the job a longer timeoutMs if it needs more time`,
  };
}

/**
 * Where a job failed as poison sends the user to learn how its workers died: the machine does
 * not know; the engine's result says instead how their processes ended when the pool knows
 * (`poisonExits`).
 */
export const POISON_LOGS_ADVICE = "Look at those workers' logs for how they died.";

function poisonMessage(record: JobRecord, silent: number): string {
  const { id, kind } = record.job;
  const lost = record.lostWorkers.length - record.workersLeft;
  const named = namedLosses(record.lostWorkers.map((worker, i) => [worker, record.lostWhy[i]!]));
  const workers = `lost ${named.lost.join(", ")}${named.left.length > 0 ? `; went away ${named.left.join(", ")}` : ""}`;
  let message = `job ${id} (${kind}) was running on ${lost} worker${lost === 1 ? " that was" : "s that were"} lost${record.workersLeft > 0 ? ` and ${record.workersLeft} that went away on purpose` : ""} (${workers}); it is failed as poison so it cannot take down more workers. ${POISON_LOGS_ADVICE}`;
  if (silent > 0) {
    message += ` ${silent === lost ? `All ${lost}` : `${silent} of the ${lost}`} stopped answering the coordinator's pings while running it, as a worker does while a handler computes synchronously for longer than the coordinator waits: run the workers with --handler-thread (handlerThread in localPool and slurmPool), or make the handler await between pieces of its work.`;
  }
  return message;
}
