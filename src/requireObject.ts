import { argumentError } from "./argumentError.ts";

/**
 * Refuses, with {@link argumentError}'s `ConfigError`, an argument that is no object (a
 * JavaScript caller's `undefined`, a path where ports were asked for), before the function
 * reads a property of it and fails with a TypeError from inside.
 *
 * @example
 * ```ts
 * requireObject("cancelFile", "its options", "{ files, clock, stateDir, deployment }", 5);
 * // ConfigError: cancelFile: its options must be { files, clock, stateDir, deployment }, not 5
 * ```
 */
export function requireObject(
  where: string,
  name: string,
  what: string,
  value: unknown,
): asserts value is object {
  if (typeof value !== "object" || value === null) throw argumentError(where, name, what, value);
}
