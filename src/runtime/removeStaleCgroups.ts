import { basename } from "node:path";
import type { Logger } from "pino";
import { cgroupDeployment } from "../rank/deploymentCgroup.ts";
import { type DeploymentPaths, deploymentPaths } from "../rank/deploymentPaths.ts";
import { LEASE_STALE_MS } from "../rank/rankEnv.ts";
import { claimLease } from "./launcherLease.ts";
import type { Clock, Containment, Files, Procs } from "./ports.ts";

/**
 * How the token of a claim {@link removeStaleCgroups} holds begins: a launcher that finds the
 * name claimed so waits those few ms instead of giving up.
 */
export const REAPER_CLAIM = "reaper-";

/** An empty cgroup of a deployment that is gone, removed by {@link removeStaleCgroups}. */
export interface StaleCgroup {
  deployment: string;
  /** Its handle (on Linux its path), as the deployment's manifest named it. */
  cgroup: string;
}

/** What {@link removeStaleCgroups} reads and acts through. */
export interface StaleCgroupPorts {
  /** The resolved state dir whose deployments' cgroups are looked at. */
  stateDir: string;
  procs: Procs;
  files: Files;
  clock: Clock;
  /** This machine's name, written in the claim's lease. */
  host: string;
  logger?: Logger | undefined;
}

/**
 * Removes the empty cgroups that deployments of `stateDir` left and nobody will remove: the
 * cgroups of `Containment.list` named for this state dir (`cgroupDeployment`) with no process
 * in them, whose deployment has neither manifest nor lease. A verified teardown or reap
 * removes its cgroup itself, but it gives up after `RELEASE_WAIT_MS` while threads of a killed
 * process still leave it, or at once when a live process is in it; and a launcher killed
 * between making its cgroup and writing its manifest leaves one that no manifest names.
 *
 * A launch makes its cgroup after it claimed its lease, and keeps the lease until its cgroup
 * is released and its manifest removed; between making the cgroup and starting a rank in it,
 * the cgroup is empty. So each cgroup is removed under the deployment's own claim: its lease
 * created exclusively (`claimLease`), as a launcher claims the name, then the manifest checked
 * absent, then the cgroup removed, then the lease (and the deployment's directory when this
 * made it). A launcher that holds the name keeps its cgroup; one that comes during those few
 * ms waits for it (`REAPER_CLAIM` begins its token) and then goes on. A
 * populated cgroup is never removed (the kernel refuses, and it is not even tried): its
 * processes are a live deployment's, or ones a reap has still to stop. Nothing is done where
 * the state dir does not exist (a reap must not make it).
 *
 * @example
 * ```ts
 * const removed = await removeStaleCgroups({ stateDir: "/srv/run", procs, files, clock, logger });
 * // [{ deployment: "web", cgroup: "/sys/fs/cgroup/baton/web-3f2a9c01d4e5" }]
 * ```
 */
export async function removeStaleCgroups(ports: StaleCgroupPorts): Promise<StaleCgroup[]> {
  const { stateDir, procs, files, logger } = ports;
  const { containment } = procs;
  const candidates: StaleCgroup[] = [];
  for (const cgroup of containment?.list() ?? []) {
    const deployment = cgroupDeployment(basename(cgroup), stateDir);
    if (deployment !== undefined && containment?.members(cgroup)?.length === 0) {
      candidates.push({ deployment, cgroup });
    }
  }
  if (containment === undefined || candidates.length === 0) return [];
  if ((await files.owner(stateDir)) === undefined) return [];
  const present = new Set(await files.list(stateDir));
  const removed: StaleCgroup[] = [];
  for (const candidate of candidates) {
    const paths = deploymentPaths(stateDir, candidate.deployment);
    try {
      if (await removeUnclaimed(candidate, paths, containment, ports, present)) {
        removed.push(candidate);
      }
    } catch (error) {
      logger?.warn(
        { ...candidate, err: error },
        `the empty cgroup of deployment ${candidate.deployment}, which is gone, was not removed`,
      );
    }
  }
  return removed;
}

/** Removes `cgroup` under its deployment's claim; false when it is not ours to remove (yet). */
async function removeUnclaimed(
  { deployment, cgroup }: StaleCgroup,
  paths: DeploymentPaths,
  containment: Containment,
  { procs, files, clock, host, logger }: StaleCgroupPorts,
  present: ReadonlySet<string>,
): Promise<boolean> {
  const held = await claimLease({
    files,
    clock,
    path: paths.lease,
    deployment,
    pid: procs.selfPid,
    token: `${REAPER_CLAIM}${procs.selfPid}-${clock.now()}`,
    launcherHost: host,
    staleAfterMs: LEASE_STALE_MS,
  });
  if (held !== undefined) {
    // A launcher holds the name (it may be about to start its ranks there), or its stale
    // lease awaits a reap, which releases the cgroup once its teardown is verified.
    logger?.debug({ deployment, cgroup }, "empty cgroup kept: its deployment has a lease");
    return false;
  }
  try {
    // A manifest's cgroup is released by the reap of that manifest, once verified.
    if ((await files.read(paths.manifest)) !== undefined) return false;
    if (!containment.remove(cgroup)) {
      logger?.info(
        { deployment, cgroup, living: containment.members(cgroup) ?? [] },
        `cgroup of deployment ${deployment} not removed: a process is in it (one moved in since, or the last threads of a killed one still leaving); a later reap of this state dir removes it once it is empty`,
      );
      return false;
    }
    logger?.info(
      { deployment, cgroup },
      `removed the empty cgroup of deployment ${deployment}, left by a launch or reap that is over`,
    );
    return true;
  } finally {
    await files.remove(paths.lease);
    if (!present.has(deployment)) await files.removeDir(paths.dir);
  }
}
