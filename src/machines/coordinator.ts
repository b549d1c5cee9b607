import { emit, enqueueActions, setup } from "xstate";
import type { PlannedJob, Resources } from "../graph/job.ts";
import {
  type CoordinatorEffect,
  JobBoard,
  type JobBoardOptions,
  type JobError,
  type JobState,
  type Outcome,
  type TimerEvent,
} from "./jobBoard.ts";

/** Events the coordinator understands (DESIGN §4), plus its own timers. */
export type CoordinatorEvent =
  | { type: "LEASE"; conn: string; worker: string; resources: Resources }
  | { type: "RESULT"; conn: string; job: string; outcome: Outcome }
  /**
   * `code` and `reason`: how its connection closed (see `WorkerClose`). `silent`: the
   * connection was closed because the worker stopped answering pings or let its lease
   * expire, not because the link closed (a poison job's error then says so). A worker that
   * closed first with 1001 left on purpose (`leftOnPurpose`).
   */
  | {
      type: "WORKER_LOST";
      conn: string;
      code: number;
      reason: string;
      silent?: boolean;
    }
  | { type: "HEARTBEAT"; conn: string }
  /** The runtime made a `storing` job's result durable (after `result.store`). */
  | { type: "STORED"; job: string }
  /** The runtime could not make a `storing` job's result durable: a failed attempt. */
  | { type: "STORE_FAILED"; job: string; error: JobError }
  /**
   * The store's disk had no room for a `storing` job's result: the runtime holds it and
   * writes it again (no attempt is spent); no lease is granted until STORED or STORE_FAILED.
   */
  | { type: "STORE_FULL"; job: string }
  | { type: "CANCEL"; reason?: string }
  | { type: "SHUTDOWN"; reason?: string }
  | TimerEvent;

/**
 * What the coordinator reports: the effects of one event, in order, as one batch (one emit
 * per event keeps a burst — a fan-out unblocking 100,000 jobs — linear; an event that changed
 * nothing emits an empty batch) with the event that caused them, and the end of the run.
 */
export type CoordinatorEmitted =
  | { type: "effects"; event: CoordinatorEvent; effects: CoordinatorEffect[] }
  | { type: "run.finished"; counts: Record<JobState, number> };

export interface CoordinatorInput extends JobBoardOptions {
  jobs: Iterable<PlannedJob>;
}

/**
 * Every event is one action: the board decides it, then its effects are emitted (see
 * `decide`).
 */
const DECIDE = "decide";

/** Hands `event` to the board, which decides it and gathers what is to be done. */
function apply(board: JobBoard, event: CoordinatorEvent): void {
  switch (event.type) {
    case "LEASE":
      board.lease(event.conn, event.worker, event.resources);
      return;
    case "RESULT":
      board.result(event.conn, event.job, event.outcome);
      return;
    case "WORKER_LOST":
      board.workerLost(
        event.conn,
        { code: event.code, reason: event.reason },
        { silent: event.silent === true },
      );
      return;
    case "HEARTBEAT":
      board.heartbeat(event.conn);
      return;
    case "STORED":
      board.stored(event.job);
      return;
    case "STORE_FAILED":
      board.storeFailed(event.job, event.error);
      return;
    case "STORE_FULL":
      board.storeFullFor(event.job);
      return;
    case "LEASE_SWEEP":
      board.leaseSweep();
      return;
    case "RETRY_DUE":
      board.retryDue(event.job);
      return;
    case "ATTEMPT_TIMEOUT":
      board.attemptTimedOut(event.job, event.attempt);
      return;
    case "CANCEL":
      board.cancel(event.reason ?? "the run was cancelled");
      return;
    case "SHUTDOWN":
      board.finish(event.reason ?? "the run was shut down", true);
      return;
  }
}

/** What the coordinator hears while jobs may still run (`running` and `cancelling`). */
const whileJobsRun = {
  LEASE: { actions: DECIDE },
  RESULT: { actions: DECIDE },
  WORKER_LOST: { actions: DECIDE },
  HEARTBEAT: { actions: DECIDE },
  STORED: { actions: DECIDE },
  STORE_FAILED: { actions: DECIDE },
  STORE_FULL: { actions: DECIDE },
  // A sweep nearly always asks for the next one: its timer is started in the same step, not
  // by the root's eventless transition, which would cost XState a second microstep.
  LEASE_SWEEP: { actions: [DECIDE, "scheduleTimers"] },
  RETRY_DUE: { actions: DECIDE },
  ATTEMPT_TIMEOUT: { actions: DECIDE },
  SHUTDOWN: { target: "done", actions: DECIDE },
} as const;

