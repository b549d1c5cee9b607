import { hostname } from "node:os";
import { resolve } from "node:path";
import { RankFileError } from "../errors.ts";
import { carriesDeployment, type DeploymentIdentity } from "../machines/carriesDeployment.ts";
import { requireObject } from "../requireObject.ts";
import { controlFiles, untouchedMs } from "../runtime/clearDeployment.ts";
import { isPermissionDenied, ownerName } from "../runtime/fileOwner.ts";
import { launchStateDir } from "../runtime/launchStateDir.ts";
import type { Clock, Files, Procs } from "../runtime/ports.ts";
import { requireMethods } from "../runtime/requireMethods.ts";
import { unrecordedRanks } from "../runtime/unrecordedRanks.ts";
import { withEnviron } from "../runtime/withEnviron.ts";
import { deploymentPaths, isDeploymentId, OUTCOME_FILE, rankFileName } from "./deploymentPaths.ts";
import { isAlive, leaseLauncherGone, manifestLauncherGone } from "./launcherWatch.ts";
import { isLeaseStale, LEASE_FORMAT, type Lease } from "./leaseFormat.ts";
import { MANIFEST_FORMAT, type Manifest } from "./manifestFormat.ts";
import { MARKER_FORMAT, MARKER_STALE_MS, type Marker, type MarkerPhase } from "./markerFormat.ts";
import {
  type LeftRunning,
  OUTCOME_FORMAT,
  type Outcome,
  type OutcomeStatus,
} from "./outcomeFormat.ts";
import { pidReused } from "./pidReused.ts";
import { LEASE_STALE_MS } from "./rankEnv.ts";
import { requireStateDir } from "./requireStateDir.ts";
import { readStateFile, type StateFileFormat } from "./stateFile.ts";

/** One rank of a deployment as its files and the process table show it. */
export interface RankStatus {
  rank: number;
  /**
   * Where it runs, from the manifest: `local`, or `ssh://USER@HOST[:PORT]`; for a deployment
   * launched on another machine sharing the state dir, that machine's name for its local ranks.
   */
  host: string;
  /** From the marker, else from the manifest (a remote rank's is a pid on its host). */
  pid: number | undefined;
  /**
   * A process with this pid exists, is not a zombie, and does not belong to another program;
   * undefined for a rank on another host, whose process table is not read.
   */
  alive: boolean | undefined;
  /**
   * `remote` for a rank on another host (its process and marker are there: not checked), an
   * ssh host's or the machine its launcher ran on when that is not this one.
   * `exited` for a rank whose exit its launcher recorded (`exit`), `reaped` for one a reaper
   * found still running after its launcher died and stopped, and `gone` for every other rank
   * of a deployment whose end is recorded (its teardown was verified): their pids are not
   * looked up, since another program may have them by now.
   * Else the marker's phase; `gone` when the pid is dead, `reused` when it now belongs to a process
   * that does not carry the deployment (argv or `BATON_DEPLOYMENT`) or that started after the
   * marker (else the manifest) recorded the rank running and lacks `BATON_DEPLOYMENT`
   * (`pidReused`), `no marker` when the rank wrote none.
   */
  phase: MarkerPhase | "gone" | "reused" | "no marker" | "remote" | "exited" | "reaped";
  /** Since the rank started (marker), else since the launch (manifest). */
  ageMs: number | undefined;
  /** Since the marker was last written. */
  heartbeatAgeMs: number | undefined;
  /** The heartbeat is older than 45 s. */
  heartbeatStale: boolean;
  active: number | undefined;
  epoch: number | undefined;
  /**
   * How its process ended, as its launcher learned it (`outcome.json`): the exit code, or the
   * signal that killed it, and when. Undefined while it runs, and when nobody learned it (its
   * launcher died first: its log may say).
   */
  exit: { code: number | null; signal: string | null; at: number; agoMs: number } | undefined;
  /** Its log file (`rank-R.log` of the deployment's directory), when there is one. */
  log: string | undefined;
}

