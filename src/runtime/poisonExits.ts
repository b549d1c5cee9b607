import { POISON_LOGS_ADVICE } from "../machines/jobBoard.ts";
import { leftOnPurpose, namedLosses } from "../machines/workerClose.ts";
import { CONNECTION_BROKE } from "../transport/closeCodes.ts";
import { howItEnded } from "./howItEnded.ts";
import type { JobOutcome } from "./run.ts";

/**
 * The `message` of a job's outcome, saying, for a job failed as poison, how its lost workers'
 * processes ended where the pool knows (`lostWhy[i].exit`: `localPool`'s workers, whose
 * connection broke), in place of the job board's "Look at those workers' logs for how they
 * died.", which the board says as it knows no exit, and without the board's list of the workers
 * (each with how its connection ended) when every one's exit is known; the logs are still named for the workers
 * whose exit is not known. Any other message, and a poison job's with no exit known, as it is.
 *
 * @example
 * ```ts
 * poisonExits(outcome.error.message, outcome);
 * // "job … it is failed as poison so it cannot take down more workers. How their processes ended: local-1 exited with code 1, local-2 was killed by SIGKILL."
 * ```
 */
export function poisonExits(
  message: string,
  outcome: Pick<JobOutcome, "cause" | "lostWorkers" | "lostWhy">,
): string {
  if (outcome.cause !== "poison") return message;
  const ended = new Set<string>();
  const known = new Set<string>();
  const died = new Set<string>();
  outcome.lostWorkers.forEach((worker, i) => {
    const close = outcome.lostWhy[i]!;
    if (leftOnPurpose(close)) return;
    died.add(worker);
    if (close.code === CONNECTION_BROKE && close.exit !== undefined) {
      ended.add(`${worker} ${howItEnded(close.exit)}`);
      known.add(worker);
    }
  });
  if (ended.size === 0) return message;
  const others = [...died].filter((worker) => !known.has(worker));
  const rest =
    others.length === 0
      ? ""
      : `; look at the log${others.length === 1 ? "" : "s"} of ${others.join(", ")} for how ${others.length === 1 ? "it" : "they"} died`;
  const said = message.replace(
    POISON_LOGS_ADVICE,
    `How their processes ended: ${[...ended].join(", ")}${rest}.`,
  );
  // Every worker is then named with how it ended: the board's list of them, each with how its
  // connection ended ("connection broke"), would name each a second time.
  if (others.length > 0 || died.size < outcome.lostWorkers.length) return said;
  const { lost } = namedLosses(
    outcome.lostWorkers.map((worker, i) => [worker, outcome.lostWhy[i]!]),
  );
  return said.replace(` (lost ${lost.join(", ")})`, "");
}
