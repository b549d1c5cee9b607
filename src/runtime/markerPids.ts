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
 * const pids = await markerPids(files, deploymentPaths(stateDir, deployment), deployment);
 * ```
 */
export async function markerPids(
  files: Files,
  paths: DeploymentPaths,
  deployment: string,
): Promise<number[]> {
  const ranks = (await files.list(paths.dir)).flatMap((name) => {
    const file = rankFileName(name);
    return file?.kind === "marker" ? [file.rank] : [];
  });
  // Read in parallel: this sits on every stop's critical path.
  const markers = await Promise.all(
    ranks.map((rank) =>
      readStateFile(files, MARKER_FORMAT, paths.marker(rank)).catch((error: unknown) => {
        if (error instanceof RankFileError) return undefined;
        throw error;
      }),
    ),
  );
  return markers.flatMap((marker) => (marker?.deployment === deployment ? [marker.pid] : []));
}
