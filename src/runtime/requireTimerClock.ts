import { requireMethods } from "./requireMethods.ts";

/**
 * Refuses, with {@link requireMethods}' `ConfigError`, a `value` for `name` of `where` that is
 * no Clock with the three methods a function that waits calls (`now`, `setTimeout`,
 * `clearTimeout`): one check for each that takes such a clock.
 *
 * @example
 * ```ts
 * requireTimerClock("reapRemoteSite", "clock", Date);
 * // ConfigError: reapRemoteSite: clock must be a Clock, such as nodeClock(); it has no setTimeout()
 * ```
 */
export function requireTimerClock(where: string, name: string, value: unknown): void {
  requireMethods(
    where,
    name,
    value,
    ["now", "setTimeout", "clearTimeout"],
    "a Clock, such as nodeClock()",
  );
}
