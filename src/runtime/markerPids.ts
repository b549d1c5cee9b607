import { RankFileError } from "../errors.ts";
import { type DeploymentPaths, rankFileName } from "../rank/deploymentPaths.ts";
import { MARKER_FORMAT } from "../rank/markerFormat.ts";
import { readStateFile } from "../rank/stateFile.ts";
import type { Files } from "./ports.ts";

/**
 * The pids named in a deployment's rank markers: the teardown's sweep candidates. A marker
 * of another deployment or one that does not parse names nobody. The teardown still checks
 * that each pid carries the deployment before it signals it.
 *
 * @example
 * ```ts
 * const target = { ..., sweepCandidates: () => markerPids(files, paths, deployment) };
 * ```
 */
export async function markerPids(
  files: Files,
  paths: DeploymentPaths,
  deployment: string,
): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await files.list(paths.dir)) {
    const file = rankFileName(name);
    if (file?.kind !== "marker") continue;
    try {
      const marker = await readStateFile(files, MARKER_FORMAT, paths.marker(file.rank));
      if (marker?.deployment === deployment) pids.push(marker.pid);
    } catch (error) {
      if (!(error instanceof RankFileError)) throw error;
    }
  }
  return pids;
}
