import { argumentError } from "./argumentError.ts";

/**
 * Refuses, with {@link argumentError}'s `ConfigError`, an optional `AbortSignal` that is given
 * but is none (a teardown's or a reap's `hurry`), before baton listens on it and fails with
 * `… addEventListener is not a function` from inside, or never hears it.
 *
 * @example
 * ```ts
 * requireOptionalSignal("reapDeployments", "hurry", true);
 * // ConfigError: reapDeployments: hurry must be an AbortSignal, or undefined, not true
 * ```
 */
export function requireOptionalSignal(where: string, name: string, value: unknown): void {
  if (value !== undefined && !(value instanceof AbortSignal)) {
    throw argumentError(where, name, "an AbortSignal, or undefined", value);
  }
}
