import { ConfigError } from "../errors.ts";

/** What a flag of milliseconds takes, for {@link wholeNumberFlag}'s message. */
export const MILLISECONDS = "a whole number of milliseconds";

/**
 * A command-line flag's whole number from 1 to `max`, or undefined when the flag is absent;
 * anything else is a `ConfigError` that names the flag, what it takes and what it got.
 *
 * @example
 * ```ts
 * wholeNumberFlag("--master-port", "29500", "a TCP port", 65_535); // 29500
 * wholeNumberFlag("--grace-ms", "soon", MILLISECONDS);
 * // ConfigError: --grace-ms must be a whole number of milliseconds ≥ 1, not "soon"
 * ```
 */
export function wholeNumberFlag(
  flag: string,
  text: string | undefined,
  what: string,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? "≥ 1" : `from 1 to ${max}`;
    throw new ConfigError(`${flag} must be ${what} ${range}, not "${text}"`);
  }
  return value;
}
