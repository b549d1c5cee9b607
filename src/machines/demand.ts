import { canTake } from "../graph/canTake.ts";
import type { Resources } from "../graph/job.ts";
import type { JobBoard } from "./jobBoard.ts";

/**
 * A pool's demand, read from the coordinator's board: jobs ready or running that a worker
 * offering `offer` can take. Running jobs count: a busy worker is not spare capacity, so a
 * pool sized to this keeps every worker that holds a job and adds one per ready job.
 *
 * Ready jobs of a kind held back by `throttle` (the engine's most of a kind running at
 * once) count only up to what the throttle lets start: no worker could take the rest, so a
 * worker started for them would sit idle, and with the Slurm pool's idle exit leave and be
 * submitted again, over and over, while they wait.
 *
 * While the store's disk is full (`board.storeFull`) no lease is granted, so ready jobs
 * count for nothing: a worker started for them would only wait for room (and, on Slurm,
 * hold a node meanwhile).
 *
 * When every job of the graph fits the offer and nothing is throttled (the usual case: the
 * graph was checked against the pool's offers), this is the board's ready + running tally,
 * O(1). Otherwise it walks the jobs. The fit is rechecked only when jobs are added
 * (`ctx.need`).
 *
 * @example
 * ```ts
 * const demand = demandGauge(board);
 * demand({ cpus: 1 }); // e.g. 12 jobs ready + 2 running = 14
 * demandGauge(board, { train: 1 })({ cpus: 1 }); // 1 running train job and 5 ready: 1
 * ```
 */
export function demandGauge(
  board: JobBoard,
  throttle: Readonly<Record<string, number>> = {},
): (offer: Resources) => number {
  const throttled = Object.keys(throttle).length > 0;
  const fits = new Map<Resources, { jobs: number; all: boolean }>();
  return (offer) => {
    const leasing = !board.storeFull;
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
    if (known.all && !throttled) {
      const counts = board.counts();
      return (leasing ? counts.ready : 0) + counts.running;
    }
    let demand = 0;
    /** Per throttled kind: its jobs running (any offer's), and its ready ones this offer fits. */
    const kinds = new Map<string, { running: number; ready: number }>();
    for (const record of board.jobs.values()) {
      const { state } = record;
      if (state !== "running" && (state !== "ready" || !leasing)) continue;
      const { kind } = record.job;
      const limited = throttle[kind] !== undefined;
      let tally = limited ? kinds.get(kind) : undefined;
      if (limited && tally === undefined) {
        tally = { running: 0, ready: 0 };
        kinds.set(kind, tally);
      }
      if (state === "running" && tally) tally.running++;
      if (!canTake(offer, record.job.requires)) continue;
      if (state === "ready" && tally) tally.ready++;
      else demand++;
    }
    for (const [kind, { running, ready }] of kinds) {
      demand += Math.min(ready, Math.max(0, throttle[kind]! - running));
    }
    return demand;
  };
}
