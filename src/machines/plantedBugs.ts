/**
 * Known bugs that can be switched on deliberately, so the property tests and the simulation
 * can prove they catch them. Never switched on outside tests and `baton sim --plant`.
 *
 * - `lease-running-job`: a leased job stays in the ready queue and can be leased again.
 * - `lost-counts-as-failure`: losing a worker also counts a failed attempt.
 * - `forget-waiters-on-shutdown`: shutdown does not release the waiting connections.
 * - `release-lease-twice`: the lease sweep releases an expired lease itself (the job is ready
 *   again), and the WORKER_LOST that follows releases it a second time.
 * - `teardown-trusts-single-kill`: teardown declares a group verified right after the first
 *   KILL, without the second KILL, the marker sweep or the final check.
 * - `complete-before-durable`: with a result store, a completed result counts at once (its
 *   dependents start) while it is still being written, so a crash can lose a result that
 *   other jobs already used.
 * - `timeout-releases-lease`: an attempt past its timeout gives its job back at once (ready
 *   again) while its holder still holds the lease, so the job can run twice at once.
 * - `watchdog-never-aborts`: the watchdog counts failed probes but never reaches its abort
 *   stage, so a launcher that cannot renew its lease never gives its ranks up: they take it
 *   for dead and leave on their own.
 *
 * @example
 * ```ts
 * const report = await simulate({ seed: 2, jobs: 20, workers: 4, plantedBugs: ["release-lease-twice"] });
 * report.violation?.invariant; // 1: the simulation caught it
 * ```
 */
export type PlantedBug =
  | "lease-running-job"
  | "lost-counts-as-failure"
  | "forget-waiters-on-shutdown"
  | "release-lease-twice"
  | "teardown-trusts-single-kill"
  | "complete-before-durable"
  | "timeout-releases-lease"
  | "watchdog-never-aborts";

/**
 * Every planted bug, as `baton sim --plant` takes them.
 *
 * @example
 * ```ts
 * for (const bug of PLANTED_BUGS) {
 *   const report = await simulate({ seed: 1, jobs: 20, workers: 4, plantedBugs: [bug] });
 *   console.log(bug, report.ok ? "not caught by seed 1" : "caught");
 * }
 * ```
 */
export const PLANTED_BUGS: readonly PlantedBug[] = [
  "lease-running-job",
  "lost-counts-as-failure",
  "forget-waiters-on-shutdown",
  "release-lease-twice",
  "teardown-trusts-single-kill",
  "complete-before-durable",
  "timeout-releases-lease",
  "watchdog-never-aborts",
];
