import { hostname } from "node:os";
import { resolve } from "node:path";
import type { Logger } from "pino";
import { ConfigError } from "../errors.ts";
import {
  carriesDeployment,
  type DeploymentIdentity,
  envCarries,
} from "../machines/carriesDeployment.ts";
import { programName } from "../machines/programName.ts";
import type { Overrides } from "../overrides.ts";
import { type DeploymentPaths, deploymentPaths, isDeploymentId } from "../rank/deploymentPaths.ts";
import { isAlive, leaseLauncherGone, manifestLauncherGone } from "../rank/launcherWatch.ts";
import { isLeaseStale, LEASE_FORMAT, type Lease } from "../rank/leaseFormat.ts";
import { MANIFEST_FORMAT, type Manifest, type ManifestRank } from "../rank/manifestFormat.ts";
import { type LeftRunning, OUTCOME_FORMAT, type Outcome } from "../rank/outcomeFormat.ts";
import { pidReused } from "../rank/pidReused.ts";
import { LEASE_STALE_MS } from "../rank/rankEnv.ts";
import { rankList } from "../rank/rankList.ts";
import { encodeStateFile, readStateFile } from "../rank/stateFile.ts";
import { checkReapOptions } from "./checkReapOptions.ts";
import { clearDeployment, controlFiles, untouchedMs } from "./clearDeployment.ts";
import { isPermissionDenied, ownerName } from "./fileOwner.ts";
import { type FolderNotRemoved, folderNotRemovedLine } from "./folderNotRemoved.ts";
import { launchStateDir } from "./launchStateDir.ts";
import { leftRunningIn } from "./leftRunningIn.ts";
import { markerPids } from "./markerPids.ts";
import { nodeClock } from "./nodeClock.ts";
import { nodeFiles } from "./nodeFiles.ts";
import { nodeProcs } from "./nodeProcs.ts";
import type { Clock, Files, ProcInfo, Procs } from "./ports.ts";
import { releaseCgroup } from "./releaseCgroup.ts";
import { reapRemoteSite } from "./remoteSite.ts";
import { removeStaleCgroups, type StaleCgroup } from "./removeStaleCgroups.ts";
import type { SshHostOptions } from "./sshHost.ts";
import { parseRankHost, type SshTarget } from "./sshTarget.ts";
import {
  type ReportedOther,
  type TeardownReport,
  type TeardownTarget,
  type TeardownTimeouts,
  tearDown,
} from "./tearDown.ts";
import { tearDownAcrossHosts } from "./tearDownAcrossHosts.ts";
import { unrecordedRanks } from "./unrecordedRanks.ts";

/** What `reapDeployments` takes: the state dir to clean up, and how. */
export interface ReapOptions {
  /**
   * The root state dir `S` (resolved against the working directory): with a deployment's
   * name, what its ranks carry (`BATON_STATE_DIR`), so a deployment of the same name in
   * another state dir is never touched.
   */
  stateDir: string;
  /** The process table (default: this machine's, `nodeProcs()`). */
  procs?: Procs | undefined;
  /** The file system (default: Node's, `nodeFiles()`). */
  files?: Files | undefined;
  /** Time (default: Node's, `nodeClock()`). */
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  teardown?: Overrides<TeardownTimeouts> | undefined;
  /** This machine's name, compared with the manifests' (default `os.hostname()`). */
  host?: string | undefined;
  /** How to reach the ssh hosts of remote ranks (ssh_config file, options, timeouts). */
  ssh?: SshHostOptions | undefined;
  /**
   * Once aborted, the teardowns under way and to come wait no more for TERM: KILL at once,
   * still verified (a second Ctrl-C to a launch that reaps).
   */
  hurry?: AbortSignal | undefined;
}

