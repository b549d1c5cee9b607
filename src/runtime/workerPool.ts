import type { Logger } from "pino";
import type { Resources } from "../graph/job.ts";
import type { LoadedJobs } from "./jobModule.ts";
import type { Clock, Entropy, Net, ProcExit } from "./ports.ts";

/** What a pool needs to start workers for one run. */
export interface PoolStart {
  /** Where the coordinator listens. */
  address: string;
  net: Net;
  secret: Uint8Array;
  /** A 0600 file holding the secret, for workers in other processes. */
  secretFile?: string | undefined;
  /** Where this run's worker logs go (its folder in the store's `logs/`). */
  logsDir: string;
  jobs: LoadedJobs;
  logger: Logger;
  /** The engine's clock, for workers in this process (their silence watchdog runs on it). */
  clock?: Clock | undefined;
  /**
   * The engine's randomness, for workers in this process: each worker slot draws its instance
   * id from it (see `runWorker`'s `instance`), so that a simulated run stays one seed's. Absent
   * outside the engine: the pool then draws from `node:crypto`.
   */
  entropy?: Entropy | undefined;
  /**
   * Jobs ready or running that a worker offering `offer` can take, now: what a scaling pool
   * sizes itself to (busy workers are not spare capacity). Absent outside the engine.
   */
  demand?: ((offer: Resources) => number) | undefined;
  /**
   * Whether a worker of this name joined the run (the coordinator accepted its hello), even if
   * it has left since. One that never did was given no job, so a pool's `stop()` need not wait
   * for it to finish one. Absent outside the engine.
   */
  joined?: ((worker: string) => boolean) | undefined;
  /**
   * Whether the coordinator gave up on the worker of this name (`CoordinatorServer.gaveUpOn`):
   * it closed the worker's connection for a lease that expired or a silence, or the connection
   * broke, and the worker has not joined again since. Such a worker holds no job and will hear
   * no close, so a pool's `stop()` need not wait for it to leave. Absent outside the engine.
   */
  gaveUpOn?: ((worker: string) => boolean) | undefined;
  /**
   * The run files (secrets, Slurm batch scripts; see `sweepAbandonedRunFiles`) of coordinators
   * that died on this host, which the engine removed before this start: a pool cleans up what
   * they stood for (the Slurm pool cancels the allocations their scripts name).
   */
  abandonedRunFiles?: readonly string[] | undefined;
}

/**
 * How long a pool's `stop()` waits for its workers to leave on their own (the coordinator
 * closed their connections) before it stops them: the coordinator's own wait for a closing
 * worker's answer (wsNet's close handshake). A worker that has not left by then cannot hear
 * its coordinator (a partition, a stopped process), and the run it served is over.
 */
export const POOL_STOP_GRACE_MS = 5000;

/** What a pool's `stop()` is told of how its run ended. */
export interface PoolStop {
  /**
   * Set when the run was shut down because a cancel's grace ran out (`cancelGraceMs`) on
   * jobs whose handlers ignore their abort: the workers that held them (each name to the job
   * it held, its id and kind), and how long before the stop the cancel aborted them. A pool gives those workers no more than
   * what is left of the abort grace it was given (`WorkerProcessOptions.abortGraceMs`) since
   * that abort, then ends them at once: stopped as any other, they would wait for the handler
   * again. The others leave as the run's end closes them.
   */
  stuck?: { workers: ReadonlyMap<string, StuckJob>; abortedMsAgo: number } | undefined;
}

/** The job a worker's handler that ignores its abort runs (`PoolStop.stuck`). */
export interface StuckJob {
  id: string;
  kind: string;
}

/** A pool's workers for one run. */
export interface RunningPool {
  /**
   * Settles only if the pool cannot keep its workers alive (it never resolves otherwise): the
   * run stops and rejects with this error. Once every job has ended (a worker that exits with
   * an error as `stop()` ends it), it is only logged, and the run resolves with its result.
   */
  readonly failed: Promise<Error>;
  /**
   * Resolves once the pool has shown it can start workers (the Slurm pool: once a Slurm
   * command has answered), never when it fails first; absent: as soon as it is started.
   * `baton run` prints how workers join the run only then.
   */
  readonly started?: Promise<void> | undefined;
  /**
   * Stops the workers; resolves when every one has ended. Called as the listener closes, told
   * how the run ended (`PoolStop`).
   */
  stop(ended?: PoolStop): Promise<void>;
  /**
   * What the pool waits for before more of its workers can join, in words, or undefined when
   * nothing: the Slurm pool's pending allocations and Slurm's reasons, and the workers starting
   * in its running ones ("Slurm: 2 allocations pending (Priority), 1 worker starting"). Read
   * with every `progress` (`RunProgress.poolWaitingFor`).
   */
  waitingFor?(): string | undefined;
  /**
   * How the process of the worker called `worker` ended, when the pool knows (`localPool`: its
   * exit code, or the signal that killed it, once it has exited; undefined for a worker whose
   * process it did not start or has not seen end, as `slurmPool`'s and a `baton worker` started
   * by hand). Read after `stop()` resolves, for the run's result (`WorkerLoss.exit`).
   */
  exitOf?(worker: string): ProcExit | undefined;
}

/**
 * Starts workers. The pool owns worker failure (a dead worker is replaced within a budget);
 * the coordinator owns job failure. `offers` is what its workers will offer, so the graph
 * can be checked before anything runs; empty when it starts none (no check: the workers
 * that join decide).
 *
 * @example
 * ```ts
 * const pool: WorkerPool = inProcessPool({ count: 4, resources: { cpus: 1 } });
 * const engine = createEngine({ jobs, workers: pool }); // each run calls pool.start, then stop
 * ```
 */
export interface WorkerPool {
  readonly offers: readonly Resources[];
  /**
   * How to have its workers offer `enough`, the way out named when a graph is refused as
   * `UNSATISFIABLE` (`PlanOptions.offerMore`), such as "give slurmPool resources { cpus: 4 }".
   */
  readonly offerMore?: ((enough: Resources) => string) | undefined;
  /** True when the workers live in other processes and need a real network. */
  readonly remote: boolean;
  /**
   * The job module file its worker processes load. An engine given the handlers themselves
   * (not a loaded module) takes its code hash over this file (`moduleSource`), as each worker
   * does, so that its workers are not refused as running other code.
   */
  readonly jobsModule?: string | undefined;
  /**
   * The address its workers are sent to instead of the one the coordinator listens at
   * (`localPool`'s and `slurmPool`'s `connect`): the engine then needs its own `listen`.
   */
  readonly connect?: string | undefined;
  start(context: PoolStart): RunningPool;
}
