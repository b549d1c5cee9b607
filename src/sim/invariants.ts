import { BatonError } from "../errors.ts";
import { canTake } from "../graph/canTake.ts";
import type { Json, PlannedJob, Resources } from "../graph/job.ts";
import type { CoordinatorEmitted, CoordinatorEvent } from "../machines/coordinator.ts";
import {
  type CoordinatorEffect,
  DEFAULT_MAX_LOST,
  type JobBoard,
  type JobBoardOptions,
  type JobError,
  type JobRecord,
  type JobState,
} from "../machines/jobBoard.ts";
import { leftOnPurpose } from "../machines/workerClose.ts";
import { type SimInvariant, violationMessage } from "./simInvariants.ts";

/**
 * The coordinator invariants of DESIGN §4 that hold after every single step (6 is liveness);
 * 7, the throttle: no kind has more jobs running than its throttle allows; and 16: a job is
 * ready or granted only once every job it runs after has completed, and is given their
 * results; 17: a job fails only when it must; 18, given the coordinator's clock: an attempt is
 * stopped once it runs past its `timeoutMs`, and a retry waits out its backoff (what each
 * says: `SIM_INVARIANTS`).
 */
export type InvariantNumber = Extract<SimInvariant, 1 | 2 | 3 | 4 | 5 | 7 | 16 | 17 | 18>;

/** One broken invariant: its number, and what happened, naming the jobs and connections. */
export class InvariantViolation extends BatonError {
  constructor(
    readonly invariant: InvariantNumber,
    readonly detail: string,
  ) {
    super("INVARIANT", violationMessage(invariant, detail));
  }
}

/** What the event of the current step leads the checker to expect from its effects. */
interface Step {
  /** A LEASE from a connection that neither holds nor waits: it must get a job, a release, or wait. */
  asked?: { conn: string; resources: Resources };
  /**
   * A RESULT: whether its sender holds the job, whether it is heard (the holder of a running
   * job: it must not be dropped), and whether the coordinator dropped it. Anything not from
   * the holder must be dropped; the holder of a job shut down while running only gives its
   * lease back, and the result may be dropped or not.
   */
  result?: { conn: string; job: string; holder: boolean; heard: boolean; dropped: boolean };
  /** Connections told to stop during this step. */
  released: string[];
  /** Jobs granted during this step, with the results of their dependencies they were given. */
  granted: { job: PlannedJob; deps: Record<string, Json> }[];
  /** Jobs that failed for their own errors or as poison during this step. */
  failed: { id: string; cause: "error" | "poison" }[];
}

/** What the checker has seen of one job, from the events sent and the effects emitted. */
interface JobAccount {
  /**
   * The state last reported by `job.changed`. The board reports changes, not its starting
   * state: the first `check` takes that from the board; a job added later starts blocked.
   */
  reported: JobState | undefined;
  failedResults: number;
  lostWhileRunning: number;
  /** Of those, workers that went away on purpose, which do not count towards maxLost. */
  leftWhileRunning: number;
  /**
   * The running attempt was cancelled for running past its timeout: however it ends, short
   * of a completed result, it is a failed attempt, not a lost one.
   */
  timedOut: boolean;
  /** A terminal job's value or error as first seen (`settled`); it must never be replaced. */
  settled: boolean;
  result: Json | JobError | undefined;
  /** When the running attempt was granted (with `now`). */
  grantedAt: number;
  /** When a failed attempt was last counted, until the next grant (with `now`). */
  failedAt: number | undefined;
}

const terminal = (state: JobState | undefined): boolean =>
  state === "completed" || state === "failed";

