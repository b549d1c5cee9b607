import { ConfigError } from "../errors.ts";

/** What a flag of milliseconds takes, for {@link wholeNumberFlag}'s message. */
export const MILLISECONDS = "a whole number of milliseconds";

/** The whole numbers a flag takes: from `least` (default 1) to `most` (default: no bound). */
export interface WholeNumberRange {
  least?: number;
  most?: number;
  /** What to do instead of giving more than `most`, said after the range when one does. */
  beyond?: string;
}

/**
 * A command-line flag's whole number from `least` to `most`, or undefined when the flag is
 * absent; anything else (a sign, a decimal point, an exponent, hex, a number out of range) is
 * a `ConfigError` that names the flag, what it takes and what it got, and for a number above
 * `most` what to do instead when the range says (`beyond`).
 *
 * @example
 * ```ts
 * wholeNumberFlag("--master-port", "29500", "a TCP port", { most: 65_535 }); // 29500
 * wholeNumberFlag("--ui-port", "0", "a TCP port", { least: 0, most: 65_535 }); // 0
 * wholeNumberFlag("--grace-ms", "soon", MILLISECONDS);
 * // ConfigError: --grace-ms must be a whole number of milliseconds ≥ 1, not "soon"
 * wholeNumberFlag("--keep-logs", "99999", "a whole number of runs", { most: 10_000, beyond: "copy …" });
 * // ConfigError: --keep-logs must be a whole number of runs from 1 to 10000, not "99999"; copy …
 * ```
 */
export function wholeNumberFlag(
  flag: string,
  text: string | undefined,
  what: string,
  { least = 1, most = Number.MAX_SAFE_INTEGER, beyond }: WholeNumberRange = {},
): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < least || value > most) {
    const range = most === Number.MAX_SAFE_INTEGER ? `≥ ${least}` : `from ${least} to ${most}`;
    const instead = beyond !== undefined && value > most ? `; ${beyond}` : "";
    throw new ConfigError(`${flag} must be ${what} ${range}, not "${text}"${instead}`);
  }
  return value;
}
