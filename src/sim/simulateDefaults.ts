import { DEFAULT_LEASE_TIMEOUT_MS } from "../machines/jobBoard.ts";

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

/**
 * Virtual ms from a run's start within which a fault profile starts the faults it draws,
 * unless told (`faultsWithin`, `baton sim --faults-within`): the default profile's 0–4 within
 * 20 s, the length of a lease and of the coordinator's silence limit
 * (`DEFAULT_LEASE_TIMEOUT_MS`, `DEFAULT_DEAD_AFTER_MS`), so that a fault meets leases and
 * connections made before it; heavy's 4–12 within twice that. Each seed's plan is drawn in this
 * range: another value moves every drawn fault, and so every seed's trace hash.
 *
 * @example
 * ```ts
 * await simulate({ seed: 1, faultsWithin: FAULT_HORIZON_MS.default / 4 }); // the faults 4× sooner
 * ```
 */
export const FAULT_HORIZON_MS = {
  default: DEFAULT_LEASE_TIMEOUT_MS,
  heavy: 2 * DEFAULT_LEASE_TIMEOUT_MS,
} as const;
