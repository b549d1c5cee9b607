import { argumentError } from "../argumentError.ts";
import { isDeploymentId } from "./deploymentPaths.ts";

/**
 * Refuses, with {@link argumentError}'s `ConfigError`, a `value` for `name` of `where` that is
 * no deployment id (`isDeploymentId`): one message for each public function that takes one.
 *
 * @example
 * ```ts
 * requireDeploymentId("reapRemoteSite", "deployment", "../etc");
 * // ConfigError: reapRemoteSite: deployment must be a deployment id (1 to 64 letters, digits, "_", "." or "-"), not "../etc"
 * ```
 */
export function requireDeploymentId(
  where: string,
  name: string,
  value: unknown,
): asserts value is string {
  if (!isDeploymentId(value as string)) {
    throw argumentError(
      where,
      name,
      'a deployment id (1 to 64 letters, digits, "_", "." or "-")',
      value,
    );
  }
}
