import { setMaxListeners } from "node:events";
import { availableParallelism } from "node:os";
import { ConfigError, PoolError } from "../errors.ts";
import type { Resources } from "../graph/job.ts";
import { DEFAULT_MAX_LOST } from "../machines/jobBoard.ts";
import { checkOptionNames } from "../optionNames.ts";
import { checkPoolOptions } from "./checkPoolOptions.ts";
import { machineResources } from "./machineResources.ts";
import { nodeClock } from "./nodeClock.ts";
import { nodeEntropy } from "./nodeEntropy.ts";
import { requireWhole } from "./requireWhole.ts";
import { resourcesAdvice } from "./resourcesAdvice.ts";
import { settledWithin } from "./settledWithin.ts";
import { runWorker, type WorkerExit } from "./worker.ts";
import { checkWorkerCount } from "./workerCountLimit.ts";
import {
  POOL_STOP_GRACE_MS,
  type PoolStart,
  type RunningPool,
  type WorkerPool,
} from "./workerPool.ts";
import { DEFAULT_ABORT_GRACE_MS } from "./workerProcessOptions.ts";

/**
 * Replacements an in-process pool allows for each of its workers unless told
 * (`restartBudget`: 3 × count), for connections that end abnormally (a handler's result over
 * the frame limit, a protocol error): a budget that grows with the pool, and three a worker,
 * the losses after which a job is failed as poison (`DEFAULT_MAX_LOST`), so that the pool
 * outlasts one such job for each worker it has.
 */
export const IN_PROCESS_RESTARTS_PER_WORKER = DEFAULT_MAX_LOST;

/** What `inProcessPool` takes: how many workers, what each offers, how many replacements. */
export interface InProcessPoolOptions {
  /** How many workers, at least 1 (default: the machine's cores). */
  count?: number | undefined;
  /**
   * What each worker offers (default: the machine's cores and memory, no gpus): a job that
   * requires a gpu runs only when this says the workers offer one.
   */
  resources?: Resources | undefined;
  /**
   * Replacements allowed for workers whose connection ended abnormally, a whole number or
   * `Infinity` (default 3 × count).
   */
  restartBudget?: number | undefined;
  /**
   * How long, in ms, a worker whose connection ended waits for the handler that end aborted
   * before it says, naming the job, that the handler does not stop on `ctx.signal` (it still
   * waits for it: an in-process handler cannot be stopped), a whole number of at least 1:
   * the process pools' `abortGraceMs` (default `DEFAULT_ABORT_GRACE_MS`, 5000).
   */
  abortGraceMs?: number | undefined;
}

/** Every option `inProcessPool` takes (the compiler holds this to `InProcessPoolOptions`). */
export const POOL_OPTIONS: Record<keyof InProcessPoolOptions, true> = {
  count: true,
  resources: true,
  restartBudget: true,
  abortGraceMs: true,
};

/**
 * Refuses, with a `ConfigError`, a count of in-process workers that is not a whole number of at
 * least 1. Zero says what a user asking for none most likely wants, a run that only workers
 * started elsewhere join, and how to have it: a pool of no worker processes, which listens.
 *
 * @example
 * ```ts
 * requireInProcessCount("createEngine", "workers", 0);
 * // ConfigError: createEngine: workers must be a whole number of 1 or more, not 0: … give
 * // workers: localPool({ jobsModule, count: 0 }) instead …
 * ```
 */
export function requireInProcessCount(where: string, name: string, count: unknown): void {
  if (count === 0) {
    throw new ConfigError(
      `${where}: ${name} must be a whole number of 1 or more, not 0: a run of in-process workers has no other worker to run its jobs; for a run that only workers started elsewhere join (baton worker --connect …), give workers: localPool({ jobsModule, count: 0 }) instead, and listen for workers on other hosts`,
    );
  }
  requireWhole(where, name, count);
}

