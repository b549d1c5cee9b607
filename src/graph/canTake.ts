import type { Resources } from "./job.ts";

/**
 * Whether a worker offering `offer` can take a job that `requires` these resources: every
 * one of `cpus`, `gpus` and `memory` required is at most what is offered. A resource left
 * out counts as 0 on either side: a job that declares nothing runs on any worker, and a
 * worker that does not declare `gpus` (or `cpus`, or `memory`) takes no job that needs
 * some. Workers are expected to declare what they have.
 *
 * Pure (no I/O), so machines can use it; `planGraph` uses it to reject a job no configured
 * worker can ever take.
 *
 * @example
 * ```ts
 * canTake({ cpus: 8, memory: 16384 }, { cpus: 2 }); // true
 * canTake({ cpus: 8, memory: 16384 }, { gpus: 1 }); // false: no gpus offered
 * ```
 */
export function canTake(offer: Resources, requires: Resources): boolean {
  return (
    (requires.cpus ?? 0) <= (offer.cpus ?? 0) &&
    (requires.gpus ?? 0) <= (offer.gpus ?? 0) &&
    (requires.memory ?? 0) <= (offer.memory ?? 0)
  );
}

/**
 * Whether one of `offers` can take a job that requires `requires` (by {@link canTake}): a
 * loop, not `offers.some` with a closure made for every job checked.
 *
 * @example
 * ```ts
 * someTakes([{ cpus: 2 }, { cpus: 8 }], { cpus: 4 }); // true
 * ```
 */
export function someTakes(offers: readonly Resources[], requires: Resources): boolean {
  for (const offer of offers) if (canTake(offer, requires)) return true;
  return false;
}