/**
 * One deployment of a state dir: `live` (its launcher's pid lives and its lease is fresh),
 * `orphaned` (launcher gone or lease stale while a manifest or a live rank remains: a case
 * for `baton reap`), `ended` (nothing but debris: no manifest, no lease, no live rank), or
 * `unreadable` (another user's, in a shared state dir: this user may not read its files).
 */
export interface DeploymentStatus {
  deployment: string;
  state: "live" | "orphaned" | "ended" | "unreadable";
  /** Why it is orphaned or ended. */
  reason: string | undefined;
  /**
   * The launcher of the manifest, else of the lease: its pid, the machine it runs on (the
   * manifest's, else the lease's `host`; undefined in a lease of a baton from before it was
   * recorded), and whether that pid is a live process. `alive` is undefined when the pid was
   * not looked up: a lease with no manifest written on another machine, or one that names
   * none (its pid means nothing in this machine's process table; its age alone is judged, as
   * a claim of the name judges it).
   */
  launcher: { pid: number; host: string | undefined; alive: boolean | undefined } | undefined;
  /**
   * The machine whose `baton reap` reaps it, when that is not this one: the launcher's of a
   * manifest another machine wrote (a shared state dir), which a reap here leaves alone
   * (`foreign`). Undefined when a reap here reaps it (a lease with no manifest is reaped by
   * its age on any machine).
   */
  reapOn: string | undefined;
  lease: { renewedAt: number; ageMs: number; staleAfterMs: number; stale: boolean } | undefined;
  /**
   * For an orphaned deployment whose launcher is known: when that launcher was last seen
   * alive, by the latest of what it wrote — its lease's last renewal (every third of
   * `staleAfterMs`, so it died at most that much later), its manifest's start, the rank exits
   * it recorded. Undefined for every other deployment (a live launcher is alive now).
   */
  launcherLastSeen: { at: number; agoMs: number } | undefined;
  worldSize: number | undefined;
  /** Since the launch (manifest). */
  ageMs: number | undefined;
  /**
   * How it ended, from its outcome record: `succeeded`, `failed`, `stopped` (its launcher's
   * teardown was verified) or `reaped` (its launcher died; a reaper stopped what was left),
   * with the failure, the stop's reason or why it was reaped; when, and how long it ran:
   * until it ended, or, when it was reaped, until the reap if a rank was still running then,
   * else until its last rank's exit. `ranAtLeast` when a rank's exit is unknown (it ended
   * after its launcher died, before the reap): it ran that long at least; `ranForMs` is
   * undefined when no rank's exit is known at all. `leftRunning`: what the ranks left running
   * and the launcher's teardown, or the reap, stopped (a helper a rank started and forgot), as
   * the record names it; empty when it names nothing, undefined when it was not recorded (a
   * deployment reaped by a baton from before 6 December 2026, which recorded none).
   */
  ended:
    | {
        status: OutcomeStatus;
        reason: string | undefined;
        at: number;
        agoMs: number;
        ranForMs: number | undefined;
        ranAtLeast: boolean;
        leftRunning: LeftRunning[] | undefined;
      }
    | undefined;
  /** The command its ranks ran (manifest, else outcome record). */
  argv: string[] | undefined;
  ranks: RankStatus[];
  /**
   * The cgroup its local ranks were started in (see `Containment`) and the live processes in
   * it now: the ranks and everything they started, however far it strayed. Absent when its
   * ranks were not contained. `processes` is undefined when it was not counted: `gone` when
   * the cgroup no longer exists (removed, or the machine restarted), else `error` says why it
   * cannot be read from here.
   */
  cgroup:
    | { path: string; processes: number | undefined; gone: boolean; error: string | undefined }
    | undefined;
  /** Files that could not be used (malformed, another deployment's). */
  problems: string[];
}

