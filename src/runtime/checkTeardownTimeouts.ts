import { argumentError } from "../argumentError.ts";
import { DEFAULT_TEARDOWN_TIMEOUTS, type TeardownTimeouts } from "../machines/teardown.ts";
import { checkOptionNames } from "../optionNames.ts";

/**
 * Refuses, with a `ConfigError`, teardown timeouts (`name` of `where`) that are no object, a
 * name that is no teardown timeout (a typo such as `termGrace` kept the default without a
 * word), or a value that is no number of ms of 0 or more (`"5000"` made the grace `NaN`);
 * with `every`, also one left out, for a function that takes every timeout rather than
 * overrides of the defaults (`teardownDeadlineMs({ termGraceMs: 30_000 })` was `NaN`).
 *
 * @example
 * ```ts
 * checkTeardownTimeouts("tearDown", "timeouts", { termGraceMs: -1 });
 * // ConfigError: tearDown: timeouts.termGraceMs must be a number of ms of 0 or more, not -1
 * ```
 */
export function checkTeardownTimeouts(
  where: string,
  name: string,
  timeouts: unknown,
  every = false,
): asserts timeouts is Partial<TeardownTimeouts> {
  checkOptionNames(`${where}: ${name}`, timeouts, DEFAULT_TEARDOWN_TIMEOUTS, {
    shape: "{ termGraceMs, … }",
  });
  for (const key of Object.keys(DEFAULT_TEARDOWN_TIMEOUTS)) {
    const value = (timeouts as Record<string, unknown>)[key];
    if (value === undefined && !every) continue;
    if (!(typeof value === "number" && Number.isFinite(value) && value >= 0)) {
      throw argumentError(
        where,
        `${name}.${key}`,
        `a number of ms of 0 or more${every ? "; give every timeout, such as { ...DEFAULT_TEARDOWN_TIMEOUTS, termGraceMs: 30_000 }" : ""}`,
        value,
      );
    }
  }
}
