import { ConfigError } from "../errors.ts";
import { preview } from "../graph/label.ts";
import { requireWhole } from "./requireWhole.ts";
import type { SlurmPoolOptions } from "./slurmPool.ts";

/**
 * Refuses, when `slurmPool` is made, a value of its own options that a run would otherwise
 * meet only once it started, or never: a `partition` that is not a name, an `array` that is
 * not a boolean, a `pollMs`, `commandTimeoutMs` or `stopTimeoutMs` that is not a whole number
 * of ms of 1 or more (a `commandTimeoutMs` of 0 meant no timeout at all), a `graceMs` or
 * `workerRestarts` that is not one of 0 or more (-1 restarts ended an allocation at its
 * worker's first exit), an `unreachableMs` that is neither that nor `Infinity`.
 *
 * @example
 * ```ts
 * checkSlurmPoolOptions({ jobsModule: "/shared/jobs.ts", commandTimeoutMs: 0 });
 * // ConfigError: slurmPool: commandTimeoutMs must be a whole number of 1 or more, not 0
 * ```
 */
export function checkSlurmPoolOptions(options: SlurmPoolOptions): void {
  const { partition, array, unreachableMs } = options;
  if (partition !== undefined && !(typeof partition === "string" && /^[^\s,]+$/.test(partition))) {
    throw new ConfigError(
      `slurmPool: partition must be the name of one Slurm partition, such as "cpu" (sinfo lists them; leave it out for the cluster's default), not ${preview(partition)}`,
    );
  }
  if (array !== undefined && typeof array !== "boolean") {
    throw new ConfigError(
      `slurmPool: array must be true (one job array per scale-up) or false (separate jobs), not ${preview(array)}`,
    );
  }
  for (const name of ["pollMs", "commandTimeoutMs", "stopTimeoutMs"] as const) {
    if (options[name] !== undefined) requireWhole("slurmPool", name, options[name], 1);
  }
  for (const name of ["graceMs", "workerRestarts"] as const) {
    if (options[name] !== undefined) requireWhole("slurmPool", name, options[name], 0);
  }
  if (unreachableMs !== undefined && unreachableMs !== Number.POSITIVE_INFINITY) {
    requireWhole("slurmPool", "unreachableMs (Infinity: never give up)", unreachableMs, 1);
  }
}
