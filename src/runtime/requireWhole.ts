import { ConfigError } from "../errors.ts";

/**
 * Refuses `value` for the option `name` of `where` unless it is a whole number from `least`
 * (default 1) to `most` (default: no bound), with a `ConfigError` naming both; a string is
 * quoted, so that `seed: "1"` does not read "must be a whole number …, not 1".
 *
 * @example
 * ```ts
 * requireWhole("simulate", "workers", 0); // ConfigError: simulate: workers must be a whole number of 1 or more, not 0
 * requireWhole("simulate", "jobs", 1e6, 1, 10_000); // ConfigError: simulate: jobs must be a whole number from 1 to 10000, not 1000000
 * requireWhole("simulate", "seed", "7", 0); // ConfigError: simulate: seed must be a whole number of 0 or more, not "7"
 * ```
 */
export function requireWhole(
  where: string,
  name: string,
  value: unknown,
  least = 1,
  most = Number.POSITIVE_INFINITY,
): void {
  if (!(typeof value === "number" && Number.isInteger(value) && value >= least && value <= most)) {
    const range =
      most === Number.POSITIVE_INFINITY ? `of ${least} or more` : `from ${least} to ${most}`;
    throw new ConfigError(
      `${where}: ${name} must be a whole number ${range}, not ${typeof value === "string" ? JSON.stringify(value) : String(value)}`,
    );
  }
}