/** What one pass of the reaper found and did, per deployment with a manifest or a stale lease. */
export interface ReapReport {
  /** Deployments whose launcher was dead: torn down, verified, their files removed. */
  reaped: {
    deployment: string;
    why: string;
    /** The local ranks still running as the reap began, which it stopped (by rank number). */
    stopped: number[];
    /**
     * What the ranks left running and the reap stopped, here and on the ssh hosts: as a
     * launch's teardown names them (`leftRunningIn`), each by pid, program (`argv[0]`) and rank.
     */
    leftRunning: LeftRunning[];
    /**
     * Its folders (here, on ssh hosts) that the clear left empty and could not remove, each
     * logged as a warning: the reap is done all the same. Usually none.
     */
    foldersNotRemoved: FolderNotRemoved[];
    teardown: TeardownReport;
  }[];
  /** Deployments whose launcher is alive: left alone. */
  live: { deployment: string; pid: number }[];
  /** Deployments that could not be reaped: their manifest stays and blocks their name. */
  failed: { deployment: string; error: Error }[];
  /** Deployments launched on another machine (a shared state dir): not this reaper's. */
  foreign: { deployment: string; host: string }[];
  /**
   * Deployments of another user (a shared state dir), whose control files this user may not
   * read: not this reaper's either (their ranks are not this user's to signal). `owner` is
   * that user's name, when it can be told.
   */
  otherUsers: { deployment: string; owner: string | undefined }[];
  /**
   * Deployments with a fresh lease and no manifest whose launcher may live: one starting (it
   * writes its manifest next), or, on another machine, one that died before it wrote it.
   * Left alone; a reap once the lease is stale, in `staleInMs`, clears it. `host` names the
   * launcher's machine when the lease names another one (a shared state dir); undefined for
   * this machine's, or a lease naming none. A lease of this machine whose launcher's pid is
   * gone here (dead, a zombie, or another program's now) is reaped at once instead.
   */
  waiting: {
    deployment: string;
    pid: number;
    host: string | undefined;
    staleInMs: number;
  }[];
  /**
   * Empty cgroups of this state dir's deployments that are gone (neither manifest nor lease),
   * removed (`removeStaleCgroups`): left by a teardown whose removal of its cgroup gave up, or
   * by a launcher killed before it wrote its manifest.
   */
  cgroups: StaleCgroup[];
}

/**
 * The orphan reaper (DESIGN §5), run before every launch and by `baton reap`. For each
 * deployment in the state dir with a manifest, it judges the launcher: alive when its pid is
 * a live process, the lease carries the manifest's pid and instance token, and the lease is
 * fresh. A dead launcher's deployment is torn down through `tearDown` (verified): its ranks'
 * process groups, but only groups whose every live member carries the deployment
 * (`carriesDeployment`); a group with a stranger in it was reused and is never signalled —
 * only the members that carry the deployment are, by pid. Then the marker sweep. A deployment
 * is its name in this state dir: a process of the same name whose `BATON_STATE_DIR` is
 * another state dir is never the reaper's, and a manifest whose launch recorded another state
 * dir (a symlink's other path, a moved directory) is refused (`failed`) rather than reaped
 * from here; a manifest of a launcher from before it recorded one is taken as this state
 * dir's. Ranks on ssh
 * hosts are torn down on their hosts at the same time (`reapRemoteSite`: by pid, each checked
 * there right before its signal, with the markers of that host's state dir). Success
 * removes the deployment's control files, there and here (logs stay); failure (including a
 * host that cannot be reached) keeps the manifest, which blocks launching that deployment's
 * name until a later reap succeeds. A deployment with a lease and no manifest is a launcher
 * that died before it wrote its manifest, so before any rank: once its lease is stale, or at
 * once when the lease names this machine and its launcher's pid is gone here (dead, or
 * another program's: `leaseLauncherGone`), it is reaped the same way (the teardown's scan
 * proves nothing carries the deployment), which
 * clears the lease `baton status` would otherwise show as orphaned for ever. So is one with
 * neither, once its control files (a first lease's temp file, markers left by a launcher
 * killed while clearing them) have been untouched for `LEASE_STALE_MS`. Last, the empty
 * cgroups of this state dir's deployments that have neither manifest nor lease any more are
 * removed (`removeStaleCgroups`, under each deployment's claim).
 *
 * @example
 * ```ts
 * const report = await reapDeployments({ stateDir: ".baton/run" });
 * for (const { deployment, error } of report.failed) console.error(deployment, error.message);
 * ```
 */
