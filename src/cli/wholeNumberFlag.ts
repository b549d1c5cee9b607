import { ConfigError } from "../errors.ts";

/** What a flag of milliseconds takes, for {@link wholeNumberFlag}'s message. */
export const MILLISECONDS = "a whole number of milliseconds";

/** The whole numbers a flag takes: from `least` (default 1) to `most` (default: no bound). */
export interface WholeNumberRange {
  least?: number;
  most?: number;
}

/**
 * A command-line flag's whole number from `least` to `most`, or undefined when the flag is
 * absent; anything else (a sign, a decimal point, an exponent, hex, a number out of range) is
 * a `ConfigError` that names the flag, what it takes and what it got.
 *
 * @example
 * ```ts
 * wholeNumberFlag("--master-port", "29500", "a TCP port", { most: 65_535 }); // 29500
 * wholeNumberFlag("--ui-port", "0", "a TCP port", { least: 0, most: 65_535 }); // 0
 * wholeNumberFlag("--grace-ms", "soon", MILLISECONDS);
 * // ConfigError: --grace-ms must be a whole number of milliseconds ≥ 1, not "soon"
 * ```
 */
export function wholeNumberFlag(
  flag: string,
  text: string | undefined,
  what: string,
  { least = 1, most = Number.MAX_SAFE_INTEGER }: WholeNumberRange = {},
): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < least || value > most) {
    const range = most === Number.MAX_SAFE_INTEGER ? `≥ ${least}` : `from ${least} to ${most}`;
    throw new ConfigError(`${flag} must be ${what} ${range}, not "${text}"`);
  }
  return value;
}
