import type { Logger } from "pino";
import type { InspectionEvent } from "xstate";
import { RankGroupError } from "../errors.ts";
import type { TeardownTimeouts } from "../machines/teardown.ts";
import type { Overrides } from "../overrides.ts";
import { type DeploymentPaths, deploymentPaths } from "../rank/deploymentPaths.ts";
import { leaseHolder } from "../rank/leaseFormat.ts";
import { checkReapRemoteSiteOptions } from "./checkReapRemoteSiteOptions.ts";
import { checkRemoteSiteOptions } from "./checkRemoteSiteOptions.ts";
import { type Cleared, clearDeployment } from "./clearDeployment.ts";
import type { FolderNotRemoved } from "./folderNotRemoved.ts";
import { inFlightLimit } from "./inFlightLimit.ts";
import { type HeldLease, holderOf, holdLease } from "./launcherLease.ts";
import { removeFolderAndLeftEmpty } from "./leftEmptyFolders.ts";
import { markerPids } from "./markerPids.ts";
import { claimMirroredLease, heldByAnother } from "./mirroredLease.ts";
import type { Clock, Files, Procs } from "./ports.ts";
import { remoteFiles } from "./remoteFiles.ts";
import { type RemoteProcs, remoteProcs } from "./remoteProcs.ts";
import { type RemoteRankHandle, type RemoteRankOptions, spawnRemoteRank } from "./remoteRank.ts";
import { remoteStateDir } from "./remoteStateDir.ts";
import { tearDownRemote } from "./remoteTeardown.ts";
import { type SshHost, type SshHostOptions, sshHost } from "./sshHost.ts";
import type { SshTarget } from "./sshTarget.ts";
import type { TeardownReport } from "./tearDown.ts";

/** What `openRemoteSite` takes: the host, the deployment, and its lease and state dir there. */
export interface RemoteSiteOptions {
  target: SshTarget;
  deployment: string;
  /** How to reach the host (ssh_config file, extra options, timeouts). */
  ssh?: SshHostOptions | undefined;
  /** The root state dir on the host: absolute, or under the remote home (default `.baton/run`). */
  stateDir?: string | undefined;
  /** The launcher's pid and instance token, written into the mirrored lease. */
  launcherPid: number;
  token: string;
  /** The launcher's machine (`os.hostname()`), written into the mirrored lease and named by refusals. */
  launcherHost?: string | undefined;
  /**
   * The launcher's machine's process table: a mirrored lease there that names this machine
   * is judged by its pid too (`claimMirroredLease`).
   */
  procs: Pick<Procs, "inspect">;
  /** The lease's staleness, as for local ranks (`BATON_LEASE_STALE_MS`). */
  leaseStaleMs: number;
  clock: Clock;
  logger?: Logger | undefined;
  /** Called once when the mirrored lease could not be renewed for too long (`holdLease`'s `onLost`). */
  onLeaseLost?: ((reason: string) => void) | undefined;
  /** Sees the mirrored lease's watchdog machine. */
  inspect?: ((event: InspectionEvent) => void) | undefined;
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
  tearDown(
    pids: number[],
    timeouts?: Overrides<TeardownTimeouts>,
    hurry?: AbortSignal,
  ): Promise<TeardownReport>;
  /**
   * Stops renewing the lease; with `clear` (after a verified teardown) first removes the
   * deployment's control files there, the lease last and renewed until then, and then its
   * folder, left empty (no rank's log is written on the host), with the empty folders earlier
   * versions left in the state dir in that same ssh call (`removeFolderAndLeftEmpty`); then
   * closes the ssh host. Resolves with the folder when its removal failed though it was empty
   * (the clear is done all the same: nothing of the deployment is left in it). When another
   * launcher took the mirrored lease over, the clear removes nothing there and warns instead.
   */
  close(options?: { clear?: boolean | undefined }): Promise<FolderNotRemoved | undefined>;
}