/**
 * Workers in this process, over whatever Net the engine gives them (the in-memory Net by
 * default). A worker whose connection ends abnormally (not a normal stop) is replaced,
 * within a restart budget, once the handler its loss aborted has returned (a worker runs one
 * job at a time); the pool owns worker failure, the coordinator owns job failure.
 * A count that is not a whole number of at least 1 (0 workers would leave a run waiting for
 * good), or more than this machine's memory holds, and a restart budget below 0, are a
 * `ConfigError`. Each worker offers `resources`, by default this machine's cores and memory
 * and no gpus (they are not looked for): a graph with a job that requires more is refused
 * (`UNSATISFIABLE`), saying which `resources` would take it ("give inProcessPool resources
 * that offer enough, such as { cpus: 2, gpus: 1, memory: 24105 }").
 *
 * @example
 * ```ts
 * const engine = createEngine({ jobs, workers: inProcessPool({ count: 4, resources: { cpus: 1 } }) });
 * // Handlers that take up to 30 s to return once aborted (a checkpoint): said only after that.
 * const patient = createEngine({ jobs, workers: inProcessPool({ abortGraceMs: 30_000 }) });
 * // Jobs that require a gpu (requires: { gpus: 1 }): say that each worker offers one.
 * const onGpus = createEngine({
 *   jobs,
 *   workers: inProcessPool({ count: 2, resources: { cpus: 8, gpus: 1, memory: 16384 } }),
 * });
 * ```
 */