/**
 * The coordinator: one per run. It decides who runs what; the runtime carries out what it
 * emits (`lease.granted`, `result.store`, … in one `effects` batch per event). States:
 * `running` until nothing is ready, running or being stored, `cancelling` after CANCEL (or,
 * with `failFast`, after the first job that failed for good) until running jobs answer and
 * their results are stored, then `done`, which is not final so that
 * late workers are still told to stop.
 *
 * Every event is one action, `decide`: it hands the event to the board and emits what the
 * board gathered. Timers are rare
 * (the lease sweep, retry backoffs, attempt timeouts), so they are not scheduled on every event: the root's
 * eventless transition `scheduleTimers` runs only when the board has asked for one. A
 * LEASE_SWEEP, which asks for the next sweep while leases are held, runs it in its own step.
 *
 * @example
 * ```ts
 * const coordinator = createActor(coordinatorMachine, {
 *   input: { jobs: [{ id: "a", kind: "double", input: 21, deps: [], requires: {}, retries: 3 }] },
 * });
 * coordinator.on("effects", ({ effects }) => console.log(effects));
 * coordinator.start();
 * coordinator.send({ type: "LEASE", conn: "c1", worker: "w1", resources: { cpus: 1 } }); // grants "a" to c1
 * coordinator.stop(); // when done: a started actor's timers (the lease's deadline) keep the process alive
 * ```
 */
export const coordinatorMachine = setup({
  types: {
    context: {} as { board: JobBoard },
    events: {} as CoordinatorEvent,
    input: {} as CoordinatorInput,
    emitted: {} as CoordinatorEmitted,
  },
  actions: {
    // One builtin, where a plain action handing the event to the board and an `emit` of its
    // effects were two: each action is an object, a call and an inspection of XState's a
    // transition (ARCHITECTURE, "XState's cost per event"). The board is the context's own
    // mutable state, as it was with the plain action: the emit's expression runs as the
    // transition's actions do, in order, once.
    decide: emit(({ context, event }) => {
      apply(context.board, event);
      return { type: "effects" as const, event, effects: context.board.takeEffects() };
    }),
    scheduleTimers: enqueueActions(({ context, enqueue }) => {
      for (const timer of context.board.takeTimers()) {
        enqueue.cancel(timer.id);
        if (timer.type === "start")
          enqueue.raise(timer.event, { delay: timer.delayMs, id: timer.id });
      }
    }),
    // A builtin, as `finish` is: XState defers plain actions taken while the actor starts, and
    // a job can fail for good while the board is built (nothing can take it).
    cancelAtFirstFailure: enqueueActions(({ context, event, enqueue }) => {
      context.board.cancelAtFirstFailure();
      enqueue.emit({ type: "effects", event, effects: context.board.takeEffects() });
    }),
    finish: enqueueActions(({ context, event, enqueue }) => {
      const board = context.board;
      if (!board.finished) board.finish("the run is done");
      const effects = board.takeEffects();
      if (effects.length > 0) enqueue.emit({ type: "effects", event, effects });
      enqueue.emit({ type: "run.finished", counts: board.counts() });
    }),
  },
  guards: {
    runComplete: ({ context }) => context.board.done,
    failedFast: ({ context }) => context.board.failedFast,
    timersRequested: ({ context }) => context.board.timers.length > 0,
  },
}).createMachine({
  id: "coordinator",
  context: ({ input }) => ({ board: new JobBoard(input.jobs, input) }),
  always: { guard: "timersRequested", actions: "scheduleTimers" },
  initial: "running",
  states: {
    running: {
      always: [
        { guard: "runComplete", target: "done" },
        // `failFast`: a job failed for good; once its event is over, the rest is cancelled.
        {
          guard: "failedFast",
          target: "cancelling",
          actions: "cancelAtFirstFailure",
        },
      ],
      on: {
        ...whileJobsRun,
        CANCEL: { target: "cancelling", actions: DECIDE },
      },
    },
    cancelling: {
      always: { guard: "runComplete", target: "done" },
      on: whileJobsRun,
    },
    done: {
      entry: "finish",
      on: {
        LEASE: { actions: DECIDE },
        RESULT: { actions: DECIDE },
        WORKER_LOST: { actions: DECIDE },
      },
    },
  },
});
