import type { Logger } from "pino";
import { ConfigError } from "../errors.ts";
import type { Resources } from "../graph/job.ts";
import { verifyCoordinatorProof, workerProof } from "../transport/auth.ts";
import { CloseCode, describeClose } from "../transport/closeCodes.ts";
import { frameOverLimit } from "../transport/frameOverLimit.ts";
import {
  encode,
  type JobFrame,
  type ProgressFrame,
  parseToWorker,
  type ResultFrame,
  type ToCoordinator,
} from "../transport/frames.ts";
import {
  negotiate,
  noCommonVersion,
  PROTOCOL,
  type ProtocolRange,
} from "../transport/protocolVersion.ts";
import type { LoadedJobs } from "./jobModule.ts";
import { failed, type JobReport, type JobRunner, jobRunner } from "./jobRunner.ts";
import { nodeClock } from "./nodeClock.ts";
import type { Clock, Link, Net } from "./ports.ts";
import { SilenceWatch } from "./silenceWatch.ts";

/**
 * The default silence limit, in multiples of the ping interval the coordinator announces:
 * the coordinator's own default gives a worker up after 4 pings' worth of silence (DESIGN §8,
 * 5 s / 20 s), and the worker judges the coordinator by the same measure.
 */
export const SILENCE_LIMIT_PINGS = 4;

/** How long a worker waits for the welcome, from connecting, unless told otherwise. */
export const DEFAULT_WELCOME_TIMEOUT_MS = 30_000;

export interface WorkerOptions {
  net: Net;
  /** The coordinator's address (`ws://127.0.0.1:PORT`, or a memory address in-process). */
  address: string;
  /**
   * The job module, whose handlers then run on this thread; or a `JobRunner` that runs them
   * elsewhere (`baton worker --handler-thread` runs them on a thread of their own).
   */
  jobs: LoadedJobs | JobRunner;
  /** This worker's name, for the coordinator's logs and poison reports. */
  name: string;
  /**
   * This worker process's instance id, drawn from the Entropy port once per process (an
   * in-process pool: once per worker slot) and given to every `runWorker` of it: the hello
   * carries it (protocol version 7 on), so that the coordinator takes a connection under the
   * name of a connected worker with the same instance as that worker connecting again (its
   * old connection is replaced) and refuses one with another instance (4010: two processes
   * given one name). Not a secret, but never logged.
   */
  instance: string;
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
  /**
   * Called when the coordinator's welcome has proved it knows the secret, with the run's id:
   * the worker has joined the run.
   *
   * @example
   * ```ts
   * await runWorker({ ...options, onWelcome: (run) => console.error(`joined run ${run}`) });
   * ```
   */
  onWelcome?: (run: string) => void;
  /**
   * How long, in ms, the worker stays without a job before it leaves the run by itself
   * (default: never; it stays until the coordinator stops it). Counted from the welcome and
   * from each result it sends. It leaves as a stopped worker does: it closes with 1001 (going
   * away) and runs nothing sent to it after that, so a job the coordinator handed it as it
   * left goes back to ready, counted as neither a failure nor a lost worker. `runWorker` then
   * returns with `idle` set. This gives a machine back when a run's tail needs fewer workers:
   * `baton worker --idle-exit DURATION`, and `slurmPool`'s workers (`idleExitMs`), whose
   * allocations then end and free their nodes.
   *
   * @example
   * ```ts
   * const exit = await runWorker({ ...options, idleExitMs: 5 * 60_000 });
   * exit.idle; // true when it left after 5 min without a job
   * ```
   */
  idleExitMs?: number | undefined;
  /**
   * Stops the worker when it aborts: it closes with 1001 (going away, the signal's reason if a
   * string) and `runWorker` returns at once, its running job aborted, without waiting for a
   * close handshake the coordinator may never answer (a partitioned or dead peer). A pool
   * stops the workers that have not left `POOL_STOP_GRACE_MS` after the run ended this way.
   *
   * @example
   * ```ts
   * const stop = new AbortController();
   * const exit = runWorker({ ...options, signal: stop.signal });
   * stop.abort("the service is shutting down"); // (await exit).code === 1001
   * ```
   */
  signal?: AbortSignal | undefined;
  /**
   * How long, in ms, a handler that runs on the worker's own thread (not a `JobRunner` such as
   * `--handler-thread`'s, which ends one itself) has to return once the coordinator told the
   * worker to stop its job (the job's timeout, the run's cancel), before the worker warns, naming
   * the job, that it does not stop on `ctx.signal`. Nothing can stop a function on this thread:
   * the worker holds the job until the handler returns or the coordinator gives its lease up.
   * The hello tells the coordinator this grace (protocol version 8), which then gives up a job
   * that ran past its timeout this long (and a second more) after telling the worker to stop
   * it, closing with 4005, so that it runs again at once; without it, or with an older
   * coordinator, once the lease has gone unrenewed for `leaseTimeoutMs`. Default: no warning,
   * and the lease's expiry.
   *
   * @example
   * ```ts
   * await runWorker({ ...options, abortGraceMs: 5_000 });
   * // WARN: the handler of job 3b9f… (train) has not returned 5000 ms after its abort …
   * ```
   */
  abortGraceMs?: number | undefined;
}