export async function reapDeployments(options: ReapOptions): Promise<ReapReport> {
  checkReapOptions(options);
  const files = options.files ?? nodeFiles();
  const procs = options.procs ?? nodeProcs();
  const clock = options.clock ?? nodeClock();
  const host = options.host ?? hostname();
  const stateDir = resolve(options.stateDir);
  const report: ReapReport = {
    reaped: [],
    live: [],
    failed: [],
    foreign: [],
    otherUsers: [],
    waiting: [],
    cgroups: [],
  };
  for (const deployment of await files.list(stateDir)) {
    if (!isDeploymentId(deployment)) continue;
    let id: DeploymentIdentity = { deployment, stateDir };
    const paths = deploymentPaths(stateDir, deployment);
    let manifest: Manifest | undefined;
    let lease: Lease | undefined;
    try {
      manifest = await readStateFile(files, MANIFEST_FORMAT, paths.manifest);
      lease = await readStateFile(files, LEASE_FORMAT, paths.lease).catch(() => undefined);
    } catch (error) {
      // A file of the user's beside the deployments, not a deployment directory.
      if ((error as NodeJS.ErrnoException).code === "ENOTDIR") continue;
      if (isPermissionDenied(error)) {
        // The file refused, else its directory: in a 0700 one, the file cannot even be looked at.
        const refused = (error as NodeJS.ErrnoException).path ?? paths.dir;
        const owner = (await ownerName(files, refused)) ?? (await ownerName(files, paths.dir));
        report.otherUsers.push({ deployment, owner });
        continue;
      }
      report.failed.push({ deployment, error: error as Error });
      continue;
    }
    let why: string | undefined;
    if (manifest === undefined) {
      // No manifest, no rank: a launcher writes its lease, then its manifest, then starts
      // ranks, and removes the manifest only after a verified teardown. A lease left alone
      // is a launcher that died before its manifest (or while clearing its files): reaped
      // once stale, or at once when it names this machine and its launcher is gone here (its
      // pid dead, or another program's: `leaseLauncherGone`, the rule of a claim).
      if (lease === undefined) why = await leftBehind(id, paths, { files, procs, clock });
      else if (isLeaseStale(lease, clock.now())) {
        why = `no manifest, and the lease of launcher pid ${lease.pid} was last renewed ${clock.now() - lease.renewedAt} ms ago (stale after ${lease.staleAfterMs} ms)`;
      } else {
        // Fresh: gone only when it names this machine and its pid is.
        const gone = leaseLauncherGone(lease, host, (pid) => procs.inspect(pid), clock.now());
        if (gone !== undefined) {
          why = `no manifest, and ${gone}: it died before it wrote its manifest, or as it removed its files`;
        } else {
          const staleInMs = lease.renewedAt + lease.staleAfterMs - clock.now();
          const elsewhere = lease.host === host ? undefined : lease.host;
          report.waiting.push({ deployment, pid: lease.pid, host: elsewhere, staleInMs });
        }
      }
      if (why === undefined) continue;
    } else {
      if (manifest.launcher.host !== host) {
        report.foreign.push({ deployment, host: manifest.launcher.host });
        continue;
      }
      why = manifestLauncherGone(
        manifest,
        lease,
        procs.inspect(manifest.launcher.pid),
        clock.now(),
      );
      if (why === undefined) {
        report.live.push({ deployment, pid: manifest.launcher.pid });
        continue;
      }
      const launchedIn = await launchStateDir(files, manifest, stateDir);
      if (launchedIn === undefined) {
        report.failed.push({
          deployment,
          error: otherStateDir(paths.manifest, manifest.stateDir!),
        });
        continue;
      }
      id = { deployment, stateDir: launchedIn };
    }
    // A launcher that just finished and relaunched this name wrote a new manifest or lease: not ours.
    const [current, currentLease] = await Promise.all([
      readStateFile(files, MANIFEST_FORMAT, paths.manifest).catch(() => undefined),
      readStateFile(files, LEASE_FORMAT, paths.lease).catch(() => undefined),
    ]);
    if (
      current?.launcher.token !== manifest?.launcher.token ||
      (manifest === undefined && currentLease?.token !== lease?.token)
    ) {
      continue;
    }
    // The ranks a launcher killed before it recorded them in its manifest are ranks all the
    // same: their groups are torn down, and they are reported and recorded as the others.
    if (manifest !== undefined) {
      manifest = {
        ...manifest,
        ranks: [...manifest.ranks, ...unrecordedRanks(id, manifest, procs)],
      };
    }
    const running = manifest === undefined ? [] : runningRanks(id, manifest, procs);
    // Ranks about to be signalled are news to whoever waits (a launch, `baton reap`): the
    // teardown may take their whole TERM grace, silent otherwise.
    if (running.length === 0)
      options.logger?.info({ deployment, why }, "reaping an orphaned deployment");
    else {
      options.logger?.warn(
        { deployment, why, ranks: running },
        `reaping orphaned deployment ${deployment}: stopping its ${rankList(running)}, which still run${running.length === 1 ? "s" : ""} (TERM, then KILL after the grace)`,
      );
    }
    try {
      const logger = options.logger !== undefined && { logger: options.logger };
      const localRanks = (manifest?.ranks ?? []).filter(({ host }) => host === "local");
      // A rank a launcher started and died before it recorded in its manifest wrote a marker.
      const rankPids = new Set([
        ...localRanks.map(({ pid }) => pid),
        // Unreadable, they name none: the sweep reads them again and says why.
        ...(await markerPids(files, paths, id).catch(() => [])),
      ]);
      /** The processes other than ranks that the teardowns target by pid, as each first was. */
      const strays = new Map<number, ReportedOther>();
      const foldersNotRemoved: FolderNotRemoved[] = [];
      const teardown = await tearDownAcrossHosts(
        () => {
          const { target, processes } = reapTarget(id, manifest, procs, () =>
            markerPids(files, paths, id, procs),
          );
          for (const stray of strayProcesses(processes, rankPids, procs)) {
            if (!strays.has(stray.pid)) strays.set(stray.pid, stray);
          }
          return tearDown(
            target,
            { procs, clock, ...logger, hurry: options.hurry },
            options.teardown,
          );
        },
        remoteSites(manifest?.ranks ?? []).map(
          ({ host, stateDir, pids }) =>
            () =>
              reapRemoteSite({
                target: host,
                deployment,
                stateDir,
                pids,
                launcherToken: manifest?.launcher.token,
                clock,
                ...logger,
                ...(options.ssh !== undefined && { ssh: options.ssh }),
                ...(options.teardown !== undefined && { timeouts: options.teardown }),
                hurry: options.hurry,
                onFolderNotRemoved: (folder) => foldersNotRemoved.push(folder),
              }),
        ),
      );
      if (manifest?.cgroup !== undefined) {
        await releaseCgroup(procs, clock, manifest.cgroup, options.logger);
      }
      const leftRunning = leftRunningIn(
        [
          ...[...strays.values()].filter(({ pid }) => teardown.stopped.includes(pid)),
          ...teardown.others,
        ],
        localRanks.map(({ rank, pgid, pid }) => ({
          rank,
          pgid,
          stopped: teardown.stopped.includes(pid),
        })),
      );
      for (const { rank, ...left } of leftRunning) {
        options.logger?.info(
          { deployment, rank, ...left },
          `the reap stopped a process ${rank === undefined ? "the ranks" : `rank ${rank}`} left running`,
        );
      }
      if (manifest !== undefined) {
        const reaped = { why, at: clock.now(), running, leftRunning };
        await recordReaped(files, paths, manifest, reaped).catch((error: unknown) => {
          options.logger?.warn({ deployment, err: error }, "outcome not recorded");
        });
      }
      const { folderNotRemoved } = await clearDeployment(files, paths);
      if (folderNotRemoved !== undefined) foldersNotRemoved.push(folderNotRemoved);
      for (const folder of foldersNotRemoved) {
        options.logger?.warn({ deployment, ...folder }, folderNotRemovedLine(folder));
      }
      report.reaped.push({
        deployment,
        why,
        stopped: running,
        leftRunning,
        foldersNotRemoved,
        teardown,
      });
    } catch (error) {
      report.failed.push({ deployment, error: error as Error });
    }
  }
  report.cgroups = await removeStaleCgroups({
    stateDir,
    procs,
    files,
    clock,
    host,
    logger: options.logger,
  });
  return report;
}

