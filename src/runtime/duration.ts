/** Milliseconds in each unit a duration takes. */
const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * A duration as a person writes it, in milliseconds: a whole number of 1 or more and its
 * unit (`ms`, `s`, `m`, `h` or `d`); undefined for anything else, a bare number included
 * (seconds or milliseconds?), so that the caller says what it expected and where.
 *
 * @example
 * ```ts
 * durationMs("10m"); // 600000
 * durationMs("10"); // undefined
 * ```
 */
export function durationMs(text: string): number | undefined {
  const parts = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  const ms = parts ? Number(parts[1]) * UNIT_MS[parts[2]!]! : 0;
  return ms >= 1 && Number.isSafeInteger(ms) ? ms : undefined;
}
