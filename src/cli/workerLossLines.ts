import { leftOnPurpose } from "../machines/workerClose.ts";
import type { JobOutcome } from "../runtime/run.ts";
import { closeName } from "../transport/closeCodes.ts";

/**
 * What the run's summary says of the workers whose connection ended while they ran a job
 * (the outcomes' `lostWorkers`, with `lostWhy`), in the order they went: the workers lost,
 * each with how, by the name of its close (`connection broke`, `lease expired`; a worker lost
 * more than once, each way once), and on a line of its own the workers that left on purpose
 * (`leftOnPurpose`: stopped by a signal or their pool, or leaving a run their handler thread
 * can no longer serve), which are not lost: their jobs were handed on, not counted towards
 * `maxLost`. No line for either when there were none; `--json` has each close's code and
 * reason, the run's log the rest.
 *
 * @example
 * ```ts
 * workerLossLines(result.jobs.values());
 * // ["2 workers lost while running a job: local-1 (connection broke), local-3 (lease expired)",
 * //  "1 worker left on purpose while running a job: local-2"]
 * ```
 */
export function workerLossLines(outcomes: Iterable<JobOutcome>): string[] {
  /** The names of the closes of each worker lost. */
  const lost = new Map<string, Set<string>>();
  const left = new Set<string>();
  for (const { lostWorkers, lostWhy } of outcomes) {
    for (let i = 0; i < lostWorkers.length; i++) {
      const worker = lostWorkers[i]!;
      const close = lostWhy[i]!;
      if (leftOnPurpose(close)) {
        left.add(worker);
        continue;
      }
      const ways = lost.get(worker) ?? new Set<string>();
      ways.add(closeName(close.code));
      lost.set(worker, ways);
    }
  }
  const lines: string[] = [];
  if (lost.size > 0) {
    const named = [...lost].map(([worker, ways]) => `${worker} (${[...ways].join(", ")})`);
    lines.push(`${workers(lost.size)} lost while running a job: ${named.join(", ")}`);
  }
  if (left.size > 0) {
    lines.push(
      `${workers(left.size)} left on purpose while running a job: ${[...left].join(", ")}`,
    );
  }
  return lines;
}

function workers(n: number): string {
  return `${n} worker${n === 1 ? "" : "s"}`;
}
