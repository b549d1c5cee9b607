import { ConfigError } from "../errors.ts";
import type { Resources } from "../graph/job.ts";
import { RESOURCE_NAMES } from "../graph/resourceNames.ts";
import { LOG_LEVELS } from "./logger.ts";
import { requireWhole } from "./requireWhole.ts";

/** The values of a pool's options that its workers would otherwise refuse only once a run starts. */
export interface PoolOptionValues {
  resources?: Resources | undefined;
  handlerThread?: boolean | undefined;
  logLevel?: string | undefined;
  maxRestarts?: number | undefined;
  windowMs?: number | undefined;
  abortGraceMs?: number | undefined;
}

const RESOURCE_KEYS: readonly string[] = RESOURCE_NAMES;

/**
 * Refuses, when the pool is made, a value its workers could not take: an offer that is not
 * cpus, gpus and memory of finite numbers ≥ 0, a `handlerThread` that is not a boolean, a
 * `logLevel` that is no level, a `maxRestarts` that is not a whole number ≥ 0, or a `windowMs`
 * or `abortGraceMs` that is not one ≥ 1. Each would otherwise surface only once a run started, as workers that
 * cannot start, crash on their hello, or a job no worker can take.
 *
 * @example
 * ```ts
 * checkPoolOptions("localPool", { logLevel: "verbose" });
 * // ConfigError: localPool: logLevel must be one of trace, debug, info, warn, error, fatal, silent, not "verbose"
 * ```
 */
export function checkPoolOptions(where: string, options: PoolOptionValues): void {
  const { resources, handlerThread, logLevel, maxRestarts, windowMs, abortGraceMs } = options;
  if (resources !== undefined) {
    if (typeof resources !== "object" || resources === null) {
      throw new ConfigError(
        `${where}: resources must be an object such as { cpus: 4, memory: 16384 }, not ${show(resources)}`,
      );
    }
    for (const [key, value] of Object.entries(resources)) {
      if (!RESOURCE_KEYS.includes(key)) {
        throw new ConfigError(
          `${where}: resources.${key} is no resource; a worker offers cpus, gpus and memory (MiB)`,
        );
      }
      if (
        value !== undefined &&
        !(typeof value === "number" && Number.isFinite(value) && value >= 0)
      ) {
        throw new ConfigError(
          `${where}: resources.${key} must be a finite number ≥ 0, not ${show(value)}`,
        );
      }
    }
  }
  if (handlerThread !== undefined && typeof handlerThread !== "boolean") {
    throw new ConfigError(
      `${where}: handlerThread must be true or false, not ${show(handlerThread)}`,
    );
  }
  if (logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(
      `${where}: logLevel must be one of ${LOG_LEVELS.join(", ")}, not ${show(logLevel)}`,
    );
  }
  if (maxRestarts !== undefined) requireWhole(where, "maxRestarts", maxRestarts, 0);
  if (windowMs !== undefined) requireWhole(where, "windowMs", windowMs, 1);
  if (abortGraceMs !== undefined) requireWhole(where, "abortGraceMs", abortGraceMs, 1);
}

function show(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}
