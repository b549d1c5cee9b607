import { ConfigError } from "../errors.ts";
import { preview } from "../graph/label.ts";
import { PLANTED_BUGS, type PlantedBug } from "./plantedBugs.ts";

/**
 * Refuses, with a `ConfigError` naming `where` and the known bugs, any name that is not a
 * planted bug: a typo would otherwise switch nothing on and make a run that should fail pass;
 * and, from JavaScript, bugs that are not a list (a string was read letter by letter:
 * `unknown planted bug "l"`). `baton sim --plant`, `simulate` and `createEngine` share it.
 *
 * @example
 * ```ts
 * checkPlantedBugs("simulate: plantedBugs", ["nope"]);
 * // ConfigError: simulate: plantedBugs: unknown planted bug "nope"; give one of lease-running-job, …
 * ```
 */
export function checkPlantedBugs(
  where: string,
  bugs: unknown,
): asserts bugs is readonly PlantedBug[] {
  if (!Array.isArray(bugs)) {
    throw new ConfigError(
      `${where} must be a list of planted bugs, such as ["release-lease-twice"], not ${preview(bugs)}`,
    );
  }
  for (const bug of bugs) {
    if (!(PLANTED_BUGS as readonly string[]).includes(bug)) {
      throw new ConfigError(
        `${where}: unknown planted bug "${bug}"; give one of ${PLANTED_BUGS.join(", ")}`,
      );
    }
  }
}