/**
 * Checks the coordinator's invariants (DESIGN §4, 1–5, and 7, 16, 17 and 18) after every
 * step. It watches the coordinator from outside, as the world does: every event sent to it
 * (`sent`), every effect it emits (`observe`), then the board itself (`check`). From those
 * it keeps its own account of who was told to hold which job, who waits, what each job was
 * reported to be and how many failed results and lost workers each job has seen, and holds
 * the board to that account.
 *
 * Feed it every event before it is sent, including late and duplicate ones; timer events
 * (`LEASE_SWEEP`, `RETRY_DUE`) may be passed or left out. It never changes the board and
 * does no I/O, so tests and the deterministic simulation use it alike. The first violation
 * sticks: `check` keeps returning it.
 *
 * @example
 * ```ts
 * const checker = new InvariantChecker(input);
 * const actor = createActor(coordinatorMachine, { input });
 * actor.on("*", (emitted) => checker.observe(emitted));
 * actor.start();
 * checker.check(actor.getSnapshot().context.board); // learns the starting state
 * const step = (event: CoordinatorEvent) => {
 *   checker.sent(event);
 *   actor.send(event);
 *   const violation = checker.check(actor.getSnapshot().context.board);
 *   if (violation) throw violation; // InvariantViolation: invariant 1 (...) violated: ...
 * };
 * step({ type: "LEASE", conn: "c1", worker: "w1", resources: { cpus: 1 } });
 * ```
 */
export class InvariantChecker {
  /** Connection → the job it was granted and has not given back. */
  private readonly held = new Map<string, string>();
  /** Job → the connection holding it. */
  private readonly holderOf = new Map<string, string>();
  /** Connections that asked for a job and got neither a job nor a release yet. */
  private readonly waiting = new Map<string, Resources>();
  /** Each job's account: one lookup per job in the scan after every step. */
  private readonly accounts = new Map<string, JobAccount>();
  /**
   * The last scan's jobs, in the board's order (their ids, records and accounts, one array
   * each): the next scan takes a job's account from here when the board has the same record
   * under the same id at that place.
   */
  private readonly scannedIds: string[] = [];
  private readonly scannedRecords: JobRecord[] = [];
  private readonly scannedAccounts: JobAccount[] = [];
  private readonly maxLost: number;
  private stopping = false;
  private finished = false;
  /**
   * The store's last answer for a job being stored was STORE_FULL: no lease is granted until
   * its next STORED or STORE_FAILED, so connections may wait while jobs are ready (not 4).
   */
  private storeFull = false;
  private step: Step = { released: [], granted: [], failed: [] };
  private started = false;
  /** The board of the first `check` (a coordinator keeps one), read for a job's dependencies. */
  private board: JobBoard | undefined;
  private violation: InvariantViolation | undefined;

  constructor(
    private readonly options: Pick<JobBoardOptions, "maxLost" | "throttle" | "durable"> & {
      /** The coordinator's clock: with it, attempt timeouts and retry backoffs are checked (18). */
      now?: (() => number) | undefined;
    } = {},
  ) {
    this.maxLost = options.maxLost ?? DEFAULT_MAX_LOST;
  }

  /** An event is about to be sent to the coordinator. */
  sent(event: CoordinatorEvent): void {
    switch (event.type) {
      case "LEASE":
        if (!this.held.has(event.conn) && !this.waiting.has(event.conn)) {
          this.step.asked = { conn: event.conn, resources: event.resources };
        }
        break;
      case "RESULT": {
        const holder = this.held.get(event.conn) === event.job;
        const heard = holder && this.reported(event.job) === "running";
        this.step.result = { conn: event.conn, job: event.job, holder, heard, dropped: false };
        if (!holder) break;
        const account = this.account(event.job);
        const failed =
          event.outcome.status === "failed" ||
          (account.timedOut && event.outcome.status === "blocked");
        if (heard && !this.stopping && failed) this.failedAttempt(account);
        this.giveBack(event.conn, event.job);
        break;
      }
      case "WORKER_LOST": {
        this.waiting.delete(event.conn);
        const job = this.held.get(event.conn);
        if (job === undefined) break;
        const account = this.account(job);
        if (this.reported(job) === "running") {
          if (!account.timedOut) {
            account.lostWhileRunning++;
            if (leftOnPurpose(event)) account.leftWhileRunning++;
          } else if (!this.stopping) this.failedAttempt(account);
        }
        this.giveBack(event.conn, job);
        break;
      }
      case "STORE_FAILED":
        if (this.reported(event.job) !== "storing") break;
        this.storeFull = false;
        if (!this.stopping) this.failedAttempt(this.account(event.job));
        break;
      case "STORED":
        if (this.reported(event.job) === "storing") this.storeFull = false;
        break;
      case "STORE_FULL":
        if (this.reported(event.job) === "storing") this.storeFull = true;
        break;
    }
  }

