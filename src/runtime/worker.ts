import type { Logger } from "pino";
import { BatonError, ConfigError } from "../errors.ts";
import type { JobSpec, Json, PlannedJob, Resources } from "../graph/job.ts";
import { planGraph } from "../graph/planGraph.ts";
import { toJson } from "../graph/toJson.ts";
import { verifyCoordinatorProof, workerProof } from "../transport/auth.ts";
import { CloseCode, describeClose } from "../transport/closeCodes.ts";
import { frameOverLimit } from "../transport/frameOverLimit.ts";
import {
  checkProgressFrame,
  encode,
  type JobFrame,
  type ProgressFrame,
  parseToWorker,
  type ResultFrame,
  type SerializedError,
  type ToCoordinator,
} from "../transport/frames.ts";
import { negotiate, PROTOCOL, type ProtocolRange } from "../transport/protocolVersion.ts";
import type { JobContext, LoadedJobs } from "./jobModule.ts";
import { nodeClock } from "./nodeClock.ts";
import type { Clock, Link, Net } from "./ports.ts";
import { isInstance, serializeThrown } from "./serializeThrown.ts";
import { SilenceWatch } from "./silenceWatch.ts";

/**
 * The default silence limit, in multiples of the ping interval the coordinator announces:
 * the coordinator's own default gives a worker up after 4 pings' worth of silence (DESIGN §8,
 * 5 s / 20 s), and the worker judges the coordinator by the same measure.
 */
const SILENCE_LIMIT_PINGS = 4;

/** How long a worker waits for the welcome, from connecting, unless told otherwise. */
const DEFAULT_WELCOME_TIMEOUT_MS = 30_000;

export interface WorkerOptions {
  net: Net;
  /** The coordinator's address (`ws://127.0.0.1:PORT`, or a memory address in-process). */
  address: string;
  jobs: LoadedJobs;
  /** This worker's name, for the coordinator's logs and poison reports. */
  name: string;
  resources: Resources;
  secret: Uint8Array;
  logger: Logger;
  protocol?: ProtocolRange;
  /** Time for the silence watchdog (default: Node's clock); the simulation passes its own. */
  clock?: Clock;
  /**
   * How long, in ms, the worker waits without a frame or a ping from the coordinator before
   * it gives up on it: it closes the connection with 4009 (`coordinatorSilent`) and
   * `runWorker` returns at once, without waiting for a close handshake the coordinator cannot
   * answer. Default: 4 × the ping interval the coordinator announces in its welcome (20 s at
   * the default 5 s); a coordinator that announces none is then not watched. Without this, a
   * worker whose coordinator's host crashed, or whose connection the network dropped without
   * a reset, would wait for TCP keepalive (two hours by default). Counted from the welcome.
   *
   * @example
   * ```ts
   * // Across a network that stalls for tens of seconds at a time:
   * await runWorker({ ...options, silenceLimitMs: 120_000 });
   * ```
   */
  silenceLimitMs?: number;
  /**
   * How long, in ms from connecting, the worker waits for the coordinator's welcome (its
   * challenge, then the welcome that proves it knows the secret) before it gives up: it closes
   * with 4009 (`coordinatorSilent`) and `runWorker` returns. Default 30 s. Without it, a worker
   * pointed at a server that accepts WebSockets but is not a baton coordinator, or at a
   * coordinator that froze after accepting, would wait forever.
   */
  welcomeTimeoutMs?: number;
  /**
   * The largest frame, in UTF-8 bytes, the worker accepts (default the Net's: 64 MiB over
   * WebSocket). The worker tells the coordinator (protocol version 5 on), which then fails
   * the attempt of a job whose frame (its input and the results of the jobs it runs after)
   * is larger with a `JobTooLarge` error instead of sending it.
   */
  maxFrameBytes?: number;
}

/** How a worker's connection ended. `code` 1000 is the coordinator's normal stop. */
export interface WorkerExit {
  code: number;
  reason: string;
  /** Jobs this worker ran to a result. */
  jobsRun: number;
}

/** Thrown by `ctx.need` when needed jobs have no result yet; never escapes the worker. */
class NeedJobs {
  constructor(readonly needs: PlannedJob[]) {}
}

