import { howItEnded } from "../runtime/howItEnded.ts";
import type { ProcExit } from "../runtime/ports.ts";
import type { JobOutcome } from "../runtime/run.ts";
import { HANDLER_EXITED_EXIT } from "../runtime/workerExitCodes.ts";
import { CONNECTION_BROKE } from "../transport/closeCodes.ts";

/** The most lines `workerExitLines` gives before it counts the rest. */
const MOST_LINES = 10;

/**
 * What the run's summary says of the workers whose connection broke (1006) while they ran a
 * job and whose process's exit the pool knows (`WorkerLoss.exit`, `localPool`'s workers): per
 * job and way of ending, the workers, how their processes ended, the job, and what usually
 * ends a worker so, where the loss alone said `connection broke` and the exit code was only in
 * the worker's log and the pool's warning. Losses of other closes (a lease that expired, a
 * worker that left on purpose) are not: their process ended because of the close, not the
 * other way round. At most 10 lines, then how many more. Of a job failed as poison, whose
 * failure line names its workers and how each ended, only how many and what usually ends one so.
 *
 * @example
 * ```ts
 * workerExitLines(result.jobs.values());
 * // ["local-2 and local-1 exited with code 1 while running exits adb1436003855200: did the job's handler call process.exit(1), or throw where nothing catches it (a timer, an event handler)?"]
 * ```
 */
export function workerExitLines(outcomes: Iterable<JobOutcome>): string[] {
  /** The workers of each job and way of ending, in the order they went. */
  const groups = new Map<string, { outcome: JobOutcome; exit: ProcExit; workers: string[] }>();
  for (const outcome of outcomes) {
    outcome.lostWorkers.forEach((worker, i) => {
      const { code, exit } = outcome.lostWhy[i]!;
      if (code !== CONNECTION_BROKE || exit === undefined) return;
      const key = `${outcome.id} ${howItEnded(exit)}`;
      const group = groups.get(key) ?? { outcome, exit, workers: [] };
      group.workers.push(worker);
      groups.set(key, group);
    });
  }
  const lines = [...groups.values()].slice(0, MOST_LINES).map(({ outcome, exit, workers }) => {
    const one = workers.length === 1;
    const ended = one || exit.signal === null ? howItEnded(exit) : `were killed by ${exit.signal}`;
    // A job failed as poison names its workers, and how each ended, on its own line above.
    if (outcome.cause === "poison") {
      return `${outcome.kind} ${outcome.id}: ${one ? "its worker" : `${workers.length} of its workers`} ${ended}: ${likelyCause(exit)}`;
    }
    const who = one ? workers[0] : `${workers.slice(0, -1).join(", ")} and ${workers.at(-1)}`;
    return `${who} ${ended} while running ${outcome.kind} ${outcome.id}: ${likelyCause(exit)}`;
  });
  if (groups.size > MOST_LINES)
    lines.push(`… and ${groups.size - MOST_LINES} more (use --json for all)`);
  return lines;
}

/** What usually ends a worker's process so, as a question: the worker's log says which. */
function likelyCause({ code, signal }: ProcExit): string {
  if (signal === "SIGKILL") {
    return "out of memory? The kernel's OOM killer sends SIGKILL (`dmesg` names what it killed), as does `kill -9`.";
  }
  if (signal !== null) return `something sent it ${signal}, or it crashed in native code.`;
  if (code === HANDLER_EXITED_EXIT) return "the job's handler called process.exit(0)?";
  if (code === 1) {
    return "did the job's handler call process.exit(1), or throw where nothing catches it (a timer, an event handler)?";
  }
  return `did the job's handler, or a library it calls, call process.exit(${code})?`;
}
