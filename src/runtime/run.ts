import { EventEmitter } from "node:events";
import { didYouMean } from "../closestName.ts";
import { ConfigError, ListenerError } from "../errors.ts";
import type { JobSpec, Json } from "../graph/job.ts";
import { preview } from "../graph/label.ts";
import type { FailureCause, JobError, JobState } from "../machines/jobBoard.ts";
import type { WorkerClose } from "../machines/workerClose.ts";
import { checkOptionNames } from "../optionNames.ts";
import type { ProcExit } from "./ports.ts";

/** How a job ended, as users see it: failures caused by others are told apart. */
export type JobStatus = "completed" | "failed" | "skipped" | "cancelled";

/**
 * One job's result in a `RunResult`; `Value` is its value's type (see `jobBuilder`). Its
 * `status` tells which it holds: a completed job its `value` (`null` when the handler returned
 * nothing), any other job the `error` that ended it and its `cause`, so that once `status` is
 * checked the compiler knows which is there.
 *
 * @example
 * ```ts
 * const jobs = defineJobs({ sum: (xs: number[]) => xs.reduce((a, b) => a + b, 0) });
 * const total = jobBuilder(jobs)("sum", [1, 2, 3]);
 * const outcome = (await createEngine({ jobs }).run([total])).get(total);
 * if (outcome.status === "completed") console.log(outcome.value.toFixed(1)); // "6.0": a number
 * else console.error(`${outcome.cause}: ${outcome.error.message}`); // "error: …"
 * ```
 */
export type JobOutcome<Value = Json> = {
  id: string;
  kind: string;
  /** Leases granted (0 for a job skipped, cancelled or taken from the store). */
  attempts: number;
  /** Workers lost while running it, those that left on purpose included. */
  lostWorkers: readonly string[];
  /**
   * How each of `lostWorkers` ended, in the same order: its connection's close code and reason
   * (`{ code: 1006, reason: "" }`: its link broke; 1001: it left on purpose), and its process's
   * `exit` when the pool knows it (see `WorkerLoss`).
   */
  lostWhy: readonly WorkerLoss[];
  /** The result came from the store of an earlier run. */
  cached: boolean;
  /**
   * The name of the worker that ran the job's last attempt (`local-3`, or the `--name` of a
   * `baton worker`); absent for a job that never ran (skipped, cancelled, or from the store).
   */
  worker?: string | undefined;
  /** Clock time the last attempt started and the job finished, in ms. */
  startedAt?: number | undefined;
  finishedAt?: number | undefined;
} & (
  | {
      status: "completed";
      /** What the handler returned (`null` for nothing), or the store held. */
      value: Value;
      error?: undefined;
      cause?: undefined;
    }
  | {
      status: Exclude<JobStatus, "completed">;
      value?: undefined;
      /** Why the job failed, was skipped or was cancelled. */
      error: JobError;
      /** What kind of failure. */
      cause: FailureCause;
    }
);

/**
 * How a worker lost while running a job went (`JobOutcome.lostWhy`): its connection's close,
 * as the coordinator saw it, and how its process ended when the pool knows (`localPool`'s
 * workers, which it started: `{ code: 1, signal: null }` for a handler that called
 * `process.exit(1)`, `{ code: null, signal: "SIGKILL" }` for one the kernel's OOM killer or a
 * `kill -9` ended). Absent for workers the pool did not start or cannot see end (`slurmPool`'s,
 * a `baton worker` started by hand), and in the `job` event of the loss, which comes as the
 * connection closes, before the process is reaped.
 *
 * @example
 * ```ts
 * const loss: WorkerLoss = { code: 1006, reason: "", exit: { code: 1, signal: null } };
 * ```
 */
export interface WorkerLoss extends WorkerClose {
  exit?: ProcExit | undefined;
}