export function inProcessPool(options: InProcessPoolOptions = {}): WorkerPool {
  checkOptionNames("inProcessPool", options, POOL_OPTIONS, {
    shape: "{ count, resources, restartBudget, abortGraceMs }",
  });
  const count = options.count ?? availableParallelism();
  requireInProcessCount("inProcessPool", "count", count);
  checkPoolOptions("inProcessPool", {
    resources: options.resources,
    abortGraceMs: options.abortGraceMs,
  });
  const graceMs = options.abortGraceMs ?? DEFAULT_ABORT_GRACE_MS;
  checkWorkerCount("inProcessPool: count", count, "inProcess");
  const { restartBudget } = options;
  if (
    restartBudget !== undefined &&
    !(
      restartBudget === Number.POSITIVE_INFINITY ||
      (Number.isInteger(restartBudget) && restartBudget >= 0)
    )
  ) {
    throw new ConfigError(
      `inProcessPool: restartBudget must be a whole number of 0 or more, or Infinity, not ${typeof restartBudget === "string" ? JSON.stringify(restartBudget) : String(restartBudget)}`,
    );
  }
  const resources = options.resources ?? machineResources();
  return {
    offers: [resources],
    offerMore: (enough) => resourcesAdvice("inProcessPool", enough),
    remote: false,
    start(context: PoolStart): RunningPool {
      const allowed = restartBudget ?? count * IN_PROCESS_RESTARTS_PER_WORKER;
      let budget = allowed;
      let live = count;
      let stopping = false;
      let fail!: (error: Error) => void;
      const failed = new Promise<Error>((resolve) => {
        fail = resolve;
      });
      /** A worker that cannot be replaced; when it was the last, the pool has failed. */
      const giveUp = (name: string, why: string) => {
        live--;
        if (live > 0 || stopping) {
          context.logger.error({ worker: name, why }, "worker not replaced");
          return;
        }
        // The pool's failure says why, once: the run rejects with it.
        fail(
          new PoolError(
            "WORKER_CRASH_LOOP",
            `in-process worker ${name} ${why}, and the pool has no worker left: its ${allowed} replacements are spent. ` +
              "Each replacement followed a connection that ended abnormally: a handler that ignored its AbortSignal past its lease, a result over the frame size limit, or a protocol error; fix that handler, or give the engine a larger `restartBudget` through `inProcessPool`",
            name,
          ),
        );
      };
      // What a worker takes, and no more: a handler still stuck after the run ended holds its
      // worker, which must not hold the run (the demand gauge reads the whole job board).
      const { address, net, secret, jobs, logger, clock } = context;
      const entropy = context.entropy ?? nodeEntropy();
      /** Settles when the pool stops: a slot waiting for an aborted handler waits no more. */
      let stopped!: () => void;
      const poolStopped = new Promise<void>((resolve) => {
        stopped = resolve;
      });
      /**
       * Waits for the handler of the job a lost connection aborted to return, or for the pool
       * to stop (a handler that never returns holds no run that ends or is cancelled). Said
       * once it has waited the abort grace (`graceMs`).
       */
      const handlerReturned = async (name: string, exit: WorkerExit): Promise<void> => {
        const returned = Promise.race([exit.jobStopped, poolStopped]);
        if (await settledWithin(returned, graceMs, clock ?? nodeClock())) return;
        const job = exit.runningJob;
        const which = job === undefined ? "the job" : `job ${job.id} (${job.kind})`;
        logger.warn(
          {
            worker: name,
            waitedMs: graceMs,
            ...(job !== undefined && { job: job.id, kind: job.kind }),
          },
          `the handler of ${which} this worker was running has not returned ${graceMs} ms after its abort (it does not stop on ctx.signal); a worker runs one job at a time, so it rejoins the run once that handler returns, and an in-process handler cannot be stopped: make it return (or throw) once ctx.signal aborts, or run the jobs in worker processes with a handler thread (localPool({ handlerThread: true }), baton run --handler-thread), which end such a handler once their abort grace is over`,
        );
        await returned;
      };
      // Ends the workers still there `POOL_STOP_GRACE_MS` into the stop, each at once.
      const halt = new AbortController();
      // Each live worker listens to it: more than ten is a pool's size, not a leak.
      setMaxListeners(0, halt.signal);
      /**
       * Runs the worker of one slot, and again after an abnormal end under the same name and
       * `instance`: a replacement whose predecessor's connection the coordinator still holds
       * (lost unseen) replaces it, where another instance would be refused (4010).
       */
      const start = (name: string, instance: string): Promise<void> =>
        runWorker({
          address,
          net,
          secret,
          jobs,
          // The run's logger, the caller's: each worker's lines, its handlers' `ctx.log`
          // among them, name it, as a worker process's file does.
          logger: logger.child({ worker: name }),
          ...(clock && { clock }),
          name,
          instance,
          resources,
          signal: halt.signal,
        }).then(
          async (exit) => {
            if (stopping || exit.code === 1000 || exit.code === 1001) return;
            const why = `ended with ${exit.code} (${exit.reason})`;
            if (budget <= 0) return giveUp(name, why);
            // One job at a time: the job the loss aborted must have returned before the next
            // lease, as `baton worker` waits for it.
            await handlerReturned(name, exit);
            if (stopping) return;
            budget--;
            context.logger.warn(
              { worker: name, code: exit.code, reason: exit.reason },
              "worker replaced",
            );
            return start(name, instance);
          },
          (error: unknown) => giveUp(name, `could not connect: ${(error as Error).message}`),
        );
      const running = Array.from({ length: count }, (_, i) =>
        start(`inproc-${i + 1}`, entropy.id()),
      );
      return {
        failed,
        async stop() {
          stopping = true;
          stopped();
          const ended = Promise.all(running);
          // A worker that cannot hear the coordinator's close (partitioned) would otherwise
          // hold the run until its silence limit, 20 s by default, though it holds no job the
          // run still needs: the run has ended (or been shut down) before the pool stops.
          if (await settledWithin(ended, POOL_STOP_GRACE_MS, clock ?? nodeClock())) return;
          logger.info(
            { graceMs: POOL_STOP_GRACE_MS },
            "in-process workers still connected after the grace: stopping them",
          );
          halt.abort(`the run is over: the pool stopped its workers ${POOL_STOP_GRACE_MS} ms ago`);
          await ended;
        },
      };
    },
  };
}