/**
 * Opens one remote host for a deployment, as a launcher needs it: the ssh host (multiplexed),
 * the remote state dir (`~/.baton/run` unless told), the deployment's name claimed there
 * (`claimMirroredLease`: refused with `DEPLOYMENT_BLOCKED` while another launcher, one with
 * another local state dir, holds it in that state dir, and with `HostNamedTwice` when this
 * launcher's own site, opened under another name, does; then the control files of an earlier
 * run of the same name removed), and the launcher's lease mirrored there and renewed over ssh
 * every `leaseStaleMs / 3`, so that remote ranks (and their guards) can tell a live launcher
 * from a dead or cut-off one. Options it cannot take are a `ConfigError` before the host is
 * reached (`checkRemoteSiteOptions`, and `sshHost`'s check of the target and `ssh`).
 *
 * @example
 * ```ts
 * const site = await openRemoteSite({ target, deployment, launcherPid: process.pid, token,
 *   leaseStaleMs: 30_000, clock: nodeClock(), procs: nodeProcs() });
 * const rank = await site.spawnRank({ argv: ["python3", "serve.py"], env: rankEnv, logFile });
 * // … readStateFile(site.files, MARKER_FORMAT, site.paths.marker(1)) for the barrier …
 * await site.tearDown([rank.pid]);
 * await site.close({ clear: true });
 * ```
 */
