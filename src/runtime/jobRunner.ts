import type { Logger } from "pino";
import { didYouMean } from "../closestName.ts";
import { BatonError, ConfigError, JobModuleError } from "../errors.ts";
import type { JobSpec, Json, PlannedJob } from "../graph/job.ts";
import { preview } from "../graph/label.ts";
import { namedJobs } from "../graph/namedJobs.ts";
import { planGraph } from "../graph/planGraph.ts";
import { isJsonPrimitive, toJson } from "../graph/toJson.ts";
import {
  checkProgressFrame,
  type JobFrame,
  type ProgressFrame,
  type ResultFrame,
  type SerializedError,
} from "../transport/frames.ts";
import { isThenable } from "./isThenable.ts";
import type { JobContext, LoadedJobs } from "./jobModule.ts";
import { type AbortHook, abortHook } from "./onAbort.ts";
import { isInstance, serializeThrown } from "./serializeThrown.ts";

/** Where a running job's progress and, once, its result go. */
export interface JobReport {
  progress(frame: ProgressFrame): void;
  done(result: ResultFrame): void;
}

/**
 * Runs a worker's jobs, one at a time, each to a result frame: on the worker's own event loop
 * (`jobRunner`), or on a thread of their own (`baton worker --handler-thread`), so that a
 * handler's synchronous work never keeps the connection from answering the coordinator.
 *
 * @example
 * ```ts
 * const runner = jobRunner(loadJobs({ double: (n: number) => n * 2 }), logger);
 * runner.start(frame, 6, { progress: () => {}, done: (result) => console.log(result) });
 * ```
 */
export interface JobRunner {
  /** The job module's code hash, for the worker's hello. */
  readonly codeHash: string;
  /** Runs `frame`'s job; `version` is the protocol version the coordinator chose. */
  start(frame: JobFrame, version: number, report: JobReport): void;
  /** Aborts the job running now, if any: its handler's AbortSignal fires with `reason`. */
  abort(reason: string): void;
  /**
   * Why this runner can run no job any more, once it cannot (`--handler-thread`'s new thread
   * found the job module gone, broken or changed): every job it were given would fail the
   * same way, so the worker sends the result of the job in hand and leaves the run.
   */
  readonly broken?: string | undefined;
}

/** The longest `ctx.progress` message sent; the rest is cut. */
const PROGRESS_MESSAGE_CHARS = 1_000;

/** What `ctx.progress` takes, each optional. */
const PROGRESS_UPDATE_FIELDS = ["done", "total", "message"];

/**
 * Refuses what `ctx.progress` was given unless it is an object of `done`, `total` and
 * `message` alone: a number (`ctx.progress(0.5)`), a string or nothing would otherwise be an
 * empty report, and a `job` or `type` field would replace the frame's own.
 */
function checkProgressUpdate(update: unknown): void {
  if (typeof update !== "object" || update === null || Array.isArray(update)) {
    throw new ConfigError(
      `ctx.progress cannot send ${preview(update)}: it takes an object, { done, total, message } (each optional), such as ctx.progress({ done: 3, total: 10 })`,
    );
  }
  const unknown = Object.keys(update).find((key) => !PROGRESS_UPDATE_FIELDS.includes(key));
  if (unknown !== undefined) {
    throw new ConfigError(
      `ctx.progress cannot send that: unknown field "${unknown}"; it takes done, total and message${didYouMean(unknown, PROGRESS_UPDATE_FIELDS)}`,
    );
  }
}

/**
 * What an aborted job's `ctx.signal` gives as its `reason`: a `BatonError` `ABORTED` whose stack
 * is its name and message alone. Its frames would be the runner's own (the worker's frame
 * handler, the socket under it), none of the handler's; V8 took them for every cancel and
 * timeout (about 45 µs each in a simulated seed), and Node rendered them again for the failed
 * result of a handler that rejects with the reason, which the coordinator replaces with its own
 * cancel or timeout error: together about 1 % of a seed's CPU.
 */
function abortError(reason: string): BatonError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new BatonError("ABORTED", reason);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * Thrown by `ctx.need` when needed jobs have no result yet, to stop the handler; the runner
 * turns it into a blocked result. It is an Error saying so, for a handler that catches it by
 * mistake: the attempt still ends blocked (the runner remembers what was needed), and what
 * such a catch logs says why.
 */
class NeedJobs extends Error {
  constructor(
    readonly needs: PlannedJob[],
    missing: readonly PlannedJob[],
  ) {
    super(
      `ctx.need stops this handler until job ${namedJobs(missing, 1)} has completed, then runs it again; let this error through: what a catch around ctx.need returns or throws instead is disregarded`,
    );
    this.name = "NeedJobs";
  }
}

/**
 * A runner that calls the job module's handlers on the calling thread. A handler that returns
 * a plain value is answered at once; one that returns a promise (or any thenable) when it
 * settles. Whatever it throws (an Error or not) becomes a failed result.
 *
 * @example
 * ```ts
 * const runner = jobRunner(loadJobs({ double: (n: number) => n * 2 }), logger);
 * ```
 */