/** What `await run` gives: every job's outcome, and counts. */
export interface RunResult {
  run: string;
  /** True when every job completed. */
  ok: boolean;
  /**
   * Every job's outcome, by id. Made the first time it (or `get`, or `toJSON`) is read, then
   * kept: a caller that reads only `ok` and `counts` does not pay for an outcome a job.
   */
  jobs: Map<string, JobOutcome>;
  counts: Record<JobStatus, number> & { cached: number };
  /** From `run()` to the end, reading the results earlier runs stored included. */
  durationMs: number;
  /**
   * The outcome of a job of the run, by the job as written: one of the graph, or an equal one
   * (same kind, input and dependencies), such as a job a handler added with `ctx.need`.
   */
  get<Value>(spec: JobSpec<Value>): JobOutcome<Value>;
  /**
   * The result as `baton run --json` prints it, which `JSON.stringify(result)` calls: `jobs` as
   * an array (a `Map` is `{}` in JSON, so every outcome was lost), times in whole ms, and each
   * outcome's empty fields left out.
   *
   * @example
   * ```ts
   * const result = await engine.run(graph);
   * console.log(JSON.stringify(result)); // {"run":"…","ok":true,"durationMs":412,"counts":{…},"jobs":[{"id":"3f2a…",…}]}
   * ```
   */
  toJSON(): {
    run: string;
    ok: boolean;
    durationMs: number;
    counts: RunResult["counts"];
    jobs: object[];
  };
}

/** A snapshot of a run's progress, emitted as `progress`. */
export interface RunProgress {
  total: number;
  counts: Record<JobState, number>;
  /** Completed jobs whose result came from the store of an earlier run. */
  cached: number;
  /**
   * The jobs in the `failed` state (`counts.failed`) by how they ended, as the result's
   * `counts` has them: `failed` (their handler's error, a timeout, poison, a cycle, no worker
   * can take them), `skipped` (a dependency failed) and `cancelled` (the run was cancelled or
   * shut down). The three add up to `counts.failed`.
   */
  failed: number;
  skipped: number;
  cancelled: number;
  elapsedMs: number;
  /** Jobs finished per second since the run started. */
  rate: number;
  /**
   * Workers connected now that hold a job or are asking for one. Zero while jobs are left means
   * the run is waiting for workers: still starting, Slurm allocations still queued, or none
   * joined (`--workers 0`).
   */
  workers: number;
  /**
   * What the pool waits for before more workers can join, when it says
   * (`RunningPool.waitingFor`): "Slurm: 2 allocations pending (Priority), 1 worker starting".
   */
  poolWaitingFor?: string;
}

/** A job changed state, emitted as `job`. */
export interface JobEvent {
  id: string;
  kind: string;
  state: JobState;
  cause?: FailureCause;
  /**
   * The attempt this change is about: the one starting (`running`), the one that just ended
   * (`ready` or `blocked` to run again, after a backoff for `blocked`), the last one
   * (`completed`, `failed`). From 1.
   */
  attempt?: number;
  /**
   * Why the attempt that ended will be made again, or why the job failed, was skipped or
   * cancelled.
   */
  error?: JobError;
  /** The worker lost while it ran the attempt that ended: the job runs again. */
  lostWorker?: string;
  /** How `lostWorker`'s connection ended. */
  lostWhy?: WorkerClose;
  /** The name of the worker the attempt of `attempt` was granted to. */
  worker?: string;
}

/**
 * Progress reported by a handler through `ctx.progress`, emitted as `job.progress`: the job's
 * `id` and `kind`, the `worker` running it, and what the handler gave.
 */
export interface JobProgressEvent {
  id: string;
  kind: string;
  worker: string;
  done?: number;
  total?: number;
  message?: string;
}

/**
 * A run with a store is reading the results earlier runs stored for its jobs, before any job
 * starts (a rerun of a large graph reads one file per stored result): `done` of the `total`
 * entries found so far, emitted every 500 entries and once at the end.
 */
export interface StoreReadingEvent {
  done: number;
  total: number;
}