export async function openRemoteSite(options: RemoteSiteOptions): Promise<RemoteSite> {
  checkRemoteSiteOptions(options);
  const { deployment } = options;
  const host = sshHost(options.target, options.ssh);
  let lease: HeldLease | undefined;
  try {
    const files = boundedFiles(remoteFiles(host), inFlightLimit(SESSIONS_AT_ONCE));
    const startups = inFlightLimit(SESSIONS_AT_ONCE);
    const table = remoteProcs(host);
    const stateDir = await remoteStateDir(host, options.stateDir);
    const paths = deploymentPaths(stateDir, deployment);
    const mirrored = {
      files,
      clock: options.clock,
      path: paths.lease,
      deployment,
      pid: options.launcherPid,
      token: options.token,
      launcherHost: options.launcherHost,
      staleAfterMs: options.leaseStaleMs,
      logger: options.logger,
    };
    await claimMirroredLease({
      ...mirrored,
      host: options.target.spec,
      stateDir,
      procs: options.procs,
    });
    // What an earlier run of this name left there (markers, acks, a cancel file).
    await clearDeployment(files, paths, { keepLease: true });
    lease = await holdLease({
      ...mirrored,
      onLost: options.onLeaseLost,
      inspect: options.inspect,
    });
    const held = lease;
    return {
      host,
      files,
      table,
      stateDir,
      paths,
      spawnRank: (rank) =>
        startups(() =>
          spawnRemoteRank({
            ...rank,
            host,
            env: { ...rank.env, BATON_STATE_DIR: stateDir },
            lease: { path: paths.lease, staleAfterMs: options.leaseStaleMs },
          }),
        ),
      tearDown: (pids, timeouts, hurry) =>
        tearDownDeploymentThere({
          ...options,
          heldByAnother: async () => holderOf(await held.takenBy(), paths.lease),
          stateDir,
          files,
          table,
          paths,
          pids,
          timeouts,
          hurry,
        }),
      async close({ clear = false } = {}) {
        try {
          if (!clear) {
            await held.release();
            return undefined;
          }
          const { takenBy, takenDuring, folderNotRemoved } = await clearThere(
            host,
            files,
            stateDir,
            paths,
            { lease: held, ...options },
          );
          const other = takenBy ?? takenDuring;
          if (other !== undefined) {
            options.logger?.warn(
              { deployment, host: options.target.spec, otherPid: other.pid },
              `${options.target.spec}: another launcher (${leaseHolder(other, "its own machine")}) took over deployment ${deployment} in the state dir ${stateDir} there after this launcher's mirrored lease went stale: ${takenBy !== undefined ? "its lease, markers and cancel file there were left as they are" : "its lease there was kept, but the markers and cancel file removed before it may have been its own"}`,
            );
          }
          return folderNotRemoved;
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

/**
 * How many file calls (and, separately, rank start-ups) of one site run at once. File calls
 * share one multiplexed connection, on which sshd serves at most `MaxSessions` (10 by
 * default) sessions; each rank start-up is a connection of its own, and sshd drops new
 * connections beyond `MaxStartups` (10 unauthenticated by default). Markers, acks, cancel
 * files and their removal are read and written in parallel per rank, so a group of many ranks
 * on one host would otherwise exceed both.
 */
const SESSIONS_AT_ONCE = 4;

/** The Files port with every call through `limit`. */
function boundedFiles(files: Files, limit: ReturnType<typeof inFlightLimit>): Files {
  return {
    writeAtomic: (path, data, mode) => limit(() => files.writeAtomic(path, data, mode)),
    createExclusive: (path, data, mode, options) =>
      limit(() => files.createExclusive(path, data, mode, options)),
    read: (path) => limit(() => files.read(path)),
    readMany: (paths) => limit(() => files.readMany(paths)),
    list: (dir) => limit(() => files.list(dir)),
    modifiedAt: (path) => limit(() => files.modifiedAt(path)),
    remove: (path) => limit(() => files.remove(path)),
    removeDir: (dir) => limit(() => files.removeDir(dir)),
    owner: (path) => limit(() => files.owner(path)),
    sameFile: (a, b) => limit(() => files.sameFile(a, b)),
    mkdirp: (dir) => limit(() => files.mkdirp(dir)),
  };
}

/**
 * `clearDeployment` on the host, a site's mirrored `lease` renewed until the rest is gone (as
 * the launcher's own is locally), whose last call, the folder's `rmdir`, also removes the empty
 * folders earlier versions left in the state dir (`removeFolderAndLeftEmpty`, logged): no ssh
 * call more than the clear's own. Resolves with what `clearDeployment` does: the lease of a
 * launcher that took the name over there (nothing removed then), or the folder, named with its
 * host, when it was left empty and its `rmdir` failed.
 */
async function clearThere(
  host: SshHost,
  files: Files,
  stateDir: string,
  paths: DeploymentPaths,
  { lease, logger }: { lease?: HeldLease | undefined; logger?: Logger | undefined },
): Promise<Cleared> {
  const cleared = await clearDeployment(files, paths, {
    lease,
    async removeFolder(dir) {
      const { removed, notRemoved } = await removeFolderAndLeftEmpty(host, stateDir, dir);
      if (removed.length > 0) {
        logger?.info(
          { host: host.target.spec, stateDir, removed },
          "removed empty folders earlier launches left on the host",
        );
      }
      if (notRemoved !== undefined) throw new Error(notRemoved);
    },
  });
  const { folderNotRemoved } = cleared;
  return folderNotRemoved === undefined
    ? cleared
    : { folderNotRemoved: { ...folderNotRemoved, host: host.target.spec } };
}

/** What the reaper knows of one host's part of a dead launcher's deployment. */
export interface OrphanedSiteOptions {
  target: SshTarget;
  deployment: string;
  ssh?: SshHostOptions | undefined;
  /** The host's absolute root state dir, as the manifest recorded it. */
  stateDir: string;
  /** The manifest's remote pids of the deployment's ranks on that host. */
  pids: number[];
  /**
   * The dead launcher's instance token, as its manifest recorded it: a mirrored lease with
   * another, still renewed, is another launcher's (undefined: any lease still renewed is).
   */
  launcherToken?: string | undefined;
  clock: Clock;
  logger?: Logger | undefined;
  timeouts?: Overrides<TeardownTimeouts> | undefined;
  /** Once aborted, no more waiting for TERM (`HURRY`). */
  hurry?: AbortSignal | undefined;
  /** Told of the deployment's folder there when its clear left it empty and could not remove it. */
  onFolderNotRemoved?: ((folder: FolderNotRemoved) => void) | undefined;
}

/**
 * The reaper's part on one remote host: refused (`DEPLOYMENT_BLOCKED`, nothing signalled or
 * removed) while another launcher holds the deployment's name in that state dir
 * (`heldByAnother`: one with another local state dir, whose ranks there cannot be told from
 * the dead launcher's); else a verified teardown of a dead launcher's ranks there
 * (`tearDownRemote`, swept with the markers of the host's state dir); once verified, the
 * deployment's control files there go (the mirrored lease, markers, acks, cancel file), and
 * then its folder, left empty (the ranks' logs are on the launcher's machine), with the empty
 * folders earlier versions left in the state dir. Rejects with `TeardownError` or `RemoteHostError` (nothing verified: keep the
 * manifest). The ssh connection is closed either way. What it cannot take is refused first
 * (`checkReapRemoteSiteOptions`), with a `ConfigError`, before the host is asked.
 *
 * @example
 * ```ts
 * // a rank of a dead launcher's manifest, on an ssh host (so its stateDir is set)
 * await reapRemoteSite({ target, deployment, stateDir: rank.stateDir!, pids: [rank.pid],
 *   clock: nodeClock() });
 * ```
 */
export async function reapRemoteSite(options: OrphanedSiteOptions): Promise<TeardownReport> {
  checkReapRemoteSiteOptions(options);
  const host = sshHost(options.target, options.ssh);
  try {
    const files = remoteFiles(host);
    const paths = deploymentPaths(options.stateDir, options.deployment);
    const other = await heldByAnother(
      files,
      paths.lease,
      options.launcherToken,
      options.clock.now(),
    );
    if (other !== undefined) {
      const { clock, deployment, stateDir } = options;
      throw new RankGroupError(
        "DEPLOYMENT_BLOCKED",
        `${host.target.spec}: deployment ${deployment} in the state dir ${stateDir} there is held by another launcher (${leaseHolder(other, "its own machine")}, its lease ${paths.lease} renewed ${clock.now() - other.renewedAt} ms ago), one whose local state dir is not this one: its ranks there carry the name and state dir of the dead launcher's, so none was stopped and its files there stay. Reap again once that launch has ended`,
        deployment,
      );
    }
    const report = await tearDownDeploymentThere({
      ...options,
      files,
      table: remoteProcs(host),
      paths,
    });
    const { folderNotRemoved } = await clearThere(host, files, options.stateDir, paths, options);
    if (folderNotRemoved !== undefined) options.onFolderNotRemoved?.(folderNotRemoved);
    return report;
  } finally {
    await host.close();
  }
}

/** `tearDownRemote` for a deployment's ranks on one host, its markers swept. */
function tearDownDeploymentThere(options: {
  deployment: string;
  /** The host's root state dir: what its ranks carry as `BATON_STATE_DIR`. */
  stateDir: string;
  files: Files;
  table: RemoteProcs;
  paths: DeploymentPaths;
  pids: number[];
  clock: Clock;
  logger?: Logger | undefined;
  timeouts?: Overrides<TeardownTimeouts> | undefined;
  hurry?: AbortSignal | undefined;
  /** Who holds the name there now, if another launcher took it over (no sweep then). */
  heldByAnother?: (() => Promise<string | undefined>) | undefined;
}): Promise<TeardownReport> {
  const { files, paths } = options;
  const id = { deployment: options.deployment, stateDir: options.stateDir };
  return tearDownRemote(
    {
      ...id,
      pids: options.pids,
      sweepCandidates: () => markerPids(files, paths, id),
      heldByAnother: options.heldByAnother,
    },
    { table: options.table, clock: options.clock, logger: options.logger, hurry: options.hurry },
    options.timeouts,
  );
}
