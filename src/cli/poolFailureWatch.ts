import type { WorkerPool } from "../runtime/workerPool.ts";

/**
 * `pool`, telling `failed` when a run's workers fail (`RunningPool.failed`: a crash loop, a
 * worker that cannot start, a Slurm allocation that failed) as it tells the engine, which then
 * stops the run: `baton run` learns that its run is stopping on its own, so that a Ctrl-C in
 * the seconds its workers take to stop is not said to cancel it.
 *
 * @example
 * ```ts
 * createEngine({ jobs, workers: poolFailureWatch(localPool({ jobsModule }), () => { stopping = true; }) });
 * ```
 */
export function poolFailureWatch(pool: WorkerPool, failed: () => void): WorkerPool {
  return {
    ...pool,
    start(context) {
      const running = pool.start(context);
      void running.failed.then(() => failed());
      return running;
    },
  };
}