/**
 * Why a deployment with neither manifest nor lease still needs a reap, or undefined when it
 * does not. A live launcher always has one of the two, except while it writes its first lease
 * (a temp file, for milliseconds, before any rank) or clears its files after a verified
 * teardown (no rank left). So a rank that a marker names and that still carries the
 * deployment is an orphan, reaped at once; and control files with neither (the temp file of
 * a first lease its launcher died writing, markers a launcher killed while clearing left) are
 * leftovers once none has been touched for {@link LEASE_STALE_MS}, long enough for a first
 * write on a slow disk.
 */
async function leftBehind(
  id: DeploymentIdentity,
  paths: DeploymentPaths,
  { files, procs, clock }: { files: Files; procs: Procs; clock: Clock },
): Promise<string | undefined> {
  const names = controlFiles(paths, await files.list(paths.dir));
  if (names.length === 0) return undefined;
  const orphans = (await markerPids(files, paths, id, procs)).filter((pid) => {
    const info = procs.inspect(pid);
    return isAlive(info) && carriesDeployment(info!.argv, procs.environ(pid), id);
  });
  if (orphans.length > 0) {
    return `no manifest and no lease, but rank pid${orphans.length === 1 ? "" : "s"} ${orphans.join(", ")} still run${orphans.length === 1 ? "s" : ""}`;
  }
  const untouched = await untouchedMs(files, paths.dir, names, clock.now());
  if (untouched === undefined || untouched <= LEASE_STALE_MS) return undefined;
  return `no manifest and no lease, and its control files (${names.join(", ")}) untouched for ${untouched} ms: its launcher died writing its first lease or clearing its files`;
}