  /** The coordinator emitted a batch of effects, or the end of the run. */
  observe(emitted: CoordinatorEmitted): void {
    if (emitted.type === "run.finished") this.finished = true;
    else for (const effect of emitted.effects) this.effect(effect);
  }

  /**
   * The step is over: hold the board to everything seen so far. Call it once right after the
   * coordinator starts, too: that first call learns each job's starting state.
   */
  check(board: JobBoard): InvariantViolation | undefined {
    if (!this.started) {
      this.started = true;
      this.board = board;
      for (const [id, record] of board.jobs) {
        const account = this.account(id);
        account.reported ??= record.state;
      }
    }
    const { asked, result, released, granted, failed } = this.step;
    this.step = { released: [], granted: [], failed: [] };
    if (asked) this.waiting.set(asked.conn, asked.resources);
    if (board.finished) this.finished = true;
    if (result && !result.holder && !result.dropped) {
      this.fail(
        2,
        `the result for job ${result.job} from connection ${result.conn}, which does not hold it, was not dropped`,
      );
    }
    for (const conn of released) {
      if (!this.finished && !this.stopping) {
        this.fail(4, `connection ${conn} was told to stop while the run goes on`);
      }
    }
    for (const { job, deps } of granted) this.checkDepsGiven(board, job, deps);
    for (const { id, cause } of failed) this.checkFailure(board, id, cause);
    this.checkLeases(board);
    this.checkJobs(board);
    return this.violation;
  }

  private effect(effect: CoordinatorEffect): void {
    switch (effect.type) {
      case "lease.granted":
        this.granted(effect.conn, effect.job.id);
        this.checkDepsDone(effect.job, `was granted to connection ${effect.conn}`);
        this.step.granted.push({ job: effect.job, deps: effect.deps });
        break;
      case "lease.cancelled":
      case "lease.expired":
        if (this.held.get(effect.conn) !== effect.job) {
          this.fail(
            1,
            `${effect.type} names job ${effect.job} on connection ${effect.conn}, which holds ${this.held.get(effect.conn) ?? "nothing"}`,
          );
        }
        if (effect.type === "lease.cancelled" && effect.timedOut) {
          this.account(effect.job).timedOut = true;
        }
        break;
      case "run.cancelled":
        // A CANCEL, or the board's own at a first failure (failFast).
        this.stopping = true;
        break;
      case "connection.released":
        this.waiting.delete(effect.conn);
        if (this.step.asked?.conn === effect.conn) this.step.asked = undefined;
        this.step.released.push(effect.conn);
        break;
      case "job.changed": {
        const before = this.reported(effect.job);
        if (terminal(before)) {
          this.fail(2, `job ${effect.job} was ${before}, then changed to ${effect.state}`);
        }
        if (effect.state === "failed" && effect.cause === undefined) {
          this.fail(2, `job ${effect.job} failed without a cause`);
        }
        if (effect.cause === "error" || effect.cause === "poison") {
          this.step.failed.push({ id: effect.job, cause: effect.cause });
        } else if (effect.cause === "skipped") this.checkSkipped(effect.job);
        // With a store, a job that ran completes only from storing (once its result is
        // durable); a job first heard of as completed came from the store.
        if (
          this.options.durable &&
          effect.state === "completed" &&
          before !== undefined &&
          before !== "storing"
        ) {
          this.fail(2, `job ${effect.job} completed from ${before}, before its result was stored`);
        }
        this.account(effect.job).reported = effect.state;
        if (effect.state === "ready") {
          const record = this.board?.jobs.get(effect.job);
          if (record !== undefined) {
            this.checkDepsDone(record.job, "was ready");
            this.checkBackoff(record);
          }
        }
        break;
      }
      case "result.dropped": {
        const result = this.step.result;
        if (result?.conn !== effect.conn || result.job !== effect.job) break;
        result.dropped = true;
        if (result.heard) {
          this.fail(
            2,
            `the result for job ${effect.job} from connection ${effect.conn}, which holds it, was dropped (${effect.reason})`,
          );
        }
        break;
      }
    }
  }

