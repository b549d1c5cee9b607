/**
 * Every error baton raises is a `BatonError` with a stable `code` and a message that says
 * what to do about it.
 *
 * @example
 * ```ts
 * try { await engine.run(graph); }
 * catch (err) { if (err instanceof BatonError) console.error(err.code, err.message); }
 * ```
 */
export class BatonError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The graph cannot run as written: a cycle, an unknown kind, a job no worker can take, bad input. */
export class GraphError extends BatonError {
  constructor(
    code: "GRAPH_CYCLE" | "UNKNOWN_KIND" | "UNSATISFIABLE" | "NOT_JSON" | "BAD_JOB",
    message: string,
    /** Ids (or kinds, before planning) of the jobs at fault. */
    readonly jobs: readonly string[] = [],
  ) {
    super(code, message);
  }
}

/** A frame broke the protocol; carries the close code the connection is closed with. */
export class ProtocolError extends BatonError {
  constructor(
    code: string,
    message: string,
    readonly closeCode: number,
  ) {
    super(code, message);
  }
}

/** A job module could not be loaded or does not have the expected shape. */
export class JobModuleError extends BatonError {
  constructor(message: string) {
    super("JOB_MODULE", message);
  }
}

/** A setting was given a value it cannot take. */
export class ConfigError extends BatonError {
  constructor(message: string) {
    super("CONFIG", message);
  }
}

/**
 * A worker pool cannot keep its workers alive: a worker slot died more often than its
 * restart budget allows (`WORKER_CRASH_LOOP`), or a worker process could not be started
 * (`WORKER_SPAWN`). The pool owns worker failure; job failures are the coordinator's.
 */
export class PoolError extends BatonError {
  constructor(
    code: "WORKER_CRASH_LOOP" | "WORKER_SPAWN",
    message: string,
    /** Name of the worker at fault (`local-3.2`). */
    readonly worker: string,
    /** Its log file. */
    readonly logFile: string,
  ) {
    super(code, message);
  }
}
