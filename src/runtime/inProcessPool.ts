import type { Resources } from "../graph/job.ts";
import { runWorker } from "./worker.ts";
import type { PoolStart, RunningPool, WorkerPool } from "./workerPool.ts";

export interface InProcessPoolOptions {
  count: number;
  resources: Resources;
  /** Replacements allowed for workers whose connection ended abnormally (default 3 × count). */
  restartBudget?: number;
}

/**
 * Workers in this process, over whatever Net the engine gives them (the in-memory Net by
 * default). A worker whose connection ends abnormally (not a normal stop) is replaced,
 * within a restart budget; the pool owns worker failure, the coordinator owns job failure.
 *
 * @example
 * ```ts
 * const engine = createEngine({ jobs, workers: inProcessPool({ count: 4, resources: { cpus: 1 } }) });
 * ```
 */
export function inProcessPool(options: InProcessPoolOptions): WorkerPool {
  return {
    offers: [options.resources],
    remote: false,
    start(context: PoolStart): RunningPool {
      let budget = options.restartBudget ?? options.count * 3;
      let stopping = false;
      const failed = new Promise<Error>(() => {});
      const start = (name: string): Promise<void> =>
        runWorker({ ...context, name, resources: options.resources }).then(
          (exit) => {
            if (stopping || exit.code === 1000 || exit.code === 1001 || budget <= 0) return;
            budget--;
            context.logger.warn(
              { worker: name, code: exit.code, reason: exit.reason },
              "worker replaced",
            );
            return start(name);
          },
          (error: unknown) => {
            context.logger.error({ worker: name, err: error }, "worker could not connect");
          },
        );
      const running = Array.from({ length: options.count }, (_, i) => start(`inproc-${i + 1}`));
      return {
        failed,
        async stop() {
          stopping = true;
          await Promise.all(running);
        },
      };
    },
  };
}
