/**
 * Known bugs that can be switched on deliberately, so the property tests and the simulation
 * can prove they catch them. Never switched on outside tests and `baton sim --plant`.
 *
 * - `lease-running-job`: a leased job stays in the ready queue and can be leased again.
 * - `lost-counts-as-failure`: losing a worker also counts a failed attempt.
 * - `forget-waiters-on-shutdown`: shutdown does not release the waiting connections.
 *
 * @example
 * ```ts
 * const board = new JobBoard(jobs, { plantedBugs: ["lease-running-job"] });
 * ```
 */
export type PlantedBug =
  | "lease-running-job"
  | "lost-counts-as-failure"
  | "forget-waiters-on-shutdown";

export const PLANTED_BUGS: readonly PlantedBug[] = [
  "lease-running-job",
  "lost-counts-as-failure",
  "forget-waiters-on-shutdown",
];
