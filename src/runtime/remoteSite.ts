import type { Logger } from "pino";
import type { TeardownTimeouts } from "../machines/teardown.ts";
import { type DeploymentPaths, deploymentPaths } from "../rank/deploymentPaths.ts";
import { clearDeployment } from "./clearDeployment.ts";
import { type HeldLease, holdLease } from "./launcherLease.ts";
import { markerPids } from "./markerPids.ts";
import type { Clock, Files } from "./ports.ts";
import { remoteFiles } from "./remoteFiles.ts";
import { type RemoteProcs, remoteProcs } from "./remoteProcs.ts";
import { type RemoteRankHandle, type RemoteRankOptions, spawnRemoteRank } from "./remoteRank.ts";
import { remoteStateDir } from "./remoteStateDir.ts";
import { tearDownRemote } from "./remoteTeardown.ts";
import { type SshHost, type SshHostOptions, sshHost } from "./sshHost.ts";
import type { SshTarget } from "./sshTarget.ts";
import type { TeardownReport } from "./tearDown.ts";

export interface RemoteSiteOptions {
  target: SshTarget;
  deployment: string;
  /** How to reach the host (ssh_config file, extra options, timeouts). */
  ssh?: SshHostOptions;
  /** The root state dir on the host: absolute, or under the remote home (default `.baton/run`). */
  stateDir?: string;
  /** The launcher's pid and instance token, written into the mirrored lease. */
  launcherPid: number;
  token: string;
  /** The lease's staleness, as for local ranks (`BATON_LEASE_STALE_MS`). */
  leaseStaleMs: number;
  clock: Clock;
  logger?: Logger;
}

/** What a rank on the site needs beyond what the site knows. */
export type SiteRankOptions = Omit<RemoteRankOptions, "host" | "lease">;

/** The part of one deployment that lives on one remote host. */
export interface RemoteSite {
  readonly host: SshHost;
  /** The Files port on the host: read markers and acks, write cancel files there. */
  readonly files: Files;
  readonly table: RemoteProcs;
  /** The root state dir `S` on the host (what its ranks get as `BATON_STATE_DIR`). */
  readonly stateDir: string;
  /** The deployment's files on the host. */
  readonly paths: DeploymentPaths;
  /**
   * Starts one rank there (see `spawnRemoteRank`); `BATON_STATE_DIR` is set to the site's
   * state dir and the rank's guard watches the mirrored lease.
   */
  spawnRank(options: SiteRankOptions): Promise<RemoteRankHandle>;
  /** Verified teardown of the deployment on the host (`tearDownRemote`), markers swept. */
  tearDown(pids: number[], timeouts?: Partial<TeardownTimeouts>): Promise<TeardownReport>;
  /**
   * Stops renewing the lease; with `clear` (after a verified teardown) removes the
   * deployment's control files there (logs stay); then closes the ssh host.
   */
  close(options?: { clear?: boolean }): Promise<void>;
}

/**
 * Opens one remote host for a deployment, as a launcher needs it: the ssh host (multiplexed),
 * the remote state dir (`~/.baton/run` unless told), the deployment's directory there with
 * the control files of an earlier run of the same name removed, and the launcher's lease
 * mirrored there and renewed over ssh every `leaseStaleMs / 3`, so that remote ranks (and
 * their guards) can tell a live launcher from a dead or cut-off one.
 *
 * @example
 * ```ts
 * const site = await openRemoteSite({ target, deployment, launcherPid: process.pid, token,
 *   leaseStaleMs: 30_000, clock: nodeClock() });
 * const rank = await site.spawnRank({ argv: ["python3", "serve.py"], env: rankEnv, logFile });
 * // … readStateFile(site.files, MARKER_FORMAT, site.paths.marker(1)) for the barrier …
 * await site.tearDown([rank.pid]);
 * await site.close({ clear: true });
 * ```
 */
export async function openRemoteSite(options: RemoteSiteOptions): Promise<RemoteSite> {
  const { deployment } = options;
  const host = sshHost(options.target, options.ssh);
  let lease: HeldLease | undefined;
  try {
    const files = remoteFiles(host);
    const table = remoteProcs(host);
    const stateDir = await remoteStateDir(host, options.stateDir);
    const paths = deploymentPaths(stateDir, deployment);
    await files.mkdirp(paths.dir);
    await clearDeployment(files, paths);
    lease = await holdLease({
      files,
      clock: options.clock,
      path: paths.lease,
      deployment,
      pid: options.launcherPid,
      token: options.token,
      staleAfterMs: options.leaseStaleMs,
      logger: options.logger,
    });
    const held = lease;
    return {
      host,
      files,
      table,
      stateDir,
      paths,
      spawnRank: (rank) =>
        spawnRemoteRank({
          ...rank,
          host,
          env: { ...rank.env, BATON_STATE_DIR: stateDir },
          lease: { path: paths.lease, staleAfterMs: options.leaseStaleMs },
        }),
      tearDown: (pids, timeouts) =>
        tearDownRemote(
          { deployment, pids, sweepCandidates: () => markerPids(files, paths, deployment) },
          { table, clock: options.clock, logger: options.logger },
          timeouts,
        ),
      async close({ clear = false } = {}) {
        try {
          await held.release();
          if (clear) await clearDeployment(files, paths);
        } finally {
          await host.close();
        }
      },
    };
  } catch (error) {
    await lease?.release();
    await host.close();
    throw error;
  }
}