/**
 * A worker: connects to the coordinator, proves the run secret, then runs one job at a
 * time until the coordinator closes the connection. Each job's handler gets a context
 * with its dependencies' results, an AbortSignal, progress reporting, a logger and
 * `ctx.need`; whatever it throws (an Error or not) becomes a failed result.
 *
 * @example
 * ```ts
 * const exit = await runWorker({ net, address, jobs: loadJobs(handlers), name: "w-1",
 *   resources: { cpus: 1 }, secret, logger });
 * exit.code; // 1000 when the run finished normally
 * ```
 */
export async function runWorker(options: WorkerOptions): Promise<WorkerExit> {
  positiveMs(
    "silenceLimitMs",
    options.silenceLimitMs,
    "leave it out for 4 × the coordinator's ping interval",
  );
  positiveMs("welcomeTimeoutMs", options.welcomeTimeoutMs, "leave it out for 30 s");
  const { maxFrameBytes } = options;
  if (maxFrameBytes !== undefined && !(Number.isInteger(maxFrameBytes) && maxFrameBytes > 0)) {
    throw new ConfigError(
      `maxFrameBytes must be a positive whole number of bytes (got ${maxFrameBytes}); leave it out for the Net's limit (64 MiB over WebSocket)`,
    );
  }
  const link = await options.net.connect(
    options.address,
    maxFrameBytes === undefined ? undefined : { maxFrameBytes },
  );
  return new Promise<WorkerExit>((resolve) => {
    const session = new WorkerSession(link, options, resolve);
    link.onClose((code, reason) => session.end(code, reason));
  });
}

/** Refuses a timeout option that is not a positive, finite number of milliseconds. */
function positiveMs(name: string, value: number | undefined, otherwise: string): void {
  if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
    throw new ConfigError(
      `${name} must be a positive number of milliseconds (got ${value}); ${otherwise}`,
    );
  }
}

class WorkerSession {
  jobsRun = 0;
  private nonce = "";
  private proof = "";
  private welcomed = false;
  /** The session is over: the link closed, or the worker gave up on a silent coordinator. */
  private ended = false;
  /** The context of the job running now. */
  private running: HandlerContext | undefined;
  /**
   * Armed at connecting for the welcome deadline, then re-armed by the welcome for silence;
   * absent after the welcome of a coordinator that announces no ping interval.
   */
  private silence: SilenceWatch | undefined;
  private readonly protocol: ProtocolRange;
  /** The protocol version the coordinator's welcome named (0 before it). */
  private version = 0;
  /** The largest frame the coordinator accepts (protocol version 4 on), from the welcome. */
  private maxFrameBytes: number | undefined;

  constructor(
    private readonly link: Link,
    private readonly options: WorkerOptions,
    private readonly resolve: (exit: WorkerExit) => void,
  ) {
    this.protocol = options.protocol ?? PROTOCOL;
    link.onFrame((text) => this.onFrame(text));
    link.onPing(() => this.heard());
    const welcomeMs = options.welcomeTimeoutMs ?? DEFAULT_WELCOME_TIMEOUT_MS;
    this.giveUpAfter(
      welcomeMs,
      `no welcome from the coordinator within ${welcomeMs} ms of connecting; is the address a baton coordinator's, and is it overloaded?`,
    );
  }

  /** Ends the session once: aborts the running job and reports how the connection ended. */
  end(code: number, reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.silence?.stop();
    this.abortRunning(`connection closed: ${reason || describeClose(code)}`);
    this.resolve({ code, reason, jobsRun: this.jobsRun });
  }

  abortRunning(reason: string): void {
    this.running?.abort(new BatonError("ABORTED", reason));
  }

  /** Sends a progress frame for `job`, unless it is no longer the job running. */
  progress(job: string, update: { done?: number; total?: number; message?: string }): void {
    const frame: ProgressFrame = { type: "progress", job, ...update };
    try {
      checkProgressFrame(frame);
    } catch (error) {
      throw new ConfigError(
        `ctx.progress cannot send that: ${(error as Error).message}; report done and total as counts of 0 or more and message as a string`,
      );
    }
    if (this.running?.job.id === job) this.send(frame);
  }

  /** `ctx.need`: the needed jobs' values if `frame` already has them all, else a `NeedJobs`. */
  need(frame: JobFrame, specs: JobSpec[]): Json[] {
    const { versionOf, timeoutOf, launchesRanks } = this.options.jobs;
    const plan = planGraph(specs, {
      versionOf,
      timeoutOf,
      launchesRanks,
      rootName: (i) => `argument ${i + 1} of ctx.need`,
    });
    const ids = specs.map((spec) => plan.idOf(spec));
    if (ids.every((id) => id in frame.deps)) return ids.map((id) => frame.deps[id] as Json);
    throw new NeedJobs([...plan.jobs.values()]);
  }

