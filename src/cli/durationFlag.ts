import { ConfigError } from "../errors.ts";

/** Milliseconds in each unit a duration flag takes. */
const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * A command-line flag's duration in milliseconds: a whole number of 1 or more and its unit
 * (`ms`, `s`, `m`, `h` or `d`), or undefined when the flag is absent. Anything else, a bare
 * number included (seconds or milliseconds?), is a `ConfigError` that names the flag and
 * what it got.
 *
 * @example
 * ```ts
 * durationFlag("--retry-for", "10m"); // 600000
 * durationFlag("--retry-for", "10");
 * // ConfigError: --retry-for must be a duration with its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "10"
 * ```
 */
export function durationFlag(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const parts = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  const ms = parts ? Number(parts[1]) * UNIT_MS[parts[2]!]! : 0;
  if (!(ms >= 1 && Number.isSafeInteger(ms))) {
    throw new ConfigError(
      `${flag} must be a duration with its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "${text}"`,
    );
  }
  return ms;
}
