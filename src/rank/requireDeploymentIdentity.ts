import { argumentError } from "../argumentError.ts";
import type { DeploymentIdentity } from "../machines/carriesDeployment.ts";
import { requireObject } from "../requireObject.ts";
import { requireDeploymentId } from "./requireDeploymentId.ts";

/**
 * Refuses, with {@link argumentError}'s `ConfigError`, what is no {@link DeploymentIdentity}
 * as a public function takes one (`name`, of `where`): no object, a `deployment` that is no
 * deployment id, or a `stateDir` that is no absolute path. A relative state dir was taken, and
 * never matched the `BATON_STATE_DIR` a launcher gives its ranks (always absolute and
 * resolved): the ownership tests answered false for the deployment's own processes.
 *
 * @example
 * ```ts
 * requireDeploymentIdentity("envCarries", "id", { deployment: "web", stateDir: ".baton/run" });
 * // ConfigError: envCarries: id.stateDir must be the absolute path of the state directory, as the launcher gives its ranks BATON_STATE_DIR (resolve(".baton/run")), not ".baton/run"
 * ```
 */
export function requireDeploymentIdentity(
  where: string,
  name: string,
  value: unknown,
): asserts value is DeploymentIdentity {
  requireObject(where, name, "a deployment and its state dir, { deployment, stateDir }", value);
  const { deployment, stateDir } = value as Partial<Record<keyof DeploymentIdentity, unknown>>;
  requireDeploymentId(where, `${name}.deployment`, deployment);
  if (typeof stateDir !== "string" || !stateDir.startsWith("/")) {
    throw argumentError(
      where,
      `${name}.stateDir`,
      'the absolute path of the state directory, as the launcher gives its ranks BATON_STATE_DIR (resolve(".baton/run"))',
      stateDir,
    );
  }
}