/** What `readDeploymentStatuses` reads through (it only reads: no signal, no write). */
export interface DeploymentStatusPorts {
  files: Files;
  /** `list` finds the ranks a manifest does not record (`unrecordedRanks`). */
  procs: Pick<Procs, "inspect" | "environ" | "containment" | "list">;
  clock: Pick<Clock, "now">;
  /**
   * This machine's name, compared with a lease's `host` (default `os.hostname()`): a lease
   * with no manifest is judged by its pid only on the machine that wrote it.
   */
  host?: string | undefined;
}

/**
 * Every deployment under the root state dir `stateDir`: each directory holding a control
 * file, a rank's log or an outcome record (other directories are not deployments), and, once
 * it ended, how (its outcome record, `outcome.json`). Listed in `byAttention` order: what a
 * person may have to act on first. Only reads: nothing is signalled or removed. A malformed
 * file is reported in `problems`, never thrown. Ports or a `stateDir` of the wrong kind (the
 * path given alone, without ports) are refused with a `ConfigError` saying what it takes.
 *
 * @example
 * ```ts
 * for (const dep of await readDeploymentStatuses({ files, procs, clock }, ".baton/run")) {
 *   console.log(dep.deployment, dep.state, dep.ranks.map((rank) => rank.phase));
 * }
 * ```
 */
export async function readDeploymentStatuses(
  ports: DeploymentStatusPorts,
  stateDir: string,
): Promise<DeploymentStatus[]> {
  requireObject(
    "readDeploymentStatuses",
    "ports",
    "{ files, procs, clock }, such as { files: nodeFiles(), procs: nodeProcs(), clock: nodeClock() }",
    ports,
  );
  requireMethods(
    "readDeploymentStatuses",
    "ports.files",
    ports.files,
    ["list"],
    "a Files, such as nodeFiles()",
  );
  requireMethods(
    "readDeploymentStatuses",
    "ports.procs",
    ports.procs,
    ["inspect"],
    "a Procs, such as nodeProcs()",
  );
  requireMethods(
    "readDeploymentStatuses",
    "ports.clock",
    ports.clock,
    ["now"],
    "a Clock, such as nodeClock()",
  );
  requireStateDir("readDeploymentStatuses", stateDir);
  const statuses: DeploymentStatus[] = [];
  for (const name of await ports.files.list(stateDir)) {
    if (!isDeploymentId(name)) continue;
    let entries: string[];
    try {
      entries = await ports.files.list(`${stateDir}/${name}`);
    } catch (error) {
      if (isPermissionDenied(error)) {
        const dir = `${stateDir}/${name}`;
        statuses.push(
          unreadable(name, await ownerName(ports.files, dir), stateDir, [
            `cannot list ${dir}: permission denied`,
          ]),
        );
      }
      continue; // else a file, not a deployment directory
    }
    // Neither a control file, a rank's log nor an outcome record: not a deployment
    // (`--state-dir .baton`, the store's own folders).
    const isRecord = (entry: string) =>
      rankFileName(entry)?.kind === "log" || entry === OUTCOME_FILE;
    if (
      !entries.some(isRecord) &&
      controlFiles(deploymentPaths(stateDir, name), entries).length === 0
    ) {
      continue;
    }
    statuses.push(await readDeploymentStatus(ports, stateDir, name, entries));
  }
  return statuses.sort(byAttention);
}

/** The place of each state in `byAttention`. */
const ATTENTION: Record<DeploymentStatus["state"], number> = {
  orphaned: 0,
  live: 1,
  unreadable: 2,
  ended: 3,
};

/**
 * The order `readDeploymentStatuses` lists deployments in: orphaned first (`baton reap` is
 * theirs to run), then live, then unreadable (another user's), then ended; within a state the
 * newest first (by when it ended, else when it was launched; unknown last), then by id. A
 * state dir keeps up to 20 ended deployments, which listed by id buried the one to act on.
 */
function byAttention(a: DeploymentStatus, b: DeploymentStatus): number {
  const since = (dep: DeploymentStatus) => dep.ended?.agoMs ?? dep.ageMs ?? Infinity;
  return (
    ATTENTION[a.state] - ATTENTION[b.state] ||
    since(a) - since(b) ||
    (a.deployment < b.deployment ? -1 : a.deployment > b.deployment ? 1 : 0)
  );
}

