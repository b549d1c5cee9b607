import { argumentError } from "../argumentError.ts";

/**
 * Refuses, with {@link argumentError}'s `ConfigError`, a `value` for `name` of `where` that is
 * no positive, finite number of milliseconds (a `"30s"`, a `NaN`, a `0`), which a timer took as
 * "at once" or never; `as` says where the same value is set otherwise.
 *
 * @example
 * ```ts
 * requirePositiveMs("openRemoteSite", "leaseStaleMs", "30s", "BATON_LEASE_STALE_MS");
 * // ConfigError: openRemoteSite: leaseStaleMs must be a positive number of ms (as BATON_LEASE_STALE_MS), not "30s"
 * ```
 */
export function requirePositiveMs(where: string, name: string, value: unknown, as?: string): void {
  if (!(typeof value === "number" && Number.isFinite(value) && value > 0)) {
    const what = as === undefined ? "" : ` (as ${as})`;
    throw argumentError(where, name, `a positive number of ms${what}`, value);
  }
}
