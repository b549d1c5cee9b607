import { canTake } from "../graph/canTake.ts";
import type { Resources } from "../graph/job.ts";
import type { JobBoard } from "./jobBoard.ts";

/**
 * A pool's demand, read from the coordinator's board: jobs ready or running that a worker
 * offering `offer` can take. Running jobs count: a busy worker is not spare capacity, so a
 * pool sized to this keeps every worker that holds a job and adds one per ready job.
 *
 * When every job of the graph fits the offer (the usual case: the graph was checked
 * against the pool's offers), this is the board's ready + running tally, O(1). Otherwise it
 * walks the jobs. The check is redone only when jobs are added (`ctx.need`).
 *
 * @example
 * ```ts
 * const demand = demandGauge(board);
 * demand({ cpus: 1 }); // e.g. 12 jobs ready + 2 running = 14
 * ```
 */
export function demandGauge(board: JobBoard): (offer: Resources) => number {
  const fits = new Map<Resources, { jobs: number; all: boolean }>();
  return (offer) => {
    let known = fits.get(offer);
    if (known?.jobs !== board.jobs.size) {
      let all = true;
      for (const record of board.jobs.values()) {
        if (!canTake(offer, record.job.requires)) {
          all = false;
          break;
        }
      }
      known = { jobs: board.jobs.size, all };
      fits.set(offer, known);
    }
    if (known.all) {
      const counts = board.counts();
      return counts.ready + counts.running;
    }
    let demand = 0;
    for (const record of board.jobs.values()) {
      if (
        (record.state === "ready" || record.state === "running") &&
        canTake(offer, record.job.requires)
      ) {
        demand++;
      }
    }
    return demand;
  };
}