async function readDeploymentStatus(
  { files, procs, clock, host: thisHost = hostname() }: DeploymentStatusPorts,
  stateDir: string,
  deployment: string,
  entries: string[],
): Promise<DeploymentStatus> {
  const paths = deploymentPaths(stateDir, deployment);
  const now = clock.now();
  const problems: string[] = [];
  /** The first control file this user may not read: another user's deployment. */
  let denied: string | undefined;
  const read = async <T extends { deployment: string }>(
    format: StateFileFormat<T>,
    path: string,
  ): Promise<T | undefined> => {
    try {
      const value = await readStateFile(files, format, path);
      if (value !== undefined && value.deployment !== deployment) {
        problems.push(`${path} names deployment ${value.deployment}`);
        return undefined;
      }
      return value;
    } catch (error) {
      if (isPermissionDenied(error)) {
        denied ??= path;
        problems.push(`cannot read ${path}: permission denied`);
        return undefined;
      }
      if (!(error instanceof RankFileError)) throw error;
      problems.push(error.message);
      return undefined;
    }
  };
  const manifest: Manifest | undefined = await read(MANIFEST_FORMAT, paths.manifest);
  // Through a symlink, the path its ranks carry; another directory's, this one's, as the reaper's.
  const here = resolve(stateDir);
  const id: DeploymentIdentity = {
    deployment,
    stateDir: (await launchStateDir(files, manifest, here)) ?? here,
  };
  // There but not taken (its problem is listed): the reaper refuses to judge such a deployment.
  const manifestUnreadable =
    manifest === undefined && entries.includes(paths.manifest.slice(paths.dir.length + 1));
  const lease: Lease | undefined = await read(LEASE_FORMAT, paths.lease);
  const recorded: Outcome | undefined = await read(OUTCOME_FORMAT, paths.outcome);
  // A record of another launch of this name (an earlier one, being replaced) is not this one's.
  const launchToken = manifest?.launcher.token ?? lease?.token;
  const outcome =
    launchToken === undefined || recorded?.launcher.token === launchToken ? recorded : undefined;
  if (denied !== undefined) {
    return unreadable(deployment, await ownerName(files, denied), stateDir, problems);
  }

  // Launched on another machine sharing this state dir: its launcher's pid and its ranks
  // ("local" to that machine) are that machine's, and `baton reap` there is theirs.
  const launchedOn = manifest?.launcher.host ?? lease?.host;
  const elsewhere = manifest !== undefined && manifest.launcher.host !== thisHost;
  // With the ranks its launcher started but did not record (it died first): ranks all the
  // same, found in this machine's process table, so only for a launch of this machine.
  const manifestRanks =
    manifest === undefined
      ? []
      : [...manifest.ranks, ...(elsewhere ? [] : unrecordedRanks(id, manifest, procs))];
  const rankNumbers = new Set(manifestRanks.map((rank) => rank.rank));
  for (const { rank } of outcome?.ranks ?? []) rankNumbers.add(rank);
  for (const entry of entries) {
    const file = rankFileName(entry);
    if (file?.kind === "marker") rankNumbers.add(file.rank);
  }
  const ranks: RankStatus[] = [];
  for (const rank of [...rankNumbers].sort((a, b) => a - b)) {
    const entry = manifestRanks.find((candidate) => candidate.rank === rank);
    const record = outcome?.ranks.find((candidate) => candidate.rank === rank);
    const recorded = entry?.host ?? record?.host ?? "local";
    const host = elsewhere && recorded === "local" ? manifest.launcher.host : recorded;
    const logName = paths.log(rank).slice(paths.dir.length + 1);
    const log = entries.includes(logName) ? paths.log(rank) : undefined;
    const exit =
      record?.exit === undefined
        ? undefined
        : {
            code: record.exit.code ?? null,
            signal: record.exit.signal ?? null,
            at: record.exit.at,
            agoMs: now - record.exit.at,
          };
    if (exit !== undefined || outcome?.ended !== undefined) {
      // Known to have ended: whatever runs under its pid now is another program.
      ranks.push({
        rank,
        host,
        pid: record?.pid ?? entry?.pid,
        alive: false,
        phase: exit !== undefined ? "exited" : record?.reaped ? "reaped" : "gone",
        ageMs: undefined,
        heartbeatAgeMs: undefined,
        heartbeatStale: false,
        active: undefined,
        epoch: undefined,
        exit,
        log,
      });
      continue;
    }
    if (host !== "local") {
      // Its pid is one on its host, and its marker is there: this machine knows nothing of it.
      ranks.push({
        rank,
        host,
        pid: entry?.pid,
        alive: undefined,
        phase: "remote",
        ageMs: manifest === undefined ? undefined : now - manifest.startedAt,
        heartbeatAgeMs: undefined,
        heartbeatStale: false,
        active: undefined,
        epoch: undefined,
        exit: undefined,
        log,
      });
      continue;
    }
    const marker: Marker | undefined = await read(MARKER_FORMAT, paths.marker(rank));
    const pid = marker?.pid ?? entry?.pid;
    const listed = pid === undefined ? undefined : procs.inspect(pid);
    // Its state read again after its environment: a rank that ended meanwhile is gone, and
    // one running its exit has no environment to judge, rather than an empty one: not reused.
    const seen = listed === undefined ? undefined : withEnviron(procs, listed);
    const info = seen?.info;
    const env = seen?.env;
    const startedAt = marker?.startedAt ?? manifest?.startedAt;
    // An environment that cannot be read (another user's process) proves nothing either way,
    // but a process that started after the rank was recorded running is not that rank.
    const reused =
      info !== undefined &&
      isAlive(info) &&
      ((env !== undefined && !carriesDeployment(info.argv, env, id)) ||
        (startedAt !== undefined && pidReused(procs, info, id, startedAt)));
    const alive = isAlive(info) && !reused;
    ranks.push({
      rank,
      host,
      pid,
      alive,
      phase: reused ? "reused" : !alive ? "gone" : (marker?.phase ?? "no marker"),
      ageMs: startedAt === undefined ? undefined : now - startedAt,
      heartbeatAgeMs: marker === undefined ? undefined : now - marker.heartbeatAt,
      heartbeatStale: marker !== undefined && now - marker.heartbeatAt > MARKER_STALE_MS,
      active: marker?.active,
      epoch: marker?.epoch,
      exit: undefined,
      log,
    });
  }

  const launcherPid = manifest?.launcher.pid ?? lease?.pid;
  // Its pid is judged only on the machine that wrote the manifest, else the lease, as a claim
  // of the name judges a lease (`leaseLauncherGone`); elsewhere the lease's age decides.
  const launcherAlive =
    launcherPid === undefined || launchedOn !== thisHost
      ? undefined
      : isAlive(procs.inspect(launcherPid));
  let state: DeploymentStatus["state"];
  let reason: string | undefined;
  if (launcherPid !== undefined) {
    reason = manifest
      ? manifestLauncherGone(manifest, lease, procs.inspect(manifest.launcher.pid), now, thisHost)
      : lease && leaseLauncherGone(lease, thisHost, (pid) => procs.inspect(pid), now);
    state = reason === undefined ? "live" : "orphaned";
    if (elsewhere && reason !== undefined) {
      reason += `; it was launched on ${launchedOn}, where \`baton reap --state-dir ${stateDir}\` reaps it (a reap on this machine leaves another machine's deployment alone)`;
    } else if (manifestUnreadable && reason !== undefined) {
      reason += `; ${unreadableManifest(livingPids(ranks), id, paths.dir)}`;
    } else if (manifest === undefined && lease !== undefined && reason !== undefined) {
      // Still fresh, so its launcher is gone from this machine: `baton reap` clears it now.
      if (!isLeaseStale(lease, now)) {
        // Its outcome recorded: it had ended, and died removing its files (its lease goes last).
        const how =
          outcome?.ended === undefined
            ? "with no manifest it started no rank"
            : `it had ended (${outcome.ended.status}) and died as it removed its files`;
        reason += `; ${how}, and \`baton reap\` removes its lease`;
      }
    }
  } else {
    const living = livingPids(ranks);
    state = living.length > 0 ? "orphaned" : "ended";
    const left = controlFiles(paths, entries);
    const leftFiles = `the ${left.length} control file${left.length === 1 ? "" : "s"} left (${left.join(", ")})`;
    if (manifestUnreadable) {
      reason = unreadableManifest(living, id, paths.dir);
    } else if (living.length > 0) {
      reason = `no manifest or lease, but rank pid${living.length > 1 ? "s" : ""} ${living.join(", ")} still run${living.length > 1 ? "" : "s"}; \`baton reap\` stops ${living.length > 1 ? "them" : "it"} and removes ${leftFiles}`;
    } else {
      // How it ended, when its outcome record says; else what is known.
      const ended = outcome?.ended;
      reason =
        ended === undefined
          ? "no manifest, no lease and no live rank"
          : `${ended.status}${ended.reason === undefined ? "" : `: ${ended.reason}`}`;
      const untouched =
        left.length > 0 ? await untouchedMs(files, paths.dir, left, now) : undefined;
      if (untouched !== undefined) {
        // The reaper clears leftovers none of which has been touched for LEASE_STALE_MS.
        const waitMs = LEASE_STALE_MS - untouched;
        reason += `; \`baton reap\` removes ${leftFiles}${waitMs >= 0 ? ` once none has been touched for ${LEASE_STALE_MS / 1000} s, in ${Math.max(1, Math.ceil(waitMs / 1000))} s` : ""}`;
      }
    }
  }
  const lastSeen =
    state === "orphaned" && launcherPid !== undefined
      ? launcherLastSeen(manifest, lease, outcome)
      : undefined;
  return {
    deployment,
    state,
    reason,
    launcher:
      launcherPid === undefined
        ? undefined
        : { pid: launcherPid, host: launchedOn, alive: launcherAlive },
    reapOn: elsewhere ? manifest.launcher.host : undefined,
    launcherLastSeen: lastSeen === undefined ? undefined : { at: lastSeen, agoMs: now - lastSeen },
    lease:
      lease === undefined
        ? undefined
        : {
            renewedAt: lease.renewedAt,
            ageMs: now - lease.renewedAt,
            staleAfterMs: lease.staleAfterMs,
            stale: isLeaseStale(lease, now),
          },
    worldSize: manifest?.worldSize ?? outcome?.worldSize,
    ageMs: manifest === undefined ? undefined : now - manifest.startedAt,
    ended:
      outcome?.ended === undefined
        ? undefined
        : {
            status: outcome.ended.status,
            reason: outcome.ended.reason,
            at: outcome.ended.at,
            agoMs: now - outcome.ended.at,
            ...ranFor(outcome, outcome.ended),
            // A launcher's record names none when there were none; a reap's always names them.
            leftRunning:
              outcome.ended.leftRunning ?? (outcome.ended.status === "reaped" ? undefined : []),
          },
    argv: manifest?.argv ?? outcome?.argv,
    ranks,
    cgroup:
      manifest?.cgroup === undefined
        ? undefined
        : elsewhere
          ? {
              path: manifest.cgroup,
              processes: undefined,
              gone: false,
              error: `it is on ${launchedOn}, not read from here`,
            }
          : cgroupStatus(procs, manifest.cgroup),
    problems,
  };
}