/**
 * The result store's disk has no room for the run's results (`full`: the run holds them,
 * starts no job and tries again; see `EngineOptions.storeFullWaitMs`), or has room again
 * (`full: false`: every result it refused is written, and the run goes on). Once each: a
 * store that has a little room now and then, letting some results through and refusing
 * others, is one time with no room, not one per refusal. `message` says so to a person,
 * naming the store `dir`, the free space and what to do.
 */
export interface StoreFullEvent {
  dir: string;
  full: boolean;
  /**
   * The store has had no room for `storeFullWaitMs`: the run is stopping, and rejects with
   * the `STORE_FULL` error whose message this one is once its workers have stopped (a job
   * that ignores its abort holds that up). Once, after a `full` one; absent otherwise.
   */
  stopping?: true;
  message: string;
}

/**
 * Where workers join a run, emitted as `listening` once the coordinator listens and before
 * the pool starts its workers (not at all when the store held every result, or the run was
 * cancelled before it listened, which then starts no worker): `address` for
 * `baton worker --connect`, and the run's secret file for `--secret-file` when the workers
 * are processes (a run with in-process workers has none).
 */
export interface ListeningEvent {
  /**
   * Where a worker on this or another machine connects: the address listened on, but for a
   * wildcard host (`listen: "0.0.0.0:7000"`), which on another machine means that machine,
   * this machine's name (`os.hostname()`) with the port, `ws://login1:7000`.
   */
  address: string;
  /** The address the coordinator listens on, as bound: `ws://0.0.0.0:7000`. */
  listenAddress: string;
  secretFile?: string;
}

interface RunEvents {
  listening: [ListeningEvent];
  job: [JobEvent];
  progress: [RunProgress];
  "job.progress": [JobProgressEvent];
  "store.reading": [StoreReadingEvent];
  "store.full": [StoreFullEvent];
}

/** The events a run emits (the compiler holds this to `RunEvents`). */
const RUN_EVENTS: Record<keyof RunEvents, true> = {
  listening: true,
  job: true,
  progress: true,
  "job.progress": true,
  "store.reading": true,
  "store.full": true,
};

/**
 * An EventEmitter's own events, which Node's helpers listen to on any emitter
 * (`events.once(run, "listening")` adds an `error` listener), and which a run accepts though
 * it never emits `error`: its failure rejects it.
 */
const EMITTER_EVENTS = new Set<string | symbol>(["error", "newListener", "removeListener"]);

/** The EventEmitter methods that a run types by its events. */
type TypedMethods =
  | "emit"
  | "on"
  | "once"
  | "addListener"
  | "prependListener"
  | "prependOnceListener";

/**
 * EventEmitter, as the class a run extends, less the methods a run types by its events and
 * declares itself (calling EventEmitter's). As overrides of Node's, they made the published
 * `run.d.ts` fail to compile with `skipLibCheck: false` wherever @types/node types
 * EventEmitter's methods otherwise (TS2416 on `Run.emit` with @types/node 26).
 */
const RunEmitter: new () => Omit<EventEmitter<RunEvents>, TypedMethods> = EventEmitter;
const emitter = EventEmitter.prototype;

/** How one `engine.run` runs: its second argument. */
export interface RunOptions {
  /**
   * Cancels the run when it aborts, as `run.cancel()` does, with the signal's reason as the
   * cancelled jobs' message (an `AbortController`'s, `AbortSignal.timeout(ms)`, a request's):
   * one that has aborted already cancels the run before it starts a worker.
   *
   * @example
   * ```ts
   * const result = await engine.run(graph, { signal: AbortSignal.timeout(60_000) });
   * ```
   */
  signal?: AbortSignal | undefined;
}

/**
 * A running graph: a `Promise<RunResult>` that is also an EventEmitter. Await it for the
 * `RunResult`; listen to it for job state changes and progress; `cancel()` it to stop
 * (handlers see their AbortSignal fire; jobs not started end as cancelled).
 *
 * @example
 * ```ts
 * const run = engine.run(graph);
 * run.on("progress", (p) => console.log(`${p.counts.completed}/${p.total}`));
 * const result = await run;
 * if (!result.ok) process.exitCode = 1;
 * const later: Promise<RunResult> = engine.run(graph); // where a Promise is asked for
 * ```
 */
