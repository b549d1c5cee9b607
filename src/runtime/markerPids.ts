import { RankFileError } from "../errors.ts";
import type { DeploymentIdentity } from "../machines/carriesDeployment.ts";
import { type DeploymentPaths, rankFileName } from "../rank/deploymentPaths.ts";
import { MARKER_FORMAT } from "../rank/markerFormat.ts";
import { pidReused } from "../rank/pidReused.ts";
import { requireDeploymentIdentity } from "../rank/requireDeploymentIdentity.ts";
import { readStateFile } from "../rank/stateFile.ts";
import type { Files, Procs } from "./ports.ts";
import { requireMethods } from "./requireMethods.ts";

/**
 * The pids named in a deployment's rank markers: the teardown's sweep candidates. A marker
 * of another deployment or one that does not parse names nobody. Given this machine's
 * `procs`, neither does a marker whose pid another program took since (`pidReused`: it
 * started after the marker's rank did), so its arguments, which may well name the deployment
 * (`tail -f S/<dep>/rank-0.log`), never make it a candidate. The teardown still checks that
 * each pid carries the deployment before it signals it. Arguments it cannot take (a state
 * dir where the paths go, an identity with a relative state dir) are a `ConfigError`.
 *
 * @example
 * ```ts
 * const pids = await markerPids(files, deploymentPaths(stateDir, deployment), { deployment, stateDir }, procs);
 * ```
 */
export async function markerPids(
  files: Files,
  paths: DeploymentPaths,
  id: DeploymentIdentity,
  procs?: Pick<Procs, "inspect" | "environ">,
): Promise<number[]> {
  requireMethods("markerPids", "files", files, ["list", "read"], "a Files, such as nodeFiles()");
  requireMethods(
    "markerPids",
    "paths",
    paths,
    ["marker"],
    "a DeploymentPaths, such as deploymentPaths(stateDir, deployment)",
  );
  requireDeploymentIdentity("markerPids", "id", id);
  if (procs !== undefined) {
    requireMethods(
      "markerPids",
      "procs",
      procs,
      ["inspect", "environ"],
      "a Procs, such as nodeProcs(), or undefined",
    );
  }
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
  return markers.flatMap((marker) =>
    marker?.deployment === id.deployment &&
    (procs === undefined || !pidReused(procs, procs.inspect(marker.pid), id, marker.startedAt))
      ? [marker.pid]
      : [],
  );
}