/**
 * A deployment whose control files this user may not read: another user's, in a shared state
 * dir. Nothing about it is known here, so it is neither live, orphaned nor ended.
 */
function unreadable(
  deployment: string,
  owner: string | undefined,
  stateDir: string,
  problems: string[],
): DeploymentStatus {
  const whose = owner === undefined ? "another user's" : `${owner}'s`;
  return {
    deployment,
    state: "unreadable",
    reason: `its files are ${whose} and this user may not read them: run \`baton status --state-dir ${stateDir}\` as ${owner ?? "that user"} to see it (\`baton reap\` leaves it alone)`,
    launcher: undefined,
    reapOn: undefined,
    lease: undefined,
    launcherLastSeen: undefined,
    worldSize: undefined,
    ageMs: undefined,
    ended: undefined,
    argv: undefined,
    ranks: [],
    cgroup: undefined,
    problems,
  };
}

/**
 * When the launcher of the manifest (else of the lease) was last known alive: the latest
 * time it wrote down — its lease's renewal (a lease of another launcher instance says
 * nothing of this one), its manifest's start, an exit it recorded in the outcome record.
 */
/**
 * How long an ended deployment ran. Its launcher's record ends with the group's verified
 * teardown; a reaped one's ends at the reap, which says how long its ranks ran only when one
 * of them was still running then. Otherwise they ended before, unseen: their last known exit
 * is the end, or a lower bound when some rank's exit is unknown.
 */