export function jobRunner(jobs: LoadedJobs, logger: Logger): JobRunner {
  return new SameThreadRunner(jobs, logger);
}

class SameThreadRunner implements JobRunner {
  readonly codeHash: string;
  /** The context of the job running now. */
  private running: HandlerContext | undefined;

  constructor(
    private readonly jobs: LoadedJobs,
    private readonly logger: Logger,
  ) {
    this.codeHash = jobs.codeHash;
  }

  abort(reason: string): void {
    this.running?.abort(abortError(reason));
  }

  /**
   * Awaiting every handler cost two promises and two microtask turns per job, for nothing
   * when the handler is synchronous: only a thenable is awaited.
   */
  start(frame: JobFrame, version: number, report: JobReport): void {
    const ctx = new HandlerContext(this, frame, report, this.logger);
    this.running = ctx;
    const handler = this.jobs.handler(frame.kind);
    if (!handler) {
      this.done(ctx, report, thrownResult(frame, ctx, this.noHandler(frame.kind), version));
      return;
    }
    let value: unknown;
    let pending: boolean;
    try {
      value = handler(frame.input, ctx);
      pending = isThenable(value);
    } catch (thrown) {
      this.done(ctx, report, thrownResult(frame, ctx, thrown, version));
      return;
    }
    if (pending) {
      Promise.resolve(value).then(
        (settled) => this.done(ctx, report, completed(frame, ctx, settled, version)),
        (thrown: unknown) => this.done(ctx, report, thrownResult(frame, ctx, thrown, version)),
      );
    } else {
      this.done(ctx, report, completed(frame, ctx, value, version));
    }
  }

  /**
   * A job of a kind this worker's module has no handler for. The coordinator admitted the
   * worker for its code hash, which covers the kinds, so no worker of the run has one.
   */
  private noHandler(kind: string): JobModuleError {
    return new JobModuleError(
      `this worker's job module (code hash ${this.codeHash}) has no handler for kind "${kind}"; it has ${this.jobs.kinds.map((k) => `"${k}"`).join(", ")}. Add a handler for "${kind}" to the job module, or fix the job's kind, and start the run again`,
    );
  }

  /** `ctx`'s job has its result; a synchronous handler's makes no closure on the way. */
  private done(ctx: HandlerContext, report: JobReport, result: ResultFrame): void {
    if (this.running === ctx) this.running = undefined;
    report.done(result);
  }

  /** `ctx.need`: the needed jobs' values if `frame` already has them all, else a `NeedJobs`. */
  need(frame: JobFrame, specs: JobSpec[]): Json[] {
    const { versionOf, kinds, timeoutOf, launchesRanks, name } = this.jobs;
    const plan = planGraph(specs, {
      versionOf,
      kinds,
      timeoutOf,
      launchesRanks,
      module: name,
      rootName: (i) => `argument ${i + 1} of ctx.need`,
    });
    const ids = specs.map((spec) => plan.idOf(spec));
    const missing = ids.filter((id) => !(id in frame.deps));
    if (missing.length === 0) return ids.map((id) => frame.deps[id] as Json);
    throw new NeedJobs(
      [...plan.jobs.values()],
      missing.map((id) => plan.jobs.get(id)!),
    );
  }
}

function completed(frame: JobFrame, ctx: HandlerContext, value: unknown, version: number) {
  // A handler that caught what ctx.need threw ran without the values it asked for.
  if (ctx.unmet !== undefined) return blocked(frame, ctx.unmet, version);
  try {
    return {
      type: "result",
      job: frame.id,
      status: "completed",
      value: resultValue(value, frame),
    } satisfies ResultFrame;
  } catch (thrown) {
    return thrownResult(frame, ctx, thrown, version);
  }
}

function thrownResult(
  frame: JobFrame,
  ctx: HandlerContext,
  thrown: unknown,
  version: number,
): ResultFrame {
  if (ctx.unmet !== undefined || isInstance(thrown, NeedJobs)) {
    return blocked(frame, ctx.unmet ?? (thrown as NeedJobs).needs, version);
  }
  const error = serializeThrown(thrown, frame);
  if (ctx.logsDebug()) ctx.log.debug({ err: error }, "job failed");
  return failed(frame.id, error, version);
}

/** The result of an attempt that needs `needs` first: blocked on them, to run again after them. */
function blocked(frame: JobFrame, needs: readonly PlannedJob[], version: number): ResultFrame {
  // Below version 3 the coordinator knows no timeouts, and would refuse the field.
  return {
    type: "result",
    job: frame.id,
    status: "blocked",
    needs: version >= 3 ? [...needs] : needs.map(({ timeoutMs: _, ...job }) => job),
  };
}

/**
 * A handler's `ctx`. What most handlers never touch is made only when they do: `job`, the
 * logger child, the AbortController, the results array and the bound `progress` and `need` (one
 * closure and one logger child per job were a measurable cost at thousands of jobs a
 * second). `progress` and `need` are bound, so destructuring `ctx` works.
 */