  /** Invariant 16: a job is ready or granted only once every job it runs after has completed. */
  private checkDepsDone(job: PlannedJob, what: string): void {
    for (const dep of job.deps) {
      const state = this.reported(dep);
      if (state !== "completed") {
        this.fail(
          16,
          `job ${job.id} (${job.kind}) ${what} while job ${dep}, which it runs after, is ${state ?? "not on the board"}`,
        );
      }
    }
  }

  /** Invariant 16: a granted job was given the result each job it runs after completed with. */
  private checkDepsGiven(board: JobBoard, job: PlannedJob, deps: Record<string, Json>): void {
    for (const dep of job.deps) {
      const value = board.jobs.get(dep)?.value;
      if (deps[dep] !== value) {
        this.fail(
          16,
          `job ${job.id} (${job.kind}) was given ${JSON.stringify(deps[dep])} as the result of job ${dep}, which completed with ${JSON.stringify(value)}`,
        );
      }
    }
  }

  /** Invariant 17: a job is skipped only when a job it runs after has failed. */
  private checkSkipped(id: string): void {
    const job = this.board?.jobs.get(id)?.job;
    if (job === undefined || job.deps.some((dep) => this.reported(dep) === "failed")) return;
    const states = job.deps.map((dep) => `${dep} ${this.reported(dep) ?? "not on the board"}`);
    this.fail(
      17,
      `job ${id} (${job.kind}) was skipped, but no job it runs after failed (${states.join(", ") || "it runs after none"})`,
    );
  }

  /**
   * Invariant 17: a job fails for its own error only after its last attempt (`retries` + 1
   * failed ones), or one its handler called not retryable, or before any attempt (a
   * dependency not in the graph); as poison only once `maxLost` of its workers were lost.
   */
  private checkFailure(board: JobBoard, id: string, cause: "error" | "poison"): void {
    const record = board.jobs.get(id);
    if (record === undefined) return;
    const { job, failures, attempts, error, lostWorkers, workersLeft } = record;
    if (cause === "error") {
      if (failures === job.retries + 1 || error?.retryable === false || attempts === 0) return;
      this.fail(
        17,
        `job ${id} (${job.kind}) failed after ${failures} failed attempt${failures === 1 ? "" : "s"} with ${job.retries} retries, and its error is retryable`,
      );
    } else if (lostWorkers.length - workersLeft < this.maxLost) {
      this.fail(
        17,
        `job ${id} (${job.kind}) failed as poison after ${lostWorkers.length - workersLeft} lost workers, fewer than maxLost ${this.maxLost}`,
      );
    }
  }

  private failedAttempt(account: JobAccount): void {
    account.failedResults++;
    if (this.options.now !== undefined) account.failedAt = this.options.now();
  }

  /** Invariant 18: a job ready again after a failed attempt has waited out its backoff. */
  private checkBackoff(record: JobRecord): void {
    const account = this.accounts.get(record.job.id);
    const { backoff, id, kind } = record.job;
    if (account?.failedAt === undefined || backoff === undefined || backoff.initialMs <= 0) return;
    const due = Math.min(
      backoff.initialMs * (backoff.factor ?? 2) ** (record.failures - 1),
      backoff.maxMs ?? Number.POSITIVE_INFINITY,
    );
    const waited = this.options.now!() - account.failedAt;
    if (waited < due) {
      this.fail(
        18,
        `job ${id} (${kind}) was ready ${waited} ms after its failed attempt ${record.failures}, before its backoff of ${due} ms`,
      );
    }
  }

