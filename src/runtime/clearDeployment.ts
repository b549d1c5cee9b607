import { type DeploymentPaths, rankFileName } from "../rank/deploymentPaths.ts";
import type { Files } from "./ports.ts";

/**
 * Removes a deployment's control files once its teardown is verified: the manifest first
 * (so no reaper takes a half-cleared directory for an orphan), then, all at once, the lease,
 * the cancel file and every rank's marker and ack. The ranks' logs stay, for reading after
 * the fact.
 *
 * @example
 * ```ts
 * await tearDown(target, ports);
 * await clearDeployment(files, deploymentPaths(stateDir, deployment));
 * ```
 */
export async function clearDeployment(files: Files, paths: DeploymentPaths): Promise<void> {
  await files.remove(paths.manifest);
  const rankFiles = (await files.list(paths.dir)).filter((name) => {
    const file = rankFileName(name);
    return file !== undefined && file.kind !== "log";
  });
  await Promise.all([
    files.remove(paths.lease),
    files.remove(paths.cancel),
    ...rankFiles.map((name) => files.remove(`${paths.dir}/${name}`)),
  ]);
}