class HandlerContext implements JobContext, AbortHook {
  readonly deps: Readonly<Record<string, Json>>;
  private jobInfo: JobContext["job"] | undefined;
  private controller: AbortController | undefined;
  private abortReason: unknown;
  private aborted = false;
  /** Told of the abort through {@link abortHook}, without the AbortController. */
  private abortListeners: ((reason: unknown) => void)[] | undefined;
  private logger: Logger | undefined;
  private resultList: Json[] | undefined;
  private boundProgress: JobContext["progress"] | undefined;
  private boundNeed: JobContext["need"] | undefined;
  /**
   * The jobs (with theirs) that a `ctx.need` of this attempt found missing, every call's: the
   * attempt ends blocked on them however the handler ends, even when it caught the `NeedJobs`.
   */
  unmet: PlannedJob[] | undefined;

  constructor(
    private readonly runner: SameThreadRunner,
    private readonly frame: JobFrame,
    private readonly report: JobReport,
    private readonly parentLogger: Logger,
  ) {
    this.deps = frame.deps;
  }

  get job(): JobContext["job"] {
    const { frame } = this;
    this.jobInfo ??= {
      id: frame.id,
      kind: frame.kind,
      attempt: frame.attempt,
      ...(frame.ranks !== undefined && { ranks: frame.ranks }),
    };
    return this.jobInfo;
  }

  get results(): readonly Json[] {
    this.resultList ??= Object.values(this.frame.deps);
    return this.resultList;
  }

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.aborted) this.controller.abort(this.abortReason);
    return this.controller.signal;
  }

  /**
   * Whether `ctx.log` writes debug lines, asked without making the logger child: a failed
   * attempt's debug line is logged only then (a child for every failed attempt, at any level,
   * was about 0.4% of a simulated seed's CPU, some 8 µs an attempt).
   */
  logsDebug(): boolean {
    return (this.logger ?? this.parentLogger).isLevelEnabled("debug");
  }

  get log(): Logger {
    this.logger ??= this.parentLogger.child({
      job: this.frame.id,
      kind: this.frame.kind,
      attempt: this.frame.attempt,
    });
    return this.logger;
  }

  get progress(): JobContext["progress"] {
    this.boundProgress ??= (update) => {
      checkProgressUpdate(update);
      const frame: ProgressFrame = { type: "progress", job: this.frame.id, ...update };
      try {
        checkProgressFrame(frame);
      } catch (error) {
        throw new ConfigError(
          `ctx.progress cannot send that: ${(error as Error).message}; report done and total as counts of 0 or more and message as a string`,
        );
      }
      // A status line: a longer message (a whole log, say) could pass the frame limit and
      // cost the worker its connection.
      if (frame.message !== undefined && frame.message.length > PROGRESS_MESSAGE_CHARS) {
        frame.message = `${frame.message.slice(0, PROGRESS_MESSAGE_CHARS)}…`;
      }
      this.report.progress(frame);
    };
    return this.boundProgress;
  }

  get need(): JobContext["need"] {
    // The values are the jobs' own; their types are what `NeededValues` says of them.
    this.boundNeed ??= ((...specs: JobSpec[]) => {
      try {
        return this.runner.need(this.frame, specs);
      } catch (thrown) {
        if (isInstance(thrown, NeedJobs)) {
          const known = new Set(this.unmet?.map((job) => job.id));
          this.unmet = [...(this.unmet ?? []), ...thrown.needs.filter((job) => !known.has(job.id))];
        }
        throw thrown;
      }
    }) as JobContext["need"];
    return this.boundNeed;
  }

  /** The first abort counts, as an AbortController's: its reason is the signal's, made now or later. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.abortReason = reason;
    this.controller?.abort(reason);
    const listeners = this.abortListeners;
    this.abortListeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener(reason);
  }

  [abortHook](listener: (reason: unknown) => void): boolean {
    if (this.aborted) return false;
    if (this.abortListeners === undefined) this.abortListeners = [listener];
    else this.abortListeners.push(listener);
    return true;
  }
}

/**
 * A handler's return value as a result: nothing is null. A primitive is itself, without the
 * label `toJson` would name it by (built only for a value it walks: about 130 bytes a job).
 */
function resultValue(value: unknown, frame: JobFrame): Json {
  if (value === undefined) return null;
  if (isJsonPrimitive(value)) return value;
  return toJson(value, `result of job ${frame.id} (${frame.kind})`);
}

/**
 * A failed result frame for `job`, for a coordinator that chose protocol `version`. Every
 * failed result a worker sends is made here: below version 6 that coordinator would refuse
 * `error.retryable`, so it is left out (and the job is retried as before).
 */
export function failed(job: string, error: SerializedError, version: number): ResultFrame {
  if (version >= 6 || error.retryable === undefined) {
    return { type: "result", job, status: "failed", error };
  }
  const { retryable: _, ...older } = error;
  return { type: "result", job, status: "failed", error: older };
}