/** The job running when a worker's connection ended, which that end aborted. */
export interface RunningJob {
  id: string;
  kind: string;
  /**
   * The coordinator had told the worker to stop it before the connection ended (its timeout,
   * the run's cancel): its handler had not returned on that abort.
   */
  cancelled: boolean;
}

/** How a worker's connection ended. `code` 1000 is the coordinator's normal stop. */
export interface WorkerExit {
  code: number;
  reason: string;
  /**
   * Jobs this worker finished: their handlers completed or failed. Not counted: a job a cancel
   * aborted (the run stopping, a timeout), nor one that stopped to wait for the jobs it needs
   * (it runs again once they are done).
   */
  jobsFinished: number;
  /**
   * Settles once the job that was running when the connection ended has stopped (its handler
   * aborted and returned, or its thread ended); settled already when none was running. A
   * worker that connects again waits for it, so that it never runs two jobs at once.
   */
  jobStopped: Promise<void>;
  /** The job that was running when the connection ended, if any. */
  runningJob?: RunningJob | undefined;
  /** The worker left by itself after `idleExitMs` without a job. */
  idle: boolean;
  /**
   * The worker left by itself because its runner can run no job any more (`JobRunner.broken`,
   * which this is): after sending the failed result of the job that found out.
   */
  broken?: string | undefined;
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
 *   instance: entropy.id(), resources: { cpus: 1 }, secret, logger });
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
  positiveMs(
    "idleExitMs",
    options.idleExitMs,
    "leave it out for a worker that stays until the run ends",
  );
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
    const { signal } = options;
    const stop = () => session.stop(typeof signal?.reason === "string" ? signal.reason : "");
    const session = new WorkerSession(link, options, (exit) => {
      signal?.removeEventListener("abort", stop);
      resolve(exit);
    });
    link.onClose((code, reason) => session.end(code, reason));
    if (signal?.aborted) stop();
    else signal?.addEventListener("abort", stop, { once: true });
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

