import { ConfigError } from "../errors.ts";
import type { EngineOptions } from "./engine.ts";

/** Options counted in whole things, at least 1. */
const WHOLE = ["maxLost", "maxFrameBytes"] as const;
/** Options in milliseconds, more than 0. */
const DURATIONS = [
  "leaseTimeoutMs",
  "heartbeatMs",
  "helloTimeoutMs",
  "deadAfterMs",
  "progressIntervalMs",
  "cancelGraceMs",
] as const;

/**
 * Refuses, with a `ConfigError` naming the option, the engine options no run could use: a
 * count of workers, a throttle or `maxLost` that is not a whole number of at least 1, a
 * duration that is not a finite number of milliseconds above 0. Such a value used to hang a
 * run (no worker, a throttle of 0) or fail every job as lost (a NaN timeout).
 *
 * @example
 * ```ts
 * checkEngineOptions({ jobs, workers: 0 });
 * // ConfigError: createEngine: workers must be a whole number of 1 or more, not 0
 * ```
 */
export function checkEngineOptions(options: EngineOptions): void {
  const { workers } = options;
  const whole = (name: string, value: unknown) => requireWhole("createEngine", name, value);
  if (typeof workers === "number") whole("workers", workers);
  else if (workers !== undefined && !("start" in workers) && workers.count !== undefined) {
    whole("workers.count", workers.count);
  }
  for (const name of WHOLE) if (options[name] !== undefined) whole(name, options[name]);
  for (const name of DURATIONS) {
    const value = options[name];
    if (
      value !== undefined &&
      !(typeof value === "number" && Number.isFinite(value) && value > 0)
    ) {
      refuse("createEngine", name, "a finite number of milliseconds above 0", value);
    }
  }
  for (const [kind, most] of Object.entries(options.throttle ?? {}))
    whole(`throttle.${kind}`, most);
}

/**
 * Refuses `value` for the option `name` of `where` unless it is a whole number of at least
 * `least`, with a `ConfigError` naming both.
 *
 * @example
 * ```ts
 * requireWhole("simulate", "workers", 0); // ConfigError: simulate: workers must be a whole number of 1 or more, not 0
 * ```
 */
export function requireWhole(where: string, name: string, value: unknown, least = 1): void {
  if (!(typeof value === "number" && Number.isInteger(value) && value >= least)) {
    refuse(where, name, `a whole number of ${least} or more`, value);
  }
}

function refuse(where: string, name: string, expected: string, value: unknown): never {
  throw new ConfigError(`${where}: ${name} must be ${expected}, not ${String(value)}`);
}
