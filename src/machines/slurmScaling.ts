/**
 * The Slurm pool's scaling decision: how many allocations to submit and which to cancel,
 * from the run's demand and the allocations the pool holds. Pure: the pool reads the queue,
 * asks this, and acts.
 */

/** An allocation the pool holds and believes active. */
export interface AllocationView {
  /** Slurm's id: `1234` or, for an array task, `1234_5`. */
  id: string;
  state: "pending" | "running";
  /** Submission order (higher is newer). */
  order: number;
}

export interface ScalingInput {
  /** Jobs ready or running that the pool's workers can serve. */
  demand: number;
  /** The most allocations (one worker each) the pool may hold. */
  maxWorkers: number;
  allocations: readonly AllocationView[];
}

export interface ScalingDecision {
  /** New allocations to submit. */
  submit: number;
  /** Pending allocations to cancel, newest first. */
  cancel: string[];
}

/**
 * One worker per allocation, one job per worker: the pool wants `min(demand, maxWorkers)`
 * allocations. Running jobs count in the demand, so a busy worker is never taken for spare
 * capacity. Short of that it submits the difference; over it, it cancels the newest pending
 * allocations and never a running one: a running allocation's worker may hold a job, or be
 * handed one while the cancel is on its way. An idle one is not cancelled from here: its
 * worker leaves by itself after the pool's `idleExitMs` without a job, through the
 * coordinator's single path that releases a lease, and its allocation then ends COMPLETED.
 *
 * @example
 * ```ts
 * decideScaling({ demand: 5, maxWorkers: 3, allocations: [] }); // { submit: 3, cancel: [] }
 * decideScaling({
 *   demand: 1,
 *   maxWorkers: 3,
 *   allocations: [
 *     { id: "7_0", state: "running", order: 0 },
 *     { id: "7_1", state: "pending", order: 1 },
 *   ],
 * }); // { submit: 0, cancel: ["7_1"] }
 * ```
 */
export function decideScaling(input: ScalingInput): ScalingDecision {
  const wanted = Math.max(0, Math.min(Math.floor(input.demand), Math.floor(input.maxWorkers)));
  const active = input.allocations.length;
  if (wanted >= active) return { submit: wanted - active, cancel: [] };
  const cancel = input.allocations
    .filter((allocation) => allocation.state === "pending")
    .sort((a, b) => b.order - a.order)
    .slice(0, active - wanted)
    .map((allocation) => allocation.id);
  return { submit: 0, cancel };
}
