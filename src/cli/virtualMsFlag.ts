import { ConfigError } from "../errors.ts";
import { durationMs } from "../runtime/duration.ts";
import { SIM_LIMITS } from "../sim/simLimits.ts";

/**
 * The virtual ms of `baton sim`'s `flag` (`--until`, `--faults-within`): a whole number of ms,
 * as a failure's printed command gives it, or a duration with its unit as baton's other
 * duration flags take one (`90s`, `30m`, `2h`, `7d`), from 1 ms to `SIM_LIMITS.virtualMs` (30
 * days); undefined when the flag is absent. Anything else is a `ConfigError` naming the flag
 * and both forms: `--until 30m` was refused as no whole number of milliseconds, where
 * `--store-full-wait 30m` is how a duration is given.
 *
 * @example
 * ```ts
 * virtualMsFlag("--until", "3600000"); // 3600000
 * virtualMsFlag("--until", "2h"); // 7200000
 * virtualMsFlag("--until", "soon");
 * // ConfigError: --until must be virtual ms, a whole number from 1 to 2592000000, or a duration and its unit such as 90s, 30m, 2h or 7d (at most 30d), not "soon"
 * ```
 */
export function virtualMsFlag(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = /^\d+$/.test(text) ? Number(text) : durationMs(text);
  if (ms === undefined || ms < 1 || ms > SIM_LIMITS.virtualMs) {
    throw new ConfigError(
      `${flag} must be virtual ms, a whole number from 1 to ${SIM_LIMITS.virtualMs}, or a duration and its unit such as 90s, 30m, 2h or 7d (at most 30d), not "${text}"`,
    );
  }
  return ms;
}
