import { formatDuration } from "../formatDuration.ts";
import { namedJobs } from "../graph/namedJobs.ts";
import type { PoolStop, WorkerPool } from "../runtime/workerPool.ts";
import { exitSoon } from "./exitSoon.ts";

/** How many of the handlers left behind the exit's line names; the rest are counted. */
const NAMED_JOBS = 5;

/** What `handlersLeftBehind` gives `baton run --in-process`. */
export interface HandlersLeftBehind {
  /** The run's in-process pool, which learns from its stop which handlers ignored their abort. */
  pool: WorkerPool;
  /**
   * Returns `code`, making sure the process exits with it once the job handlers still running
   * in it have had their abort grace, saying which did not stop should they hold it open.
   * Called once the run's result is written and its lock let go.
   */
  exit(code: number): number;
}

/**
 * `baton run --in-process`'s end: the job handlers run inside its process, so one that ignores
 * its abort (ctx.signal) after the run was cancelled, failed fast, or timed out would hold the
 * process open until it returned on its own (a minute for a handler sleeping one), after the
 * result was printed and with nothing said. Wraps `pool` to learn, from its stop, the jobs
 * whose handlers the cancel's grace ran out on (`PoolStop.stuck`); `exit` then gives those
 * handlers what is left of the abort grace `graceMs` since their abort (as `localPool` gives
 * its worker processes), anything else the handlers left running (one past its timeout, a
 * timer, a socket) the whole grace from the run's end, and exits, naming them. A process
 * nothing holds exits at once, saying nothing. `flag` is how the user set the grace, for the
 * line of a process held open by anything else (`--abort-grace 30s`, or the default's words).
 *
 * @example
 * ```ts
 * const left = handlersLeftBehind(inProcessPool({ count: 2 }), 5_000, "--abort-grace, default 5s");
 * const engine = createEngine({ jobs, workers: left.pool });
 * // … the run, its result written …
 * return left.exit(1);
 * ```
 */
export function handlersLeftBehind(
  pool: WorkerPool,
  graceMs: number,
  flag: string,
): HandlersLeftBehind {
  let stuck: PoolStop["stuck"];
  return {
    pool: {
      ...pool,
      start(context) {
        const running = pool.start(context);
        return {
          ...running,
          stop(ended) {
            stuck = ended?.stuck;
            return running.stop(ended);
          },
        };
      },
    },
    exit(code) {
      if (stuck === undefined || stuck.workers.size === 0) {
        return exitSoon(
          code,
          graceMs,
          `baton run: exiting ${formatDuration(graceMs)} after the run ended (${flag}) without what its job handlers still run in this process, which held it open: a handler that ignores its abort (ctx.signal) past its job's timeout, or a timer or socket one left open`,
        );
      }
      const jobs = [...stuck.workers.values()];
      const one = jobs.length === 1;
      const waitedMs = Math.max(graceMs, stuck.abortedMsAgo);
      const named = namedJobs(jobs, NAMED_JOBS);
      const which = one ? `job ${named}` : `${jobs.length} jobs, ${named}`;
      return exitSoon(
        code,
        waitedMs - stuck.abortedMsAgo,
        `baton run: exiting without the handler${one ? "" : "s"} of ${which}, which did not stop on ${one ? "its" : "their"} abort (ctx.signal) within ${formatDuration(waitedMs)} of the cancel: ${one ? "it runs" : "they run"} in this process and end${one ? "s" : ""} with it, ${one ? "its result" : "their results"} not stored (--abort-grace DURATION gives a handler longer to stop)`,
      );
    },
  };
}