/**
 * The manifest's local ranks still running as the reap begins (alive, carrying the
 * deployment, and not started after the manifest recorded them): the ranks the reap stops,
 * rather than ones that had exited on their own.
 */
function runningRanks(id: DeploymentIdentity, manifest: Manifest, procs: Procs): number[] {
  return manifest.ranks
    .filter(({ host, pid }) => {
      const info = procs.inspect(pid);
      return (
        host === "local" &&
        isAlive(info) &&
        carriesDeployment(info!.argv, procs.environ(pid), id) &&
        !pidReused(procs, info, id, manifest.startedAt)
      );
    })
    .map(({ rank }) => rank);
}

/**
 * The processes among the teardown's targets by pid (whatever carries the deployment, as
 * `reapTarget` read them from the process table) that are not ranks, each as it was then,
 * before any signal: its group, its program (`argv[0]`, without the arguments, which may hold
 * secrets) and the `RANK` of its environment (read for one found by its cgroup alone). They
 * are not read again: the table was read in the same turn of the event loop, and a pid
 * reused since is the teardown's to check, which it does before each signal.
 */
function strayProcesses(
  targets: readonly TargetProcess[],
  rankPids: ReadonlySet<number>,
  procs: Procs,
): ReportedOther[] {
  return targets.flatMap(({ info, environ }) => {
    if (rankPids.has(info.pid)) return [];
    const rank = (environ ?? procs.environ(info.pid))?.RANK;
    return [
      {
        pid: info.pid,
        pgid: info.pgid,
        program: programName(info),
        ...(rank !== undefined && /^\d+$/.test(rank) && { rank: Number(rank) }),
        swept: false,
      },
    ];
  });
}

/** A process `reapTarget` targets by pid, as it read it: its entry and, if read, its environment. */
interface TargetProcess {
  info: ProcInfo;
  environ?: Record<string, string> | undefined;
}

/**
 * Records in the deployment's outcome record (`outcome.json`) that it was reaped (`at`), and
 * why: the record its launcher kept (the exits it learned before it died), else one made from
 * the manifest, whose ranks' exits nobody learned; the ranks that were still `running` as the
 * reap began are marked `reaped`, and what the ranks left running that the reap stopped is
 * `leftRunning`, written even when empty: a reaped record without it is an older baton's,
 * which did not record it. A record of the manifest's launcher that already says how
 * the deployment ended (the launcher died after its verified teardown, before it removed its
 * manifest) is kept as it is.
 */
async function recordReaped(
  files: Files,
  paths: DeploymentPaths,
  manifest: Manifest,
  {
    why,
    at,
    running,
    leftRunning,
  }: { why: string; at: number; running: readonly number[]; leftRunning: LeftRunning[] },
): Promise<void> {
  const kept = await readStateFile(files, OUTCOME_FORMAT, paths.outcome).catch(() => undefined);
  const ours = kept?.launcher.token === manifest.launcher.token ? kept : undefined;
  if (ours?.ended !== undefined) return;
  const outcome: Outcome = ours ?? {
    deployment: manifest.deployment,
    launcher: { pid: manifest.launcher.pid, token: manifest.launcher.token },
    worldSize: manifest.worldSize,
    argv: manifest.argv,
    startedAt: manifest.startedAt,
    ranks: manifest.ranks.map(({ rank, host, pid }) => ({ rank, host, pid })),
  };
  const ranks = outcome.ranks.map((rank) =>
    rank.exit === undefined && running.includes(rank.rank) ? { ...rank, reaped: true } : rank,
  );
  const ended = { at, status: "reaped" as const, reason: why, leftRunning };
  await files.writeAtomic(
    paths.outcome,
    encodeStateFile(OUTCOME_FORMAT, { ...outcome, ranks, ended }),
  );
}

