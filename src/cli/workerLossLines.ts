import { namedLosses, type WorkerClose } from "../machines/workerClose.ts";
import type { JobOutcome } from "../runtime/run.ts";
import { CONNECTION_BROKE } from "../transport/closeCodes.ts";

/**
 * What the run's summary says of the workers whose connection ended while they ran a job
 * (the outcomes' `lostWorkers`, with `lostWhy`), named by `namedLosses` in the order they
 * went: the workers lost, each with how (`connection broke`, `lease expired`), and on a line
 * of its own the workers that left on purpose (stopped by a signal or their pool, or leaving
 * a run their handler thread can no longer serve), which are not lost: their jobs were
 * handed on, not counted towards `maxLost`. A worker whose process's end its pool saw is left
 * to `workerExitLines`, which says how it ended. No line for either when there were none;
 * `--json` has each close's code and reason, the run's log the rest.
 *
 * @example
 * ```ts
 * workerLossLines(result.jobs.values());
 * // ["2 workers lost while running a job: local-1 (connection broke), local-3 (lease expired)",
 * //  "1 worker left on purpose while running a job: local-2"]
 * ```
 */
export function workerLossLines(outcomes: Iterable<JobOutcome>): string[] {
  const { lost, left } = namedLosses(losses(outcomes));
  const lines: string[] = [];
  if (lost.length > 0) {
    lines.push(`${workers(lost.length)} lost while running a job: ${lost.join(", ")}`);
  }
  if (left.length > 0) {
    lines.push(`${workers(left.length)} left on purpose while running a job: ${left.join(", ")}`);
  }
  return lines;
}

/**
 * Each worker lost under each outcome, with how its connection ended, in order; not one whose
 * connection broke as its process ended the way its pool saw, which `workerExitLines` says.
 */
function* losses(outcomes: Iterable<JobOutcome>): Generator<[string, WorkerClose]> {
  for (const { lostWorkers, lostWhy } of outcomes) {
    for (let i = 0; i < lostWorkers.length; i++) {
      const why = lostWhy[i]!;
      if (why.code === CONNECTION_BROKE && why.exit !== undefined) continue;
      yield [lostWorkers[i]!, why];
    }
  }
}

function workers(n: number): string {
  return `${n} worker${n === 1 ? "" : "s"}`;
}