  private send(frame: ToCoordinator): void {
    this.link.send(encode(frame));
  }

  private violation(reason: string): void {
    this.options.logger.error({ reason }, "coordinator broke the protocol");
    this.link.close(CloseCode.protocolViolation, reason);
  }

  /** Watches for silence from the welcome on, if the limit is known. */
  private watchSilence(heartbeatMs: number | undefined): void {
    this.silence?.stop();
    this.silence = undefined;
    const limitMs =
      this.options.silenceLimitMs ??
      (heartbeatMs === undefined ? undefined : SILENCE_LIMIT_PINGS * heartbeatMs);
    if (limitMs === undefined) return;
    this.giveUpAfter(
      limitMs,
      `no frame or ping from the coordinator for ${limitMs} ms; it may have crashed or the network dropped the connection`,
    );
  }

  /** The coordinator was heard from: after the welcome, that restarts the silence limit. */
  private heard(): void {
    if (this.welcomed) this.silence?.heard();
  }

  /** Gives up on the coordinator, closing with 4009, after `limitMs` without hearing from it. */
  private giveUpAfter(limitMs: number, reason: string): void {
    this.silence = new SilenceWatch(this.options.clock ?? nodeClock(), limitMs, () => {
      this.options.logger.warn({ limitMs, reason }, "giving up on the coordinator");
      this.link.close(CloseCode.coordinatorSilent, reason);
      this.end(CloseCode.coordinatorSilent, reason);
    });
  }

  private onFrame(text: string): void {
    if (this.ended) return;
    this.heard();
    let frame: ReturnType<typeof parseToWorker>;
    try {
      frame = parseToWorker(text);
    } catch (error) {
      this.violation((error as Error).message);
      return;
    }
    switch (frame.type) {
      case "challenge":
        this.nonce = frame.nonce;
        this.proof = workerProof(
          this.options.secret,
          frame.nonce,
          this.protocol,
          this.options.name,
        );
        this.send({
          type: "hello",
          protocol: [...this.protocol],
          worker: this.options.name,
          resources: this.options.resources,
          codeHash: this.options.jobs.codeHash,
          proof: this.proof,
          // Version 5 on, known from the challenge's range: an older coordinator would refuse
          // a hello with a field it does not know.
          ...((negotiate(this.protocol, frame.protocol) ?? 0) >= 5 &&
            Number.isFinite(this.link.maxFrameBytes) && {
              maxFrameBytes: this.link.maxFrameBytes,
            }),
        });
        return;
      case "welcome":
        if (!verifyCoordinatorProof(this.options.secret, this.nonce, this.proof, frame.proof)) {
          this.link.close(
            CloseCode.authFailed,
            "the coordinator could not prove it knows the run secret; check the address and the secret file",
          );
          return;
        }
        this.welcomed = true;
        this.version = frame.protocol;
        this.maxFrameBytes = frame.maxFrameBytes;
        this.watchSilence(frame.heartbeatMs);
        this.options.logger.debug(
          { protocol: frame.protocol, run: frame.run, heartbeatMs: frame.heartbeatMs },
          "welcomed",
        );
        return;
      case "job":
        if (!this.welcomed) this.violation("a job frame before welcome");
        else if (this.running) {
          this.violation(`a job frame for ${frame.id} while ${this.running.job.id} runs`);
        } else this.run(frame);
        return;
      case "cancel":
        if (this.running?.job.id === frame.job) {
          this.abortRunning(frame.reason ?? `job ${frame.job} was cancelled by the coordinator`);
        }
        return;
    }
  }

  /**
   * Runs one job. A handler that returns a plain value is answered at once; one that returns
   * a promise (or any thenable) is answered when it settles. Awaiting every handler cost two
   * promises and two microtask turns per job, for nothing when the handler is synchronous.
   */
  private run(frame: JobFrame): void {
    const ctx = new HandlerContext(this, frame, this.options.logger);
    this.running = ctx;
    const handler = this.options.jobs.handler(frame.kind);
    if (!handler) {
      this.answer(
        failed(frame.id, {
          name: "UnknownKind",
          message: `this worker's job module has no handler for kind "${frame.kind}"`,
        }),
      );
      return;
    }
    let value: unknown;
    let pending: boolean;
    try {
      value = handler(frame.input, ctx);
      pending = isThenable(value);
    } catch (thrown) {
      this.answer(this.thrown(frame, ctx, thrown));
      return;
    }
    if (pending) {
      Promise.resolve(value).then(
        (settled) => this.answer(this.completed(frame, ctx, settled)),
        (thrown: unknown) => this.answer(this.thrown(frame, ctx, thrown)),
      );
    } else {
      this.answer(this.completed(frame, ctx, value));
    }
  }

