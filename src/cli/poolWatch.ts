import type { WorkerPool } from "../runtime/workerPool.ts";

/** What `poolWatch` tells of a run's pool. */
export interface PoolWatchers {
  /** The pool failed (`RunningPool.failed`): the run is stopping on its own. */
  failed: () => void;
  /**
   * The pool has started (`RunningPool.started`, or as soon as it is started when it has
   * none): the Slurm pool once a Slurm command has answered. Never for a pool that fails first.
   */
  started: () => void;
}

/**
 * `pool`, telling `failed` when a run's workers fail (`RunningPool.failed`: a crash loop, a
 * worker that cannot start, a Slurm allocation that failed) as it tells the engine, which then
 * stops the run: `baton run` learns that its run is stopping on its own, so that a Ctrl-C in
 * the seconds its workers take to stop is not said to cancel it. And `started` once the pool
 * has started, so that `baton run` prints how workers join a run whose pool works, not one
 * about to fail because Slurm's commands are missing.
 *
 * @example
 * ```ts
 * createEngine({ jobs, workers: poolWatch(localPool({ jobsModule }), { failed: () => { stopping = true; }, started: () => {} }) });
 * ```
 */
export function poolWatch(pool: WorkerPool, { failed, started }: PoolWatchers): WorkerPool {
  return {
    ...pool,
    start(context) {
      const running = pool.start(context);
      // Started is not told once the pool has failed.
      let hasFailed = false;
      void running.failed.then(() => {
        hasFailed = true;
        failed();
      });
      void (running.started ?? Promise.resolve()).then(() => {
        if (!hasFailed) started();
      });
      return running;
    },
  };
}