export class Run extends RunEmitter implements Promise<RunResult> {
  constructor(
    readonly id: string,
    private readonly result: Promise<RunResult>,
    private readonly onCancel: (reason: string) => void,
    private readonly onListenerError: (error: ListenerError) => void,
  ) {
    super();
  }

  /**
   * Calls the event's listeners. One that throws does not throw into the engine (where it
   * would end the process from inside the coordinator): the run is cancelled and rejects with
   * a `ListenerError`.
   */
  emit<E extends keyof RunEvents>(event: E, ...args: RunEvents[E]): boolean {
    try {
      return emitter.emit.call(this, event, ...args);
    } catch (thrown) {
      this.onListenerError(new ListenerError(event, thrown));
      return true;
    }
  }

  /**
   * Listens to one of the run's events. A name it never emits (`"progres"`, a typo) is a
   * `ConfigError` naming the events, rather than a listener that never hears anything (and
   * so is a listener that is no function, rather than Node's `TypeError`);
   * Node's `EventEmitter` types take any name, so these methods are typed by the run's events.
   *
   * @example
   * ```ts
   * engine.run(graph).on("job", (e) => console.log(e.id, e.state));
   * ```
   */
  on<E extends keyof RunEvents>(event: E, listener: (...args: RunEvents[E]) => void): this {
    return emitter.on.call(this, knownEvent(event, listener), listener) as this;
  }

  /** As `on`, for the next event only. */
  once<E extends keyof RunEvents>(event: E, listener: (...args: RunEvents[E]) => void): this {
    return emitter.once.call(this, knownEvent(event, listener), listener) as this;
  }

  /** As `on`. */
  addListener<E extends keyof RunEvents>(
    event: E,
    listener: (...args: RunEvents[E]) => void,
  ): this {
    return emitter.addListener.call(this, knownEvent(event, listener), listener) as this;
  }

  /** As `on`, called before the listeners added earlier. */
  prependListener<E extends keyof RunEvents>(
    event: E,
    listener: (...args: RunEvents[E]) => void,
  ): this {
    return emitter.prependListener.call(this, knownEvent(event, listener), listener) as this;
  }

  /** As `once`, called before the listeners added earlier. */
  prependOnceListener<E extends keyof RunEvents>(
    event: E,
    listener: (...args: RunEvents[E]) => void,
  ): this {
    return emitter.prependOnceListener.call(this, knownEvent(event, listener), listener) as this;
  }

  /**
   * Stops the run: nothing new starts, running handlers are aborted. `reason` is the cancelled
   * jobs' message: a string, or, as `AbortController.abort` takes, an Error (its message) or
   * anything else (as text, an object as short JSON); an Error object used to land in the
   * outcomes as their message.
   *
   * @example
   * ```ts
   * const run = engine.run(graph);
   * process.once("SIGINT", () => run.cancel("stopped from the terminal"));
   * ```
   */
  cancel(reason?: unknown): void {
    this.onCancel(reasonText(reason) ?? "the run was cancelled");
  }

