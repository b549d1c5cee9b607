import { argumentError } from "../argumentError.ts";
import { ConfigError } from "../errors.ts";

/**
 * The root state directory when none is given, relative to the working directory.
 *
 * @example
 * ```ts
 * const report = await reapDeployments({ stateDir: DEFAULT_STATE_DIR }); // what `baton reap` reaps
 * ```
 */
export const DEFAULT_STATE_DIR = ".baton/run";

/** What a deployment id may be: 1–64 of `[A-Za-z0-9_.-]`, and not `.` or `..`. */
const DEPLOYMENT_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Whether `id` can name a deployment (and so a directory under the state dir).
 *
 * @example
 * ```ts
 * isDeploymentId("dep-4kq9z0c1m2xa"); // true
 * isDeploymentId("../etc");           // false
 * ```
 */
export function isDeploymentId(id: string): boolean {
  return typeof id === "string" && DEPLOYMENT_ID.test(id) && id !== "." && id !== "..";
}

/**
 * `id` if it can name a deployment, else a `ConfigError` saying what is allowed.
 *
 * @example
 * ```ts
 * const deployment = checkDeploymentId(options.deployment ?? generated);
 * ```
 */
export function checkDeploymentId(id: string): string {
  if (!isDeploymentId(id)) {
    throw new ConfigError(
      `deployment id ${JSON.stringify(id)} is not valid: use 1 to 64 letters, digits, "_", "." or "-" (and not "." or "..")`,
    );
  }
  return id;
}

/**
 * The name of a deployment's outcome record (`DeploymentPaths.outcome`): the one file besides
 * its ranks' logs that stays once it ended.
 */
export const OUTCOME_FILE = "outcome.json";

/** The files of one deployment, `S/<deployment>/…`. */
export interface DeploymentPaths {
  readonly dir: string;
  readonly manifest: string;
  readonly lease: string;
  readonly cancel: string;
  /** How it ran and ended (`baton.outcome/1`): not a control file; it stays with the logs. */
  readonly outcome: string;
  marker(rank: number): string;
  ack(rank: number): string;
  log(rank: number): string;
}

/** What a function that takes a state directory takes, as its refusal of anything else says. */
export const A_STATE_DIR = `the path of the state directory its deployments are in, such as DEFAULT_STATE_DIR (${JSON.stringify(DEFAULT_STATE_DIR)})`;

/**
 * The paths of a deployment's files under the root state dir `stateDir`. Throws a
 * `ConfigError` saying what it takes for a `stateDir` that is no text or a `deployment` that
 * is no valid id (a number was taken as one).
 *
 * @example
 * ```ts
 * const paths = deploymentPaths("/srv/app/.baton/run", "dep-4kq9z0c1m2xa");
 * paths.marker(3); // "/srv/app/.baton/run/dep-4kq9z0c1m2xa/rank-3.marker.json"
 * ```
 */
export function deploymentPaths(stateDir: string, deployment: string): DeploymentPaths {
  if (typeof stateDir !== "string") {
    throw argumentError("deploymentPaths", "stateDir", A_STATE_DIR, stateDir);
  }
  const root = stateDir === "" ? "." : stateDir.replace(/\/+$/, "");
  const dir = `${root}/${checkDeploymentId(deployment)}`;
  return {
    dir,
    manifest: `${dir}/manifest.json`,
    lease: `${dir}/lease.json`,
    cancel: `${dir}/cancel.json`,
    outcome: `${dir}/${OUTCOME_FILE}`,
    marker: (rank) => `${dir}/rank-${rank}.marker.json`,
    ack: (rank) => `${dir}/rank-${rank}.ack.json`,
    log: (rank) => `${dir}/rank-${rank}.log`,
  };
}

/** A per-rank file of a deployment directory, recognised by its name. */
export interface RankFileName {
  rank: number;
  kind: "marker" | "ack" | "log";
}

/**
 * Which rank a file name of a deployment directory belongs to, and what it is; `undefined`
 * for any other name.
 *
 * @example
 * ```ts
 * rankFileName("rank-2.ack.json"); // { rank: 2, kind: "ack" }
 * ```
 */
export function rankFileName(name: string): RankFileName | undefined {
  const match = /^rank-(0|[1-9]\d{0,8})\.(marker\.json|ack\.json|log)$/.exec(name);
  if (match === null) return undefined;
  const kind = match[2] === "log" ? "log" : match[2] === "ack.json" ? "ack" : "marker";
  return { rank: Number(match[1]), kind };
}
