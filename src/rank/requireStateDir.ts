import { argumentError } from "../argumentError.ts";
import { A_STATE_DIR } from "./deploymentPaths.ts";

/**
 * Refuses, with {@link argumentError}'s `ConfigError`, a state dir that is no path: not text, or
 * empty. An empty one read the working directory's entries as deployments (or failed at the
 * first list); `deploymentPaths` alone reads `""` as `.`, as a path joined to a name does.
 * `what` says what it takes, `A_STATE_DIR` unless told.
 *
 * @example
 * ```ts
 * requireStateDir("readDeploymentStatuses", "");
 * // ConfigError: readDeploymentStatuses: stateDir must be the path of the state directory its deployments are in, such as DEFAULT_STATE_DIR (".baton/run"), not ""
 * ```
 */
export function requireStateDir(
  where: string,
  value: unknown,
  what = A_STATE_DIR,
): asserts value is string {
  if (typeof value !== "string" || value === "") {
    throw argumentError(where, "stateDir", what, value);
  }
}
