/**
 * What `simulate` (and `baton sim`) draws and runs when not told: a graph of `jobs` jobs on
 * `workers` in-process workers. Enough jobs and workers for leases, retries and crashes to
 * meet, few enough for a seed to take a fraction of a second.
 *
 * @example
 * ```ts
 * await simulate({ seed: 1, jobs: SIMULATE_DEFAULTS.jobs * 10 }); // a graph ten times the default
 * ```
 */
export const SIMULATE_DEFAULTS = { jobs: 100, workers: 8 } as const;
