import type { LogLevel } from "./logger.ts";

/**
 * How long an aborted handler gets to return, by default (`abortGraceMs`, `baton worker
 * --abort-grace`, `inProcessPool`'s `abortGraceMs`): DESIGN §8's abort grace.
 *
 * @example
 * ```ts
 * const graceMs = options.abortGraceMs ?? DEFAULT_ABORT_GRACE_MS; // 5000
 * ```
 */
export const DEFAULT_ABORT_GRACE_MS = 5_000;

/** How a pool's `baton worker` processes run: the options every process pool takes. */
export interface WorkerProcessOptions {
  /**
   * Workers run the job handlers on a thread of their own (`baton worker --handler-thread`),
   * so that minutes of synchronous computation in a handler never keep a worker from
   * answering the coordinator's pings (default false: on the connection's thread). The job
   * module is then loaded on that thread only, and again on each thread that replaces one
   * that died: its top-level code runs in a worker thread (no signals, no `process.chdir()`).
   */
  handlerThread?: boolean | undefined;
  /**
   * What the workers log (`baton worker --log-level`; default `warn`), to their log files in
   * the run's folder of the store's `logs/`: `info` shows each worker's connection and its handlers' `ctx.log.info`.
   */
  logLevel?: LogLevel | undefined;
  /**
   * How long, in ms, an aborted job's handler gets to return before its worker goes on without
   * it (`baton worker --abort-grace`; default 5000): a worker that stops, or whose coordinator
   * closed or lost it, exits then; with `handlerThread`, a handler aborted by a cancel or its
   * timeout has its thread ended then. Raise it for handlers that clean up for longer (save a
   * checkpoint); the pool then waits as long for its workers when it stops. After a cancel whose
   * grace (`cancelGraceMs`) ran out, `localPool` gives a worker whose handler still runs what
   * is left of this since the cancel (nothing when it is not given), then kills it.
   */
  abortGraceMs?: number | undefined;
}

/**
 * The `baton worker` flags that say what `options` asks for.
 *
 * @example
 * ```ts
 * workerProcessFlags({ handlerThread: true, logLevel: "info", abortGraceMs: 30_000 });
 * // ["--handler-thread", "--log-level", "info", "--abort-grace", "30000ms"]
 * ```
 */
export function workerProcessFlags(options: WorkerProcessOptions): string[] {
  return [
    ...(options.handlerThread ? ["--handler-thread"] : []),
    ...(options.logLevel !== undefined ? ["--log-level", options.logLevel] : []),
    ...(options.abortGraceMs !== undefined ? ["--abort-grace", `${options.abortGraceMs}ms`] : []),
  ];
}
