import { ConfigError } from "../errors.ts";
import { checkDeploymentId } from "./deploymentPaths.ts";
import { MARKER_HEARTBEAT_MS } from "./markerFormat.ts";
import { requireEnvironment } from "./requireEnvironment.ts";

/** A lease is stale after this long when the launcher does not say (`BATON_LEASE_STALE_MS`). */
export const LEASE_STALE_MS = 30_000;

/** What the launcher tells a rank through its environment. */
export interface RankEnv {
  rank: number;
  worldSize: number;
  localRank: number;
  localWorldSize: number;
  masterAddr: string | undefined;
  masterPort: number | undefined;
  deployment: string;
  /** The root state dir `S` (absolute). */
  stateDir: string;
  launcherPid: number;
  markerHeartbeatMs: number;
  leaseStaleMs: number;
}

/**
 * Reads the rank environment the launcher sets (`RANK`, `WORLD_SIZE`, `BATON_DEPLOYMENT`,
 * `BATON_STATE_DIR`, `BATON_LAUNCHER_PID`, …). `LOCAL_RANK` and `LOCAL_WORLD_SIZE` default to
 * `RANK` and `WORLD_SIZE`, the heartbeat to 10 s and the lease's staleness to 30 s; anything
 * missing or malformed is a `ConfigError` that says the program is meant to be launched by
 * baton. An `env` that is no object of text (undefined, a `KEY=value` list, a number as a
 * value) is a `ConfigError` naming it, which shows no value: an environment holds secrets.
 *
 * @example
 * ```ts
 * const env = readRankEnv(process.env);
 * console.log(`rank ${env.rank} of ${env.worldSize} in ${env.deployment}`);
 * ```
 */
export function readRankEnv(env: Record<string, string | undefined>): RankEnv {
  requireEnvironment("readRankEnv", "env", env, "an environment, such as process.env", true);
  const integer = (name: string, min: number, fallback?: number): number => {
    const text = env[name];
    if (text === undefined || text === "") {
      if (fallback !== undefined) return fallback;
      throw new ConfigError(
        `${name} is not set: this program is a rank of a baton deployment; start it with \`baton launch\` (or set RANK, WORLD_SIZE, BATON_DEPLOYMENT, BATON_STATE_DIR and BATON_LAUNCHER_PID)`,
      );
    }
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min) {
      throw new ConfigError(`${name} must be an integer ≥ ${min}, not ${JSON.stringify(text)}`);
    }
    return value;
  };
  const rank = integer("RANK", 0);
  const worldSize = integer("WORLD_SIZE", 1);
  if (rank >= worldSize) {
    throw new ConfigError(`RANK ${rank} must be below WORLD_SIZE ${worldSize}`);
  }
  const stateDir = env.BATON_STATE_DIR;
  if (stateDir === undefined || !stateDir.startsWith("/")) {
    throw new ConfigError(
      `BATON_STATE_DIR must be an absolute path, not ${JSON.stringify(stateDir ?? "")}: start this rank with \`baton launch\``,
    );
  }
  return {
    rank,
    worldSize,
    localRank: integer("LOCAL_RANK", 0, rank),
    localWorldSize: integer("LOCAL_WORLD_SIZE", 1, worldSize),
    masterAddr: env.MASTER_ADDR || undefined,
    masterPort: env.MASTER_PORT ? integer("MASTER_PORT", 1) : undefined,
    deployment: checkDeploymentId(env.BATON_DEPLOYMENT ?? ""),
    stateDir,
    launcherPid: integer("BATON_LAUNCHER_PID", 1),
    markerHeartbeatMs: integer("BATON_MARKER_HEARTBEAT_MS", 1, MARKER_HEARTBEAT_MS),
    leaseStaleMs: integer("BATON_LEASE_STALE_MS", 1, LEASE_STALE_MS),
  };
}
