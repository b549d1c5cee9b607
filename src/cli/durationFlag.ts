import { ConfigError } from "../errors.ts";
import { durationMs } from "../runtime/duration.ts";

/** What a duration flag takes besides a duration. */
export interface DurationFlagOptions {
  /** `never` is taken too, as `Infinity`: for a flag whose default is a duration. */
  never?: boolean | undefined;
}

/**
 * A command-line flag's duration in milliseconds: a whole number of 1 or more and its unit
 * (`ms`, `s`, `m`, `h` or `d`), or undefined when the flag is absent; with `never`, the word
 * `never` too, as `Infinity`. Anything else, a bare number included (seconds or
 * milliseconds?), is a `ConfigError` that names the flag and what it got.
 *
 * @example
 * ```ts
 * durationFlag("--retry-for", "10m"); // 600000
 * durationFlag("--slurm-idle-exit", "never", { never: true }); // Infinity
 * durationFlag("--retry-for", "10");
 * // ConfigError: --retry-for must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "10"
 * ```
 */
export function durationFlag(
  flag: string,
  text: string | undefined,
  options: DurationFlagOptions = {},
): number | undefined {
  if (text === undefined) return undefined;
  if (options.never && text.trim() === "never") return Number.POSITIVE_INFINITY;
  const ms = durationMs(text);
  if (ms === undefined) {
    throw new ConfigError(
      `${flag} must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d)${options.never ? ", or never" : ""}, not "${text}"`,
    );
  }
  return ms;
}
