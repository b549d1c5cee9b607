import { ConfigError } from "../errors.ts";
import { PLANTED_BUGS, type PlantedBug } from "./plantedBugs.ts";

/**
 * Refuses, with a `ConfigError` naming `where` and the known bugs, any name that is not a
 * planted bug: a typo would otherwise switch nothing on and make a run that should fail pass.
 * `baton sim --plant` and `simulate` share it.
 *
 * @example
 * ```ts
 * checkPlantedBugs("simulate: plantedBugs", ["nope"]);
 * // ConfigError: simulate: plantedBugs: unknown planted bug "nope"; give one of lease-running-job, …
 * ```
 */
export function checkPlantedBugs(
  where: string,
  bugs: readonly string[],
): asserts bugs is readonly PlantedBug[] {
  for (const bug of bugs) {
    if (!(PLANTED_BUGS as readonly string[]).includes(bug)) {
      throw new ConfigError(
        `${where}: unknown planted bug "${bug}"; give one of ${PLANTED_BUGS.join(", ")}`,
      );
    }
  }
}
