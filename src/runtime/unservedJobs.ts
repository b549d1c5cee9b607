import { formatRequired, formatResources } from "../graph/formatResources.ts";
import type { Resources } from "../graph/job.ts";
import type { JobBoard, JobRecord } from "../machines/jobBoard.ts";

/** How many jobs the warning names; the rest are counted. */
const NAMED = 3;

/**
 * Whether the run waits for a worker it may never get: jobs are ready, workers are connected,
 * and every one of them waits for a job, none holding one, and the store has room. The board hands a ready job to a
 * waiting worker that can take it at once (invariant 4), so none of these workers offers what
 * any ready job requires, and no busy worker will come free to take one. A run of workers that
 * join by hand (`--workers 0`, whose offers are not known in advance, so the graph is not
 * checked against them) otherwise waits for a worker that offers more, in silence.
 *
 * @example
 * ```ts
 * if (waitsForOffers(board)) log.warn(unservedWarning(board));
 * ```
 */
export function waitsForOffers(board: JobBoard): boolean {
  return (
    board.waiting.size > 0 &&
    board.leases.size === 0 &&
    board.counts().ready > 0 &&
    // Held back by a full store (which the run says itself), not by what they offer.
    !board.storeFull
  );
}

/**
 * What to tell the user of a run that `waitsForOffers`: which jobs wait, what they require,
 * the most the connected workers offer, and how to start a worker that offers enough.
 *
 * @example
 * ```ts
 * unservedWarning(board).message;
 * // "1 job waits for a worker that offers what it requires, which the 1 connected worker does
 * //  not: job 3b9f… (train) requires gpus 1; the connected workers offer at most cpus 8, gpus 0,
 * //  memory 16384 MiB; start a worker that offers more (baton worker --cpus N --gpus N --memory MIB)"
 * ```
 */
export function unservedWarning(board: JobBoard): {
  message: string;
  jobs: string[];
  offers: Resources;
} {
  const ready: JobRecord[] = [];
  for (const record of board.jobs.values()) if (record.state === "ready") ready.push(record);
  const offers: Required<Resources> = { cpus: 0, gpus: 0, memory: 0 };
  for (const { resources } of board.waiting.values()) {
    offers.cpus = Math.max(offers.cpus, resources.cpus ?? 0);
    offers.gpus = Math.max(offers.gpus, resources.gpus ?? 0);
    offers.memory = Math.max(offers.memory, resources.memory ?? 0);
  }
  const named = ready
    .slice(0, NAMED)
    .map(({ job }) => `job ${job.id} (${job.kind}) requires ${formatRequired(job.requires)}`)
    .join(", ");
  const more = ready.length > NAMED ? `, and ${ready.length - NAMED} more` : "";
  const workers = board.waiting.size;
  const one = ready.length === 1;
  return {
    message: `${ready.length} job${one ? " waits" : "s wait"} for a worker that offers what ${one ? "it requires" : "they require"}, which ${workers === 1 ? "the 1 connected worker does not" : `none of the ${workers} connected workers does`}: ${named}${more}; the connected workers offer at most ${formatResources(offers)}; start a worker that offers more (baton worker --cpus N --gpus N --memory MIB)`,
    jobs: ready.slice(0, NAMED).map(({ job }) => job.id),
    offers,
  };
}