function ranFor(
  outcome: Outcome,
  ended: NonNullable<Outcome["ended"]>,
): { ranForMs: number | undefined; ranAtLeast: boolean } {
  if (ended.status !== "reaped" || outcome.ranks.some((rank) => rank.reaped)) {
    return { ranForMs: ended.at - outcome.startedAt, ranAtLeast: false };
  }
  const exits = outcome.ranks.flatMap((rank) => (rank.exit === undefined ? [] : [rank.exit.at]));
  if (exits.length === 0) return { ranForMs: undefined, ranAtLeast: false };
  return {
    ranForMs: Math.max(...exits) - outcome.startedAt,
    ranAtLeast: exits.length < outcome.ranks.length,
  };
}

function launcherLastSeen(
  manifest: Manifest | undefined,
  lease: Lease | undefined,
  outcome: Outcome | undefined,
): number | undefined {
  const launcher = manifest?.launcher;
  const ownLease =
    launcher === undefined || (lease?.pid === launcher.pid && lease.token === launcher.token);
  const times = [
    ownLease ? lease?.renewedAt : undefined,
    manifest?.startedAt,
    ...(outcome?.ranks ?? []).map((rank) => rank.exit?.at),
  ].filter((at): at is number => at !== undefined);
  return times.length === 0 ? undefined : Math.max(...times);
}

