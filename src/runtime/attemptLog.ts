/**
 * Every attempt a run started, in order, as columns: its job, the worker it was granted to,
 * when it started and, for a job's last attempt once the job finished, when that was (`NaN`
 * until then, and for every earlier attempt). A run's result takes each job's times from its
 * last attempt. Columns, not an object an attempt: each such object lived as long as the run,
 * with its two times boxed as numbers of their own (three objects a job for the collector to
 * copy as it promoted them), where a column of numbers holds them unboxed, and one array a
 * column grows in place.
 *
 * @example
 * ```ts
 * const log = new AttemptLog();
 * const first = log.start("3f2a9c01d4e5b6a7", "local-1", Date.now());
 * log.finish(first, Date.now());
 * log.size; // 1
 * ```
 */
export class AttemptLog {
  readonly jobs: string[] = [];
  readonly workers: (string | undefined)[] = [];
  readonly startedAt: number[] = [];
  readonly finishedAt: number[] = [];

  /** Records an attempt of `job` started `at` on `worker`; returns its index. */
  start(job: string, worker: string | undefined, at: number): number {
    this.workers.push(worker);
    this.startedAt.push(at);
    this.finishedAt.push(Number.NaN);
    return this.jobs.push(job) - 1;
  }

  /** The job of the attempt at `index` finished `at` (completed or failed for good). */
  finish(index: number, at: number): void {
    this.finishedAt[index] = at;
  }

  /** How many attempts were started. */
  get size(): number {
    return this.jobs.length;
  }
}