class WorkerSession implements JobReport {
  jobsFinished = 0;
  private nonce = "";
  private proof = "";
  private welcomed = false;
  /** The session is over: the link closed, or the worker gave up on a silent coordinator. */
  private ended = false;
  /** The id of the job running now. */
  private running: string | undefined;
  /** The kind of the job running now. */
  private runningKind = "";
  /** Armed by a cancel of the running job, when `abortGraceMs` is given: warns it still runs. */
  private abortGrace: unknown;
  /** The id of the running job the coordinator cancelled: its result is not counted finished. */
  private cancelled: string | undefined;
  /** Settles `WorkerExit.jobStopped`: set when the session ends under a running job. */
  private stoppedJob: () => void = () => {};
  private readonly runner: JobRunner;
  /**
   * Armed at connecting for the welcome deadline, then re-armed by the welcome for silence;
   * absent after the welcome of a coordinator that announces no ping interval.
   */
  private silence: SilenceWatch | undefined;
  /** Armed while the worker, welcomed, holds no job, when `idleExitMs` is given. */
  private idle: SilenceWatch | undefined;
  /**
   * The worker has left, for idleness or because its runner is `broken`: it closed the link
   * and takes no job any more.
   */
  private leaving: "idle" | "broken" | undefined;
  private readonly protocol: ProtocolRange;
  /** The clock of the silence and idle watches. */
  private readonly clock: Clock;
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
    this.clock = options.clock ?? nodeClock();
    const { jobs } = options;
    this.runner = "start" in jobs ? jobs : jobRunner(jobs, options.logger);
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
    this.idle?.stop();
    this.stopWatchingAbort();
    let jobStopped = Promise.resolve();
    let runningJob: RunningJob | undefined;
    if (this.running !== undefined) {
      runningJob = {
        id: this.running,
        kind: this.runningKind,
        cancelled: this.cancelled === this.running,
      };
      jobStopped = new Promise((resolve) => (this.stoppedJob = resolve));
      this.runner.abort(`connection closed: ${reason || describeClose(code)}`);
    }
    this.resolve({
      code,
      reason,
      jobsFinished: this.jobsFinished,
      jobStopped,
      ...(runningJob !== undefined && { runningJob }),
      idle: this.leaving === "idle",
      ...(this.leaving === "broken" && { broken: this.runner.broken }),
    });
  }

  /** Leaves at once, as `WorkerOptions.signal` asks: closes with 1001 and ends the session. */
  stop(reason: string): void {
    if (this.ended) return;
    const why = reason || `worker ${this.options.name} stopped`;
    this.link.close(CloseCode.goingAway, why);
    this.end(CloseCode.goingAway, why);
  }

  private send(frame: ToCoordinator): void {
    this.link.send(encode(frame));
  }

  private violation(reason: string): void {
    // Info: the worker's exit carries the reason, and its caller reports it (`baton worker`
    // on stderr, the in-process pool in its log).
    this.options.logger.info({ reason }, "coordinator broke the protocol");
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
    // A limit the coordinator's pings cannot keep up with (typed in seconds, say) gives up on
    // a live coordinator: say so, rather than blame a crash.
    const betweenPings = heartbeatMs !== undefined && limitMs <= heartbeatMs;
    const why = betweenPings
      ? `, which is not above its ping interval of ${heartbeatMs} ms, so the worker gave up between two pings: raise the silence limit (--silence-limit-ms, in milliseconds) to ${SILENCE_LIMIT_PINGS * heartbeatMs} or leave it out`
      : "; it may have crashed or the network dropped the connection";
    if (betweenPings) {
      this.options.logger.warn(
        { silenceLimitMs: limitMs, heartbeatMs },
        "the silence limit is not above the coordinator's ping interval: the worker will give up on it between two pings",
      );
    }
    this.giveUpAfter(limitMs, `no frame or ping from the coordinator for ${limitMs} ms${why}`);
  }

  /** The coordinator was heard from: after the welcome, that restarts the silence limit. */
  private heard(): void {
    if (this.welcomed) this.silence?.heard();
  }

  /** Gives up on the coordinator, closing with 4009, after `limitMs` without hearing from it. */
  private giveUpAfter(limitMs: number, reason: string): void {
    this.silence = new SilenceWatch(this.clock, limitMs, () => {
      this.options.logger.info({ limitMs, reason }, "giving up on the coordinator");
      this.link.close(CloseCode.coordinatorSilent, reason);
      this.end(CloseCode.coordinatorSilent, reason);
    });
  }

  /**
   * Starts counting idleness again, when `idleExitMs` is given: after the welcome, and after
   * each result.
   */
  private idleFrom(): void {
    const ms = this.options.idleExitMs;
    if (ms === undefined || this.ended || this.leaving !== undefined) return;
    this.idle ??= new SilenceWatch(this.clock, ms, () => {
      this.options.logger.info({ idleExitMs: ms }, "no job for the idle exit: leaving the run");
      this.leave("idle", `no job for ${ms} ms`);
    });
    this.idle.heard();
  }

  /**
   * Leaves the run, as a stopped worker does: closes with 1001 and takes nothing sent after
   * that, so the coordinator gives a job already on its way back to ready (WORKER_LOST, going
   * away: no failed attempt, and no count towards its `maxLost`). The session ends when the
   * close does.
   */
  private leave(why: "idle" | "broken", reason: string): void {
    this.leaving = why;
    this.idle?.stop();
    this.link.close(CloseCode.goingAway, `worker ${this.options.name} leaving: ${reason}`);
  }

  private onFrame(text: string): void {
    if (this.ended || this.leaving) return;
    this.heard();
    let frame: ReturnType<typeof parseToWorker>;
    try {
      frame = parseToWorker(text);
    } catch (error) {
      this.violation((error as Error).message);
      return;
    }
    switch (frame.type) {
      case "challenge": {
        const version = negotiate(this.protocol, frame.protocol);
        // Neither side could speak to the other: say so now, rather than prove the secret to
        // a coordinator that can only refuse the hello.
        if (version === undefined) {
          const reason = noCommonVersion(frame.protocol, this.protocol);
          this.options.logger.info({ reason }, "no protocol version shared with the coordinator");
          this.link.close(CloseCode.versionMismatch, reason);
          return;
        }
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
          codeHash: this.runner.codeHash,
          proof: this.proof,
          // Version 5 on, known from the challenge's range: an older coordinator would refuse
          // a hello with a field it does not know.
          ...(version >= 5 &&
            Number.isFinite(this.link.maxFrameBytes) && {
              maxFrameBytes: this.link.maxFrameBytes,
            }),
          ...(version >= 7 && { instance: this.options.instance }),
          // A positive integer on the wire; rounding up only lengthens the grace.
          ...(version >= 8 &&
            this.options.abortGraceMs !== undefined && {
              abortGraceMs: Math.max(1, Math.ceil(this.options.abortGraceMs)),
            }),
        });
        return;
      }
      case "welcome": {
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
        // An in-process worker's logger is bound to the run already: a key twice is a line
        // some log pipelines refuse. (A caller's logger need not be pino's, with `bindings`.)
        const bound = this.options.logger.bindings?.().run === frame.run;
        this.options.logger.debug(
          {
            protocol: frame.protocol,
            ...(!bound && { run: frame.run }),
            heartbeatMs: frame.heartbeatMs,
          },
          "welcomed",
        );
        this.options.onWelcome?.(frame.run);
        this.idleFrom();
        return;
      }
      case "job":
        if (!this.welcomed) this.violation("a job frame before welcome");
        else if (this.running !== undefined) {
          this.violation(`a job frame for ${frame.id} while ${this.running} runs`);
        } else this.run(frame);
        return;
      case "cancel":
        if (this.running === frame.job) {
          this.cancelled = frame.job;
          const reason = frame.reason ?? `job ${frame.job} was cancelled by the coordinator`;
          this.runner.abort(reason);
          this.watchAbort(reason);
        }
        return;
    }
  }

  /**
   * Warns, `abortGraceMs` after the running job's cancel, when its handler (on this thread)
   * still has not returned: nothing here can stop it, and until it returns the worker holds
   * the job, and takes no other.
   */
  private watchAbort(reason: string): void {
    const graceMs = this.options.abortGraceMs;
    if (graceMs === undefined || "start" in this.options.jobs || this.abortGrace !== undefined)
      return;
    const id = this.running;
    const kind = this.runningKind;
    this.abortGrace = this.clock.setTimeout(() => {
      this.abortGrace = undefined;
      if (this.running !== id) return;
      this.options.logger.warn(
        { job: id, kind, graceMs, reason },
        `the handler of job ${id} (${kind}) has not returned ${graceMs} ms after its abort: it does not stop on ctx.signal, and a handler on the worker's own thread cannot be stopped, so this worker holds the job, and takes no other, until the handler returns or the coordinator gives its lease up; make the handler return (or throw) once ctx.signal aborts, or run handlers on a thread of their own (--handler-thread), which is ended ${graceMs} ms after its abort`,
      );
    }, graceMs);
  }

  private stopWatchingAbort(): void {
    if (this.abortGrace === undefined) return;
    this.clock.clearTimeout(this.abortGrace);
    this.abortGrace = undefined;
  }

  /** The session is the report of every job it runs: no closures made a job. */
  private run(frame: JobFrame): void {
    this.idle?.stop();
    this.running = frame.id;
    this.runningKind = frame.kind;
    this.runner.start(frame, this.version, this);
  }

  progress(update: ProgressFrame): void {
    if (this.running === update.job) this.send(update);
  }

  done(result: ResultFrame): void {
    this.running = undefined;
    this.stopWatchingAbort();
    this.stoppedJob();
    if (result.status !== "blocked" && this.cancelled !== result.job) this.jobsFinished++;
    this.cancelled = undefined;
    this.sendResult(result);
    const { broken } = this.runner;
    if (broken === undefined) this.idleFrom();
    else if (!this.ended && this.leaving === undefined) {
      this.options.logger.info({ reason: broken }, "no job can run here any more: leaving the run");
      this.leave("broken", broken);
    }
  }

  /** Sends a job's result, or, for one over the coordinator's frame limit, a failure saying so. */
  private sendResult(result: ResultFrame): void {
    const text = encode(result);
    const limit = this.maxFrameBytes;
    const size = limit === undefined ? undefined : frameOverLimit(text, limit);
    if (size === undefined) {
      this.link.send(text);
      return;
    }
    // The coordinator would close the connection on such a frame, and the job would count
    // as lost with its worker: a failed attempt says what happened instead. Another attempt
    // would compute the same result for the same limit, so (version 6 on) it is not retried.
    this.send(
      failed(
        result.job,
        {
          name: "ResultTooLarge",
          message: `the ${result.status} result of job ${result.job} is a frame of ${size} bytes, over the coordinator's limit of ${limit} bytes (maxFrameBytes); return something smaller, such as the path of a file that holds the data`,
          retryable: false,
        },
        this.version,
      ),
    );
  }
}
