import { type DeploymentIdentity, envCarries } from "../machines/carriesDeployment.ts";
import { isAlive } from "../rank/launcherWatch.ts";
import type { Manifest, ManifestRank } from "../rank/manifestFormat.ts";
import type { Procs } from "./ports.ts";
import { withEnviron } from "./withEnviron.ts";

/**
 * The local ranks of `manifest`'s launch that its manifest does not record: a launcher writes
 * its manifest once before it starts its ranks and again, with their pids, once all are
 * started, so one killed in between leaves ranks that only their environment names. A rank is
 * the leader of its own process group (the launcher starts each so), carries the deployment
 * (`envCarries`), and has the manifest's launcher in `BATON_LAUNCHER_PID` and a `RANK` of the
 * world that the manifest does not list; its parent does not carry the deployment (it was the
 * launcher, now gone), which tells it from a child of a rank that left the rank's group with
 * `setsid` and kept its environment. A parent running its exit (`exiting`), whose environment
 * reads empty whatever it was, is taken to carry the deployment (a rank ending: its `setsid`
 * child is not named a rank) unless it is the manifest's launcher, killed as it started its
 * ranks. A launcher of the same name whose pid is another (one that took the name over)
 * starts ranks of its own that are never taken for these.
 *
 * @example
 * ```ts
 * const ranks = [...manifest.ranks, ...unrecordedRanks(id, manifest, procs)];
 * ```
 */
export function unrecordedRanks(
  id: DeploymentIdentity,
  manifest: Manifest,
  procs: Pick<Procs, "list" | "inspect" | "environ">,
): ManifestRank[] {
  const recorded = new Set(manifest.ranks.map(({ rank }) => rank));
  // Every rank recorded (the usual case): no scan of the table.
  if (recorded.size >= manifest.worldSize) return [];
  const launcher = String(manifest.launcher.pid);
  const parentCarries = (pid: number) => {
    const listed = procs.inspect(pid);
    const seen = listed === undefined ? undefined : withEnviron(procs, listed);
    if (seen === undefined || !isAlive(seen.info)) return false;
    if (seen.info.exiting === true) return pid !== manifest.launcher.pid;
    return envCarries(seen.env, id);
  };
  return procs.list().flatMap((info) => {
    if (!isAlive(info) || info.pgid !== info.pid) return [];
    const env = procs.environ(info.pid);
    if (!envCarries(env, id) || env?.BATON_LAUNCHER_PID !== launcher) return [];
    const rank = Number(env.RANK);
    const isRank = /^\d+$/.test(env.RANK ?? "") && rank < manifest.worldSize;
    if (!isRank || recorded.has(rank) || parentCarries(info.ppid)) return [];
    const localRank = Number(env.LOCAL_RANK);
    return [
      {
        rank,
        localRank: /^\d+$/.test(env.LOCAL_RANK ?? "") ? localRank : rank,
        host: "local",
        pid: info.pid,
        pgid: info.pgid,
      },
    ];
  });
}
