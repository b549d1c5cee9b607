import { argumentError } from "./argumentError.ts";

/**
 * Refuses, with {@link argumentError}'s `ConfigError`, an optional callback that is given but is
 * no function, before baton calls it and fails with `… is not a function` from inside (often
 * long after the call that took it: at a run's first event, a simulation's first step).
 *
 * @example
 * ```ts
 * requireOptionalFunction("simulateSeeds", "onSeedEnded", "(result) => …", "log");
 * // ConfigError: simulateSeeds: onSeedEnded must be a function, (result) => …, not "log"
 * ```
 */
export function requireOptionalFunction(
  where: string,
  name: string,
  shape: string,
  value: unknown,
): void {
  if (value !== undefined && typeof value !== "function") {
    throw argumentError(where, name, `a function, ${shape}`, value);
  }
}