  private answer(result: ResultFrame): void {
    this.running = undefined;
    this.jobsRun++;
    const text = encode(result);
    const limit = this.maxFrameBytes;
    const size = limit === undefined ? undefined : frameOverLimit(text, limit);
    if (size === undefined) {
      this.link.send(text);
      return;
    }
    // The coordinator would close the connection on such a frame, and the job would count
    // as lost with its worker: a failed attempt says what happened instead.
    this.send(
      failed(result.job, {
        name: "ResultTooLarge",
        message: `the ${result.status} result of job ${result.job} is a frame of ${size} bytes, over the coordinator's limit of ${limit} bytes (maxFrameBytes); return something smaller, such as the path of a file that holds the data`,
      }),
    );
  }

  private completed(frame: JobFrame, ctx: HandlerContext, value: unknown): ResultFrame {
    try {
      return {
        type: "result",
        job: frame.id,
        status: "completed",
        value: resultValue(value, frame),
      };
    } catch (thrown) {
      return this.thrown(frame, ctx, thrown);
    }
  }

  private thrown(frame: JobFrame, ctx: HandlerContext, thrown: unknown): ResultFrame {
    if (isInstance(thrown, NeedJobs)) {
      // Below version 3 the coordinator knows no timeouts, and would refuse the field.
      const needs =
        this.version >= 3 ? thrown.needs : thrown.needs.map(({ timeoutMs: _, ...job }) => job);
      return { type: "result", job: frame.id, status: "blocked", needs };
    }
    const { retryable, ...error } = serializeThrown(thrown, frame);
    ctx.log.debug({ err: error }, "job failed");
    // Below version 6 the coordinator would refuse the field; it retries such a job as before.
    return failed(
      frame.id,
      this.version >= 6 && retryable === false ? { ...error, retryable } : error,
    );
  }
}

/**
 * A handler's `ctx`. What most handlers never touch is made only when they do: the logger
 * child, the AbortController, the results array and the bound `progress` and `need` (one
 * closure and one logger child per job were a measurable cost at thousands of jobs a
 * second). `progress` and `need` are bound, so destructuring `ctx` works.
 */
class HandlerContext implements JobContext {
  readonly job: JobContext["job"];
  readonly deps: Readonly<Record<string, Json>>;
  private controller: AbortController | undefined;
  private abortReason: unknown;
  private aborted = false;
  private logger: Logger | undefined;
  private resultList: Json[] | undefined;
  private boundProgress: JobContext["progress"] | undefined;
  private boundNeed: JobContext["need"] | undefined;

  constructor(
    private readonly session: WorkerSession,
    private readonly frame: JobFrame,
    private readonly parentLogger: Logger,
  ) {
    this.job = {
      id: frame.id,
      kind: frame.kind,
      attempt: frame.attempt,
      ...(frame.ranks !== undefined && { ranks: frame.ranks }),
    };
    this.deps = frame.deps;
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

  get log(): Logger {
    this.logger ??= this.parentLogger.child({
      job: this.frame.id,
      kind: this.frame.kind,
      attempt: this.frame.attempt,
    });
    return this.logger;
  }

  get progress(): JobContext["progress"] {
    this.boundProgress ??= (update) => this.session.progress(this.frame.id, update);
    return this.boundProgress;
  }

  get need(): JobContext["need"] {
    this.boundNeed ??= (...specs) => this.session.need(this.frame, specs);
    return this.boundNeed;
  }

  abort(reason: unknown): void {
    this.aborted = true;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** A handler's return value as a result: nothing is null, a JSON primitive is itself. */
function resultValue(value: unknown, frame: JobFrame): Json {
  if (value === undefined || value === null) return null;
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (Number.isFinite(value)) return value;
  }
  return toJson(value, `result of job ${frame.id} (${frame.kind})`);
}

function failed(job: string, error: SerializedError): ResultFrame {
  return { type: "result", job, status: "failed", error };
}
