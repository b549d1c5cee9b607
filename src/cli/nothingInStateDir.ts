import { basename, join } from "node:path";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";
import { type DeploymentStatusPorts, readDeploymentStatuses } from "../rank/deploymentStatus.ts";

/**
 * What `baton status` and `baton reap` say when a state dir holds nothing for them: that it
 * does not exist, when it does not, so a mistyped `--state-dir` does not look like a quiet
 * machine; and, when its `run` folder holds deployments (`--state-dir .baton` for the default
 * `.baton/run`), which `--state-dir` to give. `exists` is whether the state dir exists (the
 * `stateDirExists` their `--json` gives).
 *
 * @example
 * ```ts
 * await nothingInStateDir("nothing to reap", "/tmp/typo", false, ports);
 * // "nothing to reap: /tmp/typo does not exist (no launch used it; is --state-dir right?)"
 * await nothingInStateDir("no deployments", "/srv/app/.baton", true, ports);
 * // "no deployments in /srv/app/.baton, but /srv/app/.baton/run holds 2 deployments: give --state-dir /srv/app/.baton/run"
 * ```
 */
export async function nothingInStateDir(
  nothing: string,
  stateDir: string,
  exists: boolean,
  ports: DeploymentStatusPorts,
): Promise<string> {
  if (!exists) {
    return `${nothing}: ${stateDir} does not exist (no launch used it; is --state-dir right?)`;
  }
  const below = join(stateDir, basename(DEFAULT_STATE_DIR));
  const held = (await readDeploymentStatuses(ports, below)).length;
  return held === 0
    ? `${nothing} in ${stateDir}`
    : `${nothing} in ${stateDir}, but ${below} holds ${held} deployment${held === 1 ? "" : "s"}: give --state-dir ${below}`;
}
