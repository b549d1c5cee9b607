import { checkPlantedBugs } from "../machines/checkPlantedBugs.ts";
import { requireWhole } from "../runtime/requireWhole.ts";
import { SIM_LIMITS } from "./simLimits.ts";
import type { SimulateOptions } from "./simulate.ts";

/**
 * Refuses, with a `ConfigError` naming `where` and the option, the simulation options that
 * would give a false answer or none: a seed that is not an unsigned 32-bit integer, jobs or
 * workers or a world out of `SIM_LIMITS`, an `until` that is not a whole number of
 * milliseconds (-5 failed every seed, NaN switched the liveness bound off), an unknown
 * planted bug (a typo passed). `simulate` and `simulateSeeds` check before they start.
 *
 * @example
 * ```ts
 * checkSimulateOptions("simulate", { seed: 1, until: Number.NaN });
 * // ConfigError: simulate: until must be a whole number of 1 or more, not NaN
 * ```
 */
export function checkSimulateOptions(where: string, options: SimulateOptions): void {
  requireWhole(where, "seed", options.seed, 0, SIM_LIMITS.seed);
  for (const name of ["jobs", "workers"] as const) {
    if (options[name] !== undefined) requireWhole(where, name, options[name], 1, SIM_LIMITS[name]);
  }
  if (options.world !== undefined) requireWhole(where, "world", options.world, 0, SIM_LIMITS.world);
  if (options.until !== undefined) requireWhole(where, "until", options.until);
  checkPlantedBugs(`${where}: plantedBugs`, options.plantedBugs ?? []);
}
