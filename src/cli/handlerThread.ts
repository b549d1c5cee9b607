import { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import { BatonError, JobModuleError } from "../errors.ts";
import { failed, type JobReport, type JobRunner } from "../runtime/jobRunner.ts";
import { createLogger, type LogLevel } from "../runtime/logger.ts";
import { serializeThrown } from "../runtime/serializeThrown.ts";
import { DEFAULT_ABORT_GRACE_MS } from "../runtime/workerProcessOptions.ts";
import type { JobFrame, ProgressFrame, ResultFrame, SerializedError } from "../transport/frames.ts";

/** What the handler thread is started with. */
export interface HandlerThreadData {
  /** The job module's path, as given to `baton worker --jobs`. */
  module: string;
  level: LogLevel;
  /** Pretty log lines (the worker's stderr is a terminal). */
  pretty: boolean;
}

/** From the worker's main thread to its handler thread. */
export type ToHandlerThread =
  | { type: "start"; frame: JobFrame; version: number }
  | { type: "abort"; reason: string };

/** From the handler thread to the worker's main thread. */
export type FromHandlerThread =
  | { type: "ready"; codeHash: string; kinds: readonly string[]; source: string }
  | { type: "loadFailed"; code: string; message: string }
  | { type: "progress"; frame: ProgressFrame }
  | { type: "result"; result: ResultFrame };

/**
 * The thread's entry: from baton's TypeScript sources, bin/handlerThread.mjs, which registers
 * the command's module hooks first (hooks registered on a thread do not reach the threads it
 * starts); from the compiled dist/, the compiled main alone, which loads the job module as the
 * compiled command does (`importUserModule`).
 */
const ENTRY = import.meta.url.endsWith(".ts")
  ? new URL("../../bin/handlerThread.mjs", import.meta.url)
  : new URL("./handlerThreadMain.js", import.meta.url);

/** What `startHandlerThread` takes: what the thread is started with, and the abort grace. */
export interface HandlerThreadOptions extends HandlerThreadData {
  /** How long an aborted handler gets to return before its thread is ended (default 5 s). */
  abortGraceMs?: number | undefined;
  /**
   * Where a thread's death under a job is logged, at debug with the crash's stack, as a thrown
   * handler error is (default: a logger of `level` on stderr).
   */
  logger?: Logger | undefined;
}

/** A `JobRunner` whose handlers run on a thread of their own; `close()` stops the thread. */
export interface HandlerThread extends JobRunner {
  readonly kinds: readonly string[];
  /** The source the thread's first load took the code hash over (`LoadedJobsFile.source`). */
  readonly source: string;
  close(): Promise<void>;
}

/**
 * Loads the job module on a thread of its own and runs its handlers there, one job at a time
 * (`baton worker --handler-thread`). The worker's main thread keeps the connection, so a
 * handler that computes synchronously for minutes never keeps it from answering the
 * coordinator's pings. A thread that dies under a job (an uncaught exception in a callback,
 * `process.exit()`, running out of memory) fails that attempt with what happened, and the next
 * job gets a new thread. Resolves once the module has loaded; rejects with the reason it did not.
 *
 * @example
 * ```ts
 * const runner = await startHandlerThread({ module: "jobs.ts", level: "warn", pretty: false });
 * await runWorker({ net, address, jobs: runner, name, instance, resources, secret, logger });
 * await runner.close();
 * ```
 */
export async function startHandlerThread(options: HandlerThreadOptions): Promise<HandlerThread> {
  const { abortGraceMs = DEFAULT_ABORT_GRACE_MS, logger, ...data } = options;
  const log = logger ?? createLogger({ level: data.level, pretty: data.pretty });
  const runner = new ThreadRunner(data, abortGraceMs, log);
  const ready = await runner.spawn();
  runner.codeHash = ready.codeHash;
  runner.kinds = ready.kinds;
  runner.source = ready.source;
  return runner;
}

class ThreadRunner implements HandlerThread {
  codeHash = "";
  broken: string | undefined;
  kinds: readonly string[] = [];
  source = "";
  /** The thread, once its module has loaded; a thread that died is replaced at the next job. */
  private thread: Promise<Worker> | undefined;
  /** The job running now, where its progress and result go, and the protocol version. */
  private job: { frame: JobFrame; report: JobReport; version: number } | undefined;
  /** Called when the job running now has its result, for `close()`. */
  private idle: (() => void) | undefined;
  /** Why the thread is being ended under its job: an abort its handler did not heed. */
  private ending: string | undefined;

  constructor(
    private readonly data: HandlerThreadData,
    private readonly abortGraceMs: number,
    private readonly logger: Logger,
  ) {}

  /** Starts a thread and loads the module there; the jobs from now on run on it. */
  spawn(): Promise<{ codeHash: string; kinds: readonly string[]; source: string }> {
    const worker = new Worker(ENTRY, { workerData: this.data });
    let crash: unknown;
    const ready = new Promise<{ codeHash: string; kinds: readonly string[]; source: string }>(
      (resolve, reject) => {
        worker.on("message", (message: FromHandlerThread) => {
          switch (message.type) {
            case "ready":
              // A new thread after one died loads the file again: it must be the same code.
              if (this.codeHash !== "" && message.codeHash !== this.codeHash) {
                reject(
                  new BatonError(
                    "JOB_MODULE_CHANGED",
                    `the job module ${this.data.module} changed since this worker started (code hash ${this.codeHash}, now ${message.codeHash})`,
                  ),
                );
                void worker.terminate();
              } else resolve(message);
              return;
            case "loadFailed":
              reject(new BatonError(message.code, message.message));
              return;
            case "progress":
              if (this.job?.frame.id === message.frame.job) this.job.report.progress(message.frame);
              return;
            case "result":
              this.finish(message.result);
              return;
          }
        });
        worker.on("error", (error) => {
          crash = error;
        });
        worker.on("exit", (code) => {
          this.thread = undefined;
          const why =
            this.ending ?? (crash === undefined ? `exit code ${code}` : describeCrash(crash));
          this.ending = undefined;
          reject(
            new BatonError(
              "HANDLER_THREAD",
              `the handler thread stopped (${why}) before the job module loaded`,
            ),
          );
          if (this.job !== undefined) this.threadExitedUnder(this.job, why, crash);
        });
      },
    );
    this.thread = ready.then(() => worker);
    // A start() that comes meanwhile hears of a failure; the caller of spawn() does too.
    this.thread.catch(() => {});
    return ready;
  }

  /**
   * Runs `frame`'s job on the thread, starting a new one if the last one died. A new thread
   * that cannot load the module (it was removed or broken since), or loads another code than
   * the run admitted, fails the job with a `JobModuleError`, not retried: the module on disk
   * stays what it is, so the runner is `broken` and its worker leaves. One that dies while loading (out of memory) fails the attempt as any
   * death of the thread does, `HandlerThreadExited`, retried.
   */
  start(frame: JobFrame, version: number, report: JobReport): void {
    this.job = { frame, report, version };
    if (this.thread === undefined) void this.spawn().catch(() => {});
    this.thread!.then(
      (worker) => post(worker, { type: "start", frame, version }),
      (error: Error) => {
        this.broken = `its handler thread had to be started again after the last one stopped, and ${error.message}`;
        const thrown = new JobModuleError(
          `job ${frame.id} (${frame.kind}) cannot run on this worker: ${this.broken}. The worker leaves the run, since every job it were given would fail so: put the job module back as it was when the run started and start the worker again, or start the run again (results already stored are reused)`,
        );
        this.finish(failed(frame.id, serializeThrown(thrown, frame), version));
      },
    );
  }

  /**
   * Aborts the running job's handler; one that has not returned `abortGraceMs` later (stuck
   * in synchronous code, or ignoring its signal) is stopped by ending its thread, which fails
   * the attempt and keeps the worker.
   */
  abort(reason: string): void {
    const job = this.job;
    if (job === undefined) return;
    void this.thread?.then((worker) => {
      post(worker, { type: "abort", reason });
      setTimeout(() => {
        if (this.job !== job) return;
        this.ending = `it did not return within ${this.abortGraceMs} ms of being aborted (${reason}), so its thread was ended`;
        void worker.terminate();
      }, this.abortGraceMs).unref();
    });
  }

  /**
   * Stops the thread once the job running now, if any, has its result: an aborted handler
   * still gets to clean up (a rank job tears its ranks down), as on the connection's thread.
   */
  async close(): Promise<void> {
    if (this.job !== undefined) await new Promise<void>((resolve) => (this.idle = resolve));
    const worker = await this.thread?.catch(() => undefined);
    await worker?.terminate();
  }

  /**
   * Fails `job`'s attempt because its thread stopped (`why`). A crash that was an Error gives
   * the failure its stack, cut and with its causes as a thrown handler error's is, and is logged
   * at debug as one: the thread died with it, so only this thread can tell.
   */
  private threadExitedUnder(
    job: { frame: JobFrame; version: number },
    why: string,
    crash: unknown,
  ): void {
    const { frame, version } = job;
    const error: SerializedError = {
      name: "HandlerThreadExited",
      message: `the thread running job ${frame.id}'s handler stopped (${why}); the next job gets a new thread`,
    };
    if (crash instanceof Error && !isOutOfMemory(crash)) {
      error.stack = serializeThrown(crash, frame).stack;
    }
    this.logger
      .child({ job: frame.id, kind: frame.kind, attempt: frame.attempt })
      .debug({ err: error }, "job failed");
    this.finish(failed(frame.id, error, version));
  }

  private finish(result: ResultFrame): void {
    const job = this.job;
    if (job?.frame.id !== result.job) return;
    this.job = undefined;
    job.report.done(result);
    this.idle?.();
  }
}

function post(worker: Worker, message: ToHandlerThread): void {
  worker.postMessage(message);
}

function describeCrash(crash: unknown): string {
  if (crash instanceof Error) {
    return isOutOfMemory(crash)
      ? "it ran out of memory"
      : `uncaught ${crash.name}: ${crash.message}`;
  }
  return `uncaught ${String(crash)}`;
}

/** Whether the thread's crash is V8 running out of the thread's heap (no handler's frames). */
function isOutOfMemory(crash: Error): boolean {
  return (crash as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY";
}