  private granted(conn: string, job: string): void {
    if (this.finished || this.stopping) {
      const after = this.finished ? "" : " after the run was cancelled";
      this.fail(5, `job ${job} was granted to connection ${conn}${after}`);
    }
    const holds = this.held.get(conn);
    if (holds !== undefined) {
      this.fail(1, `connection ${conn} was granted job ${job} while holding job ${holds}`);
    }
    const holder = this.holderOf.get(job);
    if (holder !== undefined) {
      this.fail(
        1,
        `job ${job} was granted to connection ${conn} while connection ${holder} holds it`,
      );
    }
    if (terminal(this.reported(job))) {
      this.fail(2, `job ${job} was granted to connection ${conn} after it ${this.reported(job)}`);
    }
    this.held.set(conn, job);
    this.holderOf.set(job, conn);
    const account = this.account(job);
    account.timedOut = false;
    account.failedAt = undefined;
    if (this.options.now !== undefined) account.grantedAt = this.options.now();
    this.waiting.delete(conn);
    if (this.step.asked?.conn === conn) this.step.asked = undefined;
  }

  private giveBack(conn: string, job: string): void {
    this.held.delete(conn);
    if (this.holderOf.get(job) === conn) this.holderOf.delete(job);
  }

  /** Invariant 1 on the lease table, and 4 and 5 on the waiting connections. */
  private checkLeases(board: JobBoard): void {
    for (const [conn, leased] of board.leases) {
      const job = leased.job.id;
      const told = this.held.get(conn);
      if (told !== job) {
        this.fail(
          1,
          `connection ${conn} holds job ${job} on the board but was granted ${told ?? "nothing"}`,
        );
      }
      if (board.waiting.has(conn)) {
        this.fail(1, `connection ${conn} holds job ${job} and also waits`);
      }
      const holder = board.jobs.get(job)?.holder;
      if (holder !== conn) {
        this.fail(1, `connection ${conn} leases job ${job}, whose holder is ${holder ?? "nobody"}`);
      }
    }
    if (board.leases.size !== this.held.size) {
      for (const [conn, job] of this.held) {
        if (!board.leases.has(conn)) {
          this.fail(
            1,
            `connection ${conn} was granted job ${job}, but the board has no lease for it`,
          );
        }
      }
    }
    for (const conn of this.waiting.keys()) {
      if (this.finished) this.fail(5, `connection ${conn} still waits: it was never released`);
      else if (!board.waiting.has(conn)) {
        this.fail(4, `connection ${conn} waits for a job, but the board has forgotten it`);
      }
    }
    for (const conn of board.waiting.keys()) {
      if (!this.waiting.has(conn)) {
        this.fail(4, `connection ${conn} waits on the board, but it was already answered`);
      }
    }
  }

