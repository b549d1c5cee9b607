import { basename, join } from "node:path";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";
import { type DeploymentStatusPorts, readDeploymentStatuses } from "../rank/deploymentStatus.ts";
import { readGraphLocks } from "../runtime/graphLock.ts";

/**
 * What `baton status` and `baton reap` say when a state dir holds nothing for them: that it
 * does not exist, when it does not, so a mistyped `--state-dir` does not look like a quiet
 * machine, with where a `baton run`'s is (its store's `run/`: a run of a graph module in
 * another folder, or given `--store`, is not in the current folder's `.baton/run`); and, when its `run` folder holds runs' graph locks or deployments (`--state-dir
 * .baton` for the default `.baton/run`), which `--state-dir` to give. `exists` is whether the state dir exists (the
 * `stateDirExists` their `--json` gives).
 *
 * @example
 * ```ts
 * await nothingInStateDir("nothing to reap", "/tmp/typo", false, ports);
 * // "nothing to reap: /tmp/typo does not exist (no run or launch used it; is --state-dir right? A baton run's is …)"
 * await nothingInStateDir("no runs or deployments", "/srv/app/.baton", true, ports);
 * // "no runs or deployments in /srv/app/.baton, but /srv/app/.baton/run holds 1 run and 2 deployments: give --state-dir /srv/app/.baton/run"
 * ```
 */
export async function nothingInStateDir(
  nothing: string,
  stateDir: string,
  exists: boolean,
  ports: DeploymentStatusPorts,
): Promise<string> {
  if (!exists) {
    return `${nothing}: ${stateDir} does not exist (no run or launch used it; is --state-dir right? A baton run's is its store's run/ folder: .baton/run beside its graph module, or DIR/run for --store DIR)`;
  }
  const below = join(stateDir, basename(DEFAULT_STATE_DIR));
  const held = [
    [(await readGraphLocks(below, ports.files)).runs.length, "run"],
    [(await readDeploymentStatuses(ports, below)).length, "deployment"],
  ] as const;
  const holds = held
    .filter(([count]) => count > 0)
    .map(([count, what]) => `${count} ${what}${count === 1 ? "" : "s"}`);
  return holds.length === 0
    ? `${nothing} in ${stateDir}`
    : `${nothing} in ${stateDir}, but ${below} holds ${holds.join(" and ")}: give --state-dir ${below}`;
}