  // biome-ignore lint/suspicious/noThenProperty: a Run is awaited for its result by design
  then<A = RunResult, B = never>(
    onFulfilled?: ((value: RunResult) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.result.then(onFulfilled, onRejected);
  }

  /** As a promise's `catch`: the run's failure (a pool that failed, a store that cannot open). */
  catch<B = never>(
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<RunResult | B> {
    return this.result.catch(onRejected);
  }

  /** What makes a `Run` a `Promise<RunResult>` to TypeScript, as it is to `await`. */
  get [Symbol.toStringTag](): string {
    return "Run";
  }

  /** As a promise's `finally`. */
  finally(onFinally?: (() => void) | null): Promise<RunResult> {
    return this.result.finally(onFinally);
  }
}

/**
 * `event`, when a run emits it or it is an EventEmitter's own and `listener` is a function; a
 * `ConfigError` naming the run's events, or saying what the listener must be, otherwise.
 */
function knownEvent<E extends keyof RunEvents>(event: E, listener: unknown): E {
  if (!Object.hasOwn(RUN_EVENTS, event) && !EMITTER_EVENTS.has(event)) {
    const events = Object.keys(RUN_EVENTS);
    throw new ConfigError(
      `a run emits no ${typeof event === "string" ? `"${event}"` : String(event)} event; it emits ${events.map((name) => `"${name}"`).join(", ")}${didYouMean(String(event), events, (name) => `"${name}"`)}`,
    );
  }
  if (typeof listener !== "function") {
    throw new ConfigError(
      `a run's "${String(event)}" listener must be a function, such as (event) => console.log(event), not ${preview(listener)}`,
    );
  }
  return event;
}

/**
 * Refuses, with a `ConfigError`, run options that are not an object, an option that is not one
 * of `RunOptions`, and a `signal` that is not an AbortSignal; returns the signal, if any.
 */
export function runSignal(options: RunOptions): AbortSignal | undefined {
  checkOptionNames(
    "engine.run",
    options,
    { signal: true } satisfies Record<keyof RunOptions, true>,
    {
      shape: "{ signal } (its second argument; the jobs go in the first)",
      hint: () => " (the engine's options go to createEngine)",
    },
  );
  const { signal } = options;
  if (
    signal !== undefined &&
    !(
      typeof signal === "object" &&
      signal !== null &&
      typeof signal.aborted === "boolean" &&
      typeof signal.addEventListener === "function"
    )
  ) {
    throw new ConfigError(
      `engine.run: signal must be an AbortSignal (an AbortController's signal, or AbortSignal.timeout(ms)), not ${String(signal)}`,
    );
  }
  return signal;
}

/** The runs a signal cancels, and its one abort listener that cancels them. */
const abortWatch = new WeakMap<AbortSignal, { runs: Set<Run>; listener: () => void }>();

/**
 * Cancels `run` when `signal` aborts (at once when it has), with the reason's message; stops
 * listening once the run settles, so one signal can serve many runs without piling listeners.
 * Runs that share a signal at once share one listener on it: a listener each made Node warn
 * of a possible leak (`MaxListenersExceededWarning`) from the eleventh run at once.
 */
export function cancelOnAbort(run: Run, signal: AbortSignal): void {
  if (signal.aborted) {
    run.cancel(abortMessage(signal));
    return;
  }
  let watch = abortWatch.get(signal);
  if (watch === undefined) {
    const runs = new Set<Run>();
    const listener = () => {
      abortWatch.delete(signal);
      const message = abortMessage(signal);
      for (const each of runs) each.cancel(message);
    };
    watch = { runs, listener };
    abortWatch.set(signal, watch);
    signal.addEventListener("abort", listener, { once: true });
  }
  const { runs, listener } = watch;
  runs.add(run);
  const stop = () => {
    runs.delete(run);
    if (runs.size > 0 || abortWatch.get(signal)?.runs !== runs) return;
    abortWatch.delete(signal);
    signal.removeEventListener("abort", listener);
  };
  run.then(stop, stop);
}

/** What the runs an aborted signal cancels say: its reason's message. */
function abortMessage(signal: AbortSignal): string {
  const text = reasonText(signal.reason);
  return `the run's AbortSignal aborted${text === undefined ? "" : `: ${text}`}`;
}

/** A cancel's or an abort's reason as text: an Error's message; none for `undefined`. */
function reasonText(reason: unknown): string | undefined {
  if (reason === undefined) return undefined;
  if (reason instanceof Error) return reason.message;
  return typeof reason === "object" && reason !== null ? preview(reason) : String(reason);
}