  /**
   * Invariants 1 (running jobs), 2 and 3 on every job, then 7 on the running ones and 4 on the
   * ready ones. Every job is held to its account after every step (no job is skipped as
   * unchanged: a bug need not announce what it changed); the scan is kept to one lookup per
   * job, and the ready classes are only gathered while some connection waits.
   */
  private checkJobs(board: JobBoard): void {
    const throttle = this.options.throttle ?? {};
    // Running jobs are counted by kind only for a throttle (7, and 4's throttled kinds).
    const running = this.options.throttle === undefined ? undefined : new Map<string, number>();
    // The ready jobs by class, gathered only while some connection waits (4).
    const ready =
      this.waiting.size > 0 && !this.storeFull ? new Map<string, PlannedJob>() : undefined;
    const { scannedIds, scannedRecords, scannedAccounts } = this;
    let at = 0;
    board.jobs.forEach((record, id) => {
      let account: JobAccount | undefined;
      if (scannedRecords[at] === record && scannedIds[at] === id) account = scannedAccounts[at];
      else {
        account = this.accounts.get(id);
        if (account !== undefined) {
          scannedIds[at] = id;
          scannedRecords[at] = record;
          scannedAccounts[at] = account;
        }
      }
      at++;
      const { state } = record;
      const told = account?.reported ?? "blocked";
      if (terminal(state) || terminal(told)) {
        if (state !== told) {
          this.fail(2, `job ${id} is ${state} on the board but was reported ${told}`);
        }
        const result = state === "completed" ? record.value : record.error;
        const settled = account ?? this.account(id);
        if (!settled.settled) {
          settled.settled = true;
          settled.result = result;
        } else if (settled.result !== result) {
          this.fail(2, `job ${id} ${state}, and later its stored result was replaced`);
        }
      } else if (state === "running") {
        const { kind, timeoutMs } = record.job;
        running?.set(kind, (running.get(kind) ?? 0) + 1);
        const now = this.options.now;
        if (timeoutMs !== undefined && now !== undefined && account !== undefined) {
          const ran = now() - account.grantedAt;
          if (ran > timeoutMs && !account.timedOut) {
            this.fail(
              18,
              `job ${id} (${kind}) has run for ${ran} ms of attempt ${record.attempts}, past its timeoutMs of ${timeoutMs}, and its holder was not told to stop`,
            );
          }
        }
        if (record.holder === undefined || board.leases.get(record.holder)?.job.id !== id) {
          this.fail(1, `job ${id} is running without a lease (holder: ${record.holder ?? "none"})`);
        }
      } else if (state === "storing") {
        if (record.holder !== undefined) {
          this.fail(1, `job ${id} is being stored but connection ${record.holder} still holds it`);
        }
      } else if (state === "ready" && ready !== undefined) {
        const { kind, requires } = record.job;
        const key = `${kind}\u0000${requires.cpus ?? 0}/${requires.gpus ?? 0}/${requires.memory ?? 0}`;
        if (!ready.has(key)) ready.set(key, record.job);
      }
      const failed = account?.failedResults ?? 0;
      const lost = account?.lostWhileRunning ?? 0;
      const left = account?.leftWhileRunning ?? 0;
      const { failures, lostWorkers, workersLeft } = record;
      if (failures !== failed) {
        this.fail(
          3,
          `job ${id} counts ${failures} failed attempts, but ${failed} failed results were accepted for it (workers lost while running it: ${lostWorkers.join(", ") || "none"})`,
        );
      }
      // A job's retries are at least 0 (planning refuses others): none failed, none too many.
      if (failures !== 0 && failures > record.job.retries + 1) {
        this.fail(3, `job ${id} failed ${failures} times with ${record.job.retries} retries`);
      }
      if (record.error?.retryable === false && !terminal(state)) {
        this.fail(3, `job ${id} is ${state} after a failure its handler called not retryable`);
      }
      if (lostWorkers.length !== lost) {
        this.fail(
          3,
          `job ${id} counts ${lostWorkers.length} lost workers (${lostWorkers.join(", ")}), but ${lost} were lost while running it`,
        );
      }
      if (workersLeft !== left) {
        this.fail(
          3,
          `job ${id} counts ${workersLeft} workers that went away on purpose, but ${left} did while running it`,
        );
      }
      if (lostWorkers.length - workersLeft > this.maxLost) {
        this.fail(
          3,
          `job ${id} lost ${lostWorkers.length - workersLeft} workers (not counting ${workersLeft} that went away on purpose), more than maxLost ${this.maxLost}`,
        );
      }
    });
    if (running !== undefined) {
      for (const [kind, count] of running) {
        const limit = throttle[kind];
        if (limit !== undefined && count > limit) {
          this.fail(7, `${count} jobs of kind ${kind} run at once; its throttle is ${limit}`);
        }
      }
    }
    if (ready === undefined) return;
    for (const [conn, resources] of this.waiting) {
      for (const job of ready.values()) {
        const limit = throttle[job.kind];
        if (limit !== undefined && (running?.get(job.kind) ?? 0) >= limit) continue;
        if (canTake(resources, job.requires)) {
          this.fail(
            4,
            `connection ${conn} waits while job ${job.id} (${job.kind}), which it can take, is ready`,
          );
        }
      }
    }
  }

  private reported(job: string): JobState | undefined {
    return this.accounts.get(job)?.reported;
  }

  private account(job: string): JobAccount {
    let account = this.accounts.get(job);
    if (account === undefined) {
      account = {
        reported: undefined,
        failedResults: 0,
        lostWhileRunning: 0,
        leftWhileRunning: 0,
        timedOut: false,
        settled: false,
        result: undefined,
        grantedAt: 0,
        failedAt: undefined,
      };
      this.accounts.set(job, account);
    }
    return account;
  }

  private fail(invariant: InvariantNumber, detail: string): void {
    this.violation ??= new InvariantViolation(invariant, detail);
  }
}