/** The live pids among the ranks. */
function livingPids(ranks: readonly RankStatus[]): number[] {
  return ranks.filter((rank) => rank.alive).map((rank) => rank.pid as number);
}

/** Why a deployment whose manifest is there but invalid stays, and what to do about it. */
function unreadableManifest(living: number[], id: DeploymentIdentity, dir: string): string {
  const running =
    living.length > 0
      ? `rank pid${living.length > 1 ? "s" : ""} ${living.join(", ")} still run${living.length > 1 ? "" : "s"}; `
      : "";
  return `${running}its manifest is invalid (below), so \`baton reap\` leaves it alone and a launch of this name is refused: once no process with BATON_DEPLOYMENT=${id.deployment} and BATON_STATE_DIR=${id.stateDir} runs, remove ${dir}`;
}

/** How many processes a deployment's cgroup holds, or why that is not known. */
function cgroupStatus(
  procs: DeploymentStatusPorts["procs"],
  path: string,
): NonNullable<DeploymentStatus["cgroup"]> {
  const { containment } = procs;
  if (containment === undefined) {
    return {
      path,
      processes: undefined,
      gone: false,
      error: "this process has no cgroup v2 to read it through",
    };
  }
  try {
    const members = containment.members(path);
    return { path, processes: members?.length, gone: members === undefined, error: undefined };
  } catch (error) {
    return { path, processes: undefined, gone: false, error: (error as Error).message };
  }
}