/**
 * A manifest whose launcher gave its ranks another state dir than the one it is in (not the
 * same directory by another path, which `launchStateDir` takes: one moved or copied since).
 * Its ranks carry that state dir, so from here they could not be told from a deployment of
 * the same name elsewhere.
 */
function otherStateDir(manifest: string, launchedIn: string): ConfigError {
  return new ConfigError(
    `${manifest} was written by a launch in the state dir ${launchedIn}, which its ranks carry (BATON_STATE_DIR): reap it from there (\`baton reap --state-dir ${launchedIn}\`), or, once none of its processes runs, remove its directory`,
  );
}

/** The manifest's ranks on ssh hosts, by host: its state dir there and the ranks' pids. */
function remoteSites(ranks: readonly ManifestRank[]) {
  const sites = new Map<string, { host: SshTarget; stateDir: string; pids: number[] }>();
  for (const rank of ranks) {
    if (rank.host === "local" || rank.stateDir === undefined) continue;
    const host = parseRankHost(rank.host);
    if (host.kind !== "ssh") continue;
    const key = `${host.spec} ${rank.stateDir}`;
    const site = sites.get(key) ?? { host, stateDir: rank.stateDir, pids: [] };
    site.pids.push(rank.pid);
    sites.set(key, site);
  }
  return [...sites.values()];
}

/**
 * What to tear down for an orphaned deployment: the groups of its manifest's local ranks whose
 * every live member carries the deployment (a group with a stranger in it, a reused pgid, is
 * forbidden, and so is a group whose leader started after the manifest recorded its rank:
 * `pidReused`), and by pid every live process whose environment carries it (`envCarries`) or
 * that is in the manifest's cgroup (which counts as carrying the deployment for the groups).
 */
function reapTarget(
  id: DeploymentIdentity,
  manifest: Manifest | undefined,
  procs: Procs,
  sweepCandidates: () => Promise<number[]>,
): { target: TeardownTarget; processes: TargetProcess[] } {
  const cgroup = manifest?.cgroup;
  const contained = new Set(cgroup === undefined ? [] : (procs.containment?.members(cgroup) ?? []));
  const carries = (pid: number, argv: string[]) =>
    contained.has(pid) || carriesDeployment(argv, procs.environ(pid), id);
  const table = procs.list().filter(isAlive);
  const groups: number[] = [];
  const processes: TargetProcess[] = [];
  const forbiddenGroups = new Set<number>();
  for (const rank of manifest?.ranks ?? []) {
    if (rank.host !== "local") continue;
    const leader = table.find((info) => info.pid === rank.pgid);
    if (manifest !== undefined && pidReused(procs, leader, id, manifest.startedAt)) {
      // The group's id is its leader's pid: a leader younger than the record is a new group.
      forbiddenGroups.add(rank.pgid);
      continue;
    }
    const members = table.filter((info) => info.pgid === rank.pgid);
    const ours = members.filter((info) => carries(info.pid, info.argv));
    if (members.length > 0 && ours.length === members.length) groups.push(rank.pgid);
    else if (members.length > 0) forbiddenGroups.add(rank.pgid);
  }
  // By pid, every live process whose environment names the deployment: the manifest's ranks,
  // their children, and ranks a launcher started but died before writing into its manifest,
  // which the sweep alone would give a single KILL. Not a process whose arguments merely name
  // it: a `tail -f` of a rank's log, or the `timeout` that started the launcher, is a
  // bystander; arguments only confirm a pid already known (a group member, a marker's pid).
  // And every process in its cgroup, whatever it did to its environment and group.
  for (const info of table) {
    if (contained.has(info.pid)) processes.push({ info });
    else {
      const environ = procs.environ(info.pid);
      if (envCarries(environ, id)) processes.push({ info, environ });
    }
  }
  const target = {
    ...id,
    groups: [...new Set(groups)].filter((pgid) => pgid > 1),
    pids: processes.map(({ info }) => info.pid),
    sweepCandidates,
    forbiddenGroups,
    ...(cgroup !== undefined && { cgroup }),
  };
  return { target, processes };
}
