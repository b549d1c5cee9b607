import { constants, hostname } from "node:os";
import { dirname, resolve } from "node:path";
import pino, { type Logger } from "pino";
import { type Actor, createActor, type InspectionEvent } from "xstate";
import {
  ConfigError,
  ProgramNotRunError,
  RankFileError,
  RankGroupError,
  RemoteHostError,
} from "../errors.ts";
import { formatDuration } from "../formatDuration.ts";
import type { DeploymentIdentity } from "../machines/carriesDeployment.ts";
import {
  type BarrierPassed,
  type GroupEmitted,
  type GroupEvent,
  type GroupFailure,
  type GroupOutcome,
  groupMachine,
  outcomeOf,
  passedBarrier,
} from "../machines/group.ts";
import { rankMachine } from "../machines/rank.ts";
import { givenOverrides } from "../overrides.ts";
import { commandNotRun } from "../rank/commandNotRun.ts";
import { deploymentCgroupName } from "../rank/deploymentCgroup.ts";
import {
  checkDeploymentId,
  DEFAULT_STATE_DIR,
  type DeploymentPaths,
  deploymentPaths,
} from "../rank/deploymentPaths.ts";
import { leaseLauncherGone } from "../rank/launcherWatch.ts";
import { type Lease, leaseHolder } from "../rank/leaseFormat.ts";
import { MANIFEST_FORMAT, type Manifest, type ManifestRank } from "../rank/manifestFormat.ts";
import { MARKER_FORMAT } from "../rank/markerFormat.ts";
import { otherRanksEnded } from "../rank/otherRanksEnded.ts";
import { type LeftRunning, OUTCOME_FORMAT, type Outcome } from "../rank/outcomeFormat.ts";
import { rankList } from "../rank/rankList.ts";
import { encodeStateFile, readStateFile } from "../rank/stateFile.ts";
import { type CancelFile, cancelFile } from "./cancelFile.ts";
import { checkLaunchSpec } from "./checkLaunchSpec.ts";
import { clearDeployment } from "./clearDeployment.ts";
import { type FolderNotRemoved, folderNotRemovedLine } from "./folderNotRemoved.ts";
import { folderRefusal } from "./folderRefusal.ts";
import { freePort } from "./freePort.ts";
import { guardInspect } from "./guardInspect.ts";
import { HostNamedTwice } from "./hostNamedTwice.ts";
import { isWithin } from "./isWithin.ts";
import { claimOrTakeOver, type HeldLease, holderOf, holdLease } from "./launcherLease.ts";
import { leftRunningIn } from "./leftRunningIn.ts";
import { logTail } from "./logTail.ts";
import { markerPids } from "./markerPids.ts";
import { type MarkerNotCounted, markersNotCounted } from "./markersNotCounted.ts";
import { nodeClock } from "./nodeClock.ts";
import { nodeEntropy } from "./nodeEntropy.ts";
import { nodeFiles } from "./nodeFiles.ts";
import { nodeProcs } from "./nodeProcs.ts";
import type { Entropy, ProcExit, ProcHandle } from "./ports.ts";
import {
  DEFAULT_RANK_GROUP_TIMEOUTS,
  type DrainReport,
  type GroupExit,
  type LaunchPorts,
  type LaunchSpec,
  type RankExit,
  type RankGroup,
  type RankGroupStopOptions,
  type RankGroupTimeouts,
} from "./rankGroup.ts";
import { type ReapReport, reapDeployments } from "./reaper.ts";
import { refusedForGood } from "./refusedForGood.ts";
import { releaseCgroup } from "./releaseCgroup.ts";
import { remoteExitCodeNote } from "./remoteExitCode.ts";
import type { RemoteRankHandle } from "./remoteRank.ts";
import { openRemoteSite, type RemoteSite } from "./remoteSite.ts";
import { REAPER_CLAIM } from "./removeStaleCgroups.ts";
import { saysNotRetryable } from "./serializeThrown.ts";
import { parseRankHost, type RankHost } from "./sshTarget.ts";
import { type TeardownReport, tearDown } from "./tearDown.ts";
import { tearDownAcrossHosts } from "./tearDownAcrossHosts.ts";

/** A spawned rank; `site` is its remote host's, undefined for a local rank. */
interface Spawned {
  rank: number;
  pid: number;
  handle: ProcHandle | RemoteRankHandle;
  exit: ProcExit | undefined;
  /** When the launcher learned its exit (Clock port). */
  exitedAt: number | undefined;
  site: RemoteSite | undefined;
  /** A verified teardown of its host signalled it while it ran (its report's `stopped`). */
  stopped: boolean;
}

/** A place where ranks run and where its cancel files are written: this machine or a site. */
interface Location {
  site: RemoteSite | undefined;
  cancels: CancelFile;
}

const ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/**
 * How long the launcher spawns local ranks before it lets the event loop run: a stop waits
 * at most about this long (200 ranks took 5 s to spawn here, all in one go).
 */
const SPAWN_SLICE_MS = 50;
/**
 * How often and how many times a launch looks again at its name while a reaper claims it to
 * remove the empty cgroup it left (`REAPER_CLAIM`): a few ms of work, waited for up to 2 s.
 */
const REAPER_CLAIM_POLL_MS = 20;
const REAPER_CLAIM_WAITS = 100;
/**
 * What a failed barrier's message adds when no rank wrote a marker at all: most often a plain
 * program (a training script) that was never written to say it is ready.
 */
const NO_MARKER_AT_ALL =
  " No rank wrote a marker at all: a program that writes none (a plain training script) is never ready, and passes the barrier only by exiting 0 before the load timeout; give it a load timeout longer than its run, or have it write its marker.";

/**
 * Launches a rank group, like torchrun: `worldSize` processes of `argv`, on this machine or,
 * per `hosts`, on ssh hosts, each the leader of its own process group, with `RANK`,
 * `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE` (counted per host), `GROUP_RANK` and
 * `GROUP_WORLD_SIZE` (torchrun's node rank and count: hosts in the order of their first rank), `MASTER_ADDR`
 * (`127.0.0.1` when every rank is local), a free `MASTER_PORT`, `BATON_DEPLOYMENT`,
 * `BATON_STATE_DIR`, `BATON_LAUNCHER_PID`, `BATON_MARKER_HEARTBEAT_MS` and
 * `BATON_LEASE_STALE_MS`, and each rank's stdout and stderr appended to
 * `S/<deployment>/rank-<R>.log`. First the reaper tears down the orphans of dead launchers
 * in the state dir; then the launcher writes its lease (renewed) and the launch manifest,
 * starts the ranks, and waits for each rank's ready marker within the load timeout.
 *
 * One rank that fails (exits non-zero, is killed, or its heartbeat goes stale) makes the
 * group fail: the others are torn down, and `wait()` rejects with a `RankGroupError`
 * (`RANK_FAILED`) carrying that rank's exit code and the tail of its log. When every rank
 * exits 0, `wait()` resolves. The manifest and the lease are removed only after a verified
 * teardown. Each ssh host gets the deployment's state dir there (markers, a mirrored lease,
 * cancel files) and is torn down remotely, in parallel with the local ranks.
 *
 * @example
 * ```ts
 * const group = launchGroup({ argv: ["python3", "serve.py"], worldSize: 4 });
 * await group.ready;
 * await group.abort(["req-17"]);
 * process.on("SIGINT", () => void group.stop("Ctrl-C"));
 * const exit = await group.wait(); // { status: "succeeded", ranks: [...], ... }
 * // Two ranks here, two on gpu-2 (its ssh settings from ~/.ssh/config):
 * launchGroup({ argv: ["python3", "serve.py"], worldSize: 4,
 *   hosts: ["local", "local", "ssh://alice@gpu-2", "ssh://alice@gpu-2"] });
 * ```
 */
export function launchGroup(spec: LaunchSpec): RankGroup {
  return new LaunchedGroup(spec);
}

class LaunchedGroup implements RankGroup {
  readonly deployment: string;
  readonly dir: string;
  readonly logFiles: readonly string[];
  readonly ready: Promise<BarrierPassed>;
  private readonly exit: Promise<GroupExit>;
  private readonly stateDir: string;
  private readonly paths: DeploymentPaths;
  private readonly argv: [string, ...string[]];
  private readonly worldSize: number;
  private readonly hosts: readonly RankHost[];
  /** The distinct hosts' specs, in the order of their first rank: `GROUP_RANK` is an index. */
  private readonly hostGroups: readonly string[];
  private readonly masterAddr: string;
  /** The ssh hosts' sites by host spec, once opened; closed after a verified teardown. */
  private readonly sites = new Map<string, Location & { site: RemoteSite }>();
  private readonly timeouts: RankGroupTimeouts;
  private readonly ports: LaunchPorts;
  private readonly logger: Logger;
  private readonly group: Actor<typeof groupMachine>;
  private readonly ranks: Actor<typeof rankMachine>[];
  private readonly spawned: Spawned[] = [];
  /** Ranks whose last marker read was not counted (another pid, malformed), for the barrier's error. */
  private readonly markersNotCounted = new Map<number, MarkerNotCounted>();
  private readonly forbiddenGroups = new Set<number>();
  private readonly token: string;
  private readonly cancels: CancelFile;
  /** The launch's `inspect`, guarded: it sees the group's, each rank's and the local teardown's machine. */
  private readonly inspect: ((event: InspectionEvent) => void) | undefined;
  private settleReady!: {
    resolve: (barrier: BarrierPassed) => void;
    reject: (error: Error) => void;
  };
  private settleExit!: { resolve: (exit: GroupExit) => void; reject: (error: Error) => void };
  private settled = false;
  private launching: Promise<void> = Promise.resolve();
  /** The reap that clears the way (`reap()`), under way from the start. */
  private reaping: Promise<void> = Promise.resolve();
  /** Aborted by `stop(…, { now: true })`: every teardown of this launch, its reap's too, KILLs at once. */
  private readonly hurry = new AbortController();
  private attempt: Promise<TeardownReport> | undefined;
  private report: TeardownReport | undefined;
  private lease: HeldLease | undefined;
  private watchTimer: unknown;
  private watching = false;
  /** The last teardown's error, while the group is in `teardownFailed`. */
  private teardownError: Error | undefined;
  /** The cgroup the local ranks start in, when they are contained. */
  private cgroup: string | undefined;
  /** When the ranks were started: the outcome record's `startedAt`, undefined before. */
  private outcomeStartedAt: number | undefined;
  /** The outcome record's writes, one after another. */
  private outcomeWrites: Promise<void> = Promise.resolve();
  /** The outcome record's next write while it waits for the one before: it takes every change. */
  private outcomeQueued: Promise<void> | undefined;
  /** How the group ended, for the outcome record, once its teardown is verified. */
  private outcomeEnded: Outcome["ended"];
  /** What the ranks left running, once the teardown that stopped it is verified. */
  private leftRunning: LeftRunning[] = [];
  private foldersNotRemoved: FolderNotRemoved[] = [];
  /** The lease of the launcher that took this one's over, once a renewal or the teardown found it. */
  private takenOverBy: Lease | undefined;

  constructor(private readonly spec: LaunchSpec) {
    checkLaunchSpec(spec);
    const [command, ...args] = spec.argv;
    if (command === undefined || command === "") {
      throw new ConfigError("a rank group needs a command to launch: argv is empty");
    }
    if (!Number.isInteger(spec.worldSize) || spec.worldSize < 1) {
      throw new ConfigError(`worldSize must be an integer of at least 1, not ${spec.worldSize}`);
    }
    this.argv = [command, ...args];
    this.worldSize = spec.worldSize;
    const hosts = spec.hosts ?? Array.from({ length: this.worldSize }, () => "local");
    if (hosts.length !== this.worldSize) {
      throw new ConfigError(
        `hosts names ${hosts.length} host${hosts.length === 1 ? "" : "s"} for a world of ${this.worldSize}: give one per rank (rank R runs on hosts[R])`,
      );
    }
    this.hosts = hosts.map(parseRankHost);
    this.hostGroups = [...new Set(this.hosts.map((host) => host.spec))];
    const first = this.hosts[0] as RankHost;
    this.masterAddr =
      spec.masterAddr ??
      (first.kind === "ssh"
        ? first.host
        : this.hosts.every((host) => host.kind === "local")
          ? "127.0.0.1"
          : hostname());
    const port = spec.masterPort;
    if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65_535)) {
      throw new ConfigError(`masterPort must be a TCP port from 1 to 65535, not ${port}`);
    }
    this.timeouts = { ...DEFAULT_RANK_GROUP_TIMEOUTS, ...givenOverrides(spec.timeouts ?? {}) };
    for (const [name, value] of Object.entries(this.timeouts)) {
      if (!(Number.isFinite(value) && value > 0)) {
        throw new ConfigError(`timeouts.${name} must be a positive number of ms, not ${value}`);
      }
    }
    this.ports = {
      procs: spec.ports?.procs ?? nodeProcs(),
      files: spec.ports?.files ?? nodeFiles(),
      clock: spec.ports?.clock ?? nodeClock(),
      entropy: spec.ports?.entropy ?? nodeEntropy(),
      freePort: spec.ports?.freePort ?? freePort,
      logTail: spec.ports?.logTail ?? logTail,
      host: spec.ports?.host ?? hostname(),
    };
    this.logger = spec.logger ?? pino({ level: "silent" });
    const { entropy, clock, files } = this.ports;
    this.deployment = checkDeploymentId(spec.name ?? `dep-${randomId(entropy, 12)}`);
    this.stateDir = resolve(spec.cwd ?? process.cwd(), spec.stateDir ?? DEFAULT_STATE_DIR);
    this.paths = deploymentPaths(this.stateDir, this.deployment);
    this.dir = this.paths.dir;
    this.logFiles = Array.from({ length: this.worldSize }, (_, rank) => this.paths.log(rank));
    this.token = entropy.id();
    this.cancels = cancelFile({
      files,
      clock,
      stateDir: this.stateDir,
      deployment: this.deployment,
    });
    this.ready = new Promise<BarrierPassed>((resolve, reject) => {
      this.settleReady = { resolve, reject };
    });
    this.exit = new Promise<GroupExit>((resolve, reject) => {
      this.settleExit = { resolve, reject };
    });
    // Whoever awaits them sees the rejection; nobody awaiting is not a crash.
    this.ready.catch(() => {});
    this.exit.catch(() => {});

    const inspect = spec.inspect === undefined ? undefined : guardInspect(spec.inspect);
    this.inspect = inspect;
    this.group = createActor(groupMachine, {
      input: {
        deployment: this.deployment,
        worldSize: this.worldSize,
        loadTimeoutMs: this.timeouts.loadTimeoutMs,
      },
      clock,
      ...(inspect !== undefined && { inspect }),
    });
    this.ranks = Array.from({ length: this.worldSize }, (_, rank) => {
      const actor = createActor(rankMachine, {
        input: { rank, markerStaleMs: this.timeouts.markerStaleMs },
        clock,
        ...(inspect !== undefined && { inspect }),
      });
      actor.on("rank.ready", () => this.send({ type: "RANK_READY", rank }));
      actor.on("rank.exited", ({ code, signal }) =>
        this.send({ type: "RANK_EXITED", rank, code, signal }),
      );
      actor.on("rank.lost", ({ reason }) => this.send({ type: "RANK_LOST", rank, reason }));
      return actor.start();
    });
    this.group.on("*", (event) => this.onGroup(event));
    this.group.start();
    this.reaping = this.reap();
  }

  wait(): Promise<GroupExit> {
    return this.exit;
  }

  pids(): number[] {
    return this.spawned.filter((spawned) => spawned.exit === undefined).map((s) => s.pid);
  }

  abort(ids: readonly string[], reason = "aborted by the launcher"): Promise<DrainReport> {
    if (ids.length === 0) {
      return Promise.reject(
        new ConfigError("abort(ids) needs at least one request id; abortAll() cancels everything"),
      );
    }
    return this.drain({ scope: "requests", ids, reason });
  }

  abortAll(reason = "aborted by the launcher"): Promise<DrainReport> {
    return this.drain({ scope: "all", reason });
  }

  stop(reason = "stopped", options: RankGroupStopOptions = {}): Promise<TeardownReport> {
    if (options.now === true) this.hurry.abort();
    const snapshot = this.group.getSnapshot();
    if (!snapshot.matches("stopping")) this.send({ type: "STOP", reason });
    if (this.group.getSnapshot().matches("stopping") && this.attempt !== undefined) {
      return this.attempt;
    }
    if (this.report !== undefined) return Promise.resolve(this.report);
    return this.stopUnlaunched();
  }

  /**
   * Stopped before anything was launched: nothing of ours to tear down, which tearDown
   * verifies over the whole table. A crashed launch of this name whose reap is still going
   * may have left a manifest naming its cgroup: its members count too, or one that emptied
   * its environment would pass for gone.
   */
  private async stopUnlaunched(): Promise<TeardownReport> {
    // A reap under way (orphans of other launches, in their TERM grace) is not cut short:
    // the launcher would exit before its KILL, leaving the orphans that ignore TERM.
    await this.reaping.catch(() => {});
    const manifest = await readStateFile(
      this.ports.files,
      MANIFEST_FORMAT,
      this.paths.manifest,
    ).catch(() => undefined);
    return tearDown(
      {
        ...this.identity(),
        groups: [],
        pids: [],
        sweepCandidates: async () => [],
        forbiddenGroups: this.forbiddenGroups,
        ...(manifest?.cgroup !== undefined && { cgroup: manifest.cgroup }),
      },
      {
        procs: this.ports.procs,
        clock: this.ports.clock,
        logger: this.logger,
        hurry: this.hurry.signal,
      },
    );
  }

  private onGroup(event: GroupEmitted): void {
    switch (event.type) {
      case "group.launch":
        this.launching = this.launch();
        return;
      case "group.ready":
        this.settleReady.resolve({ readyRanks: event.readyRanks, exitedRanks: event.exitedRanks });
        return;
      case "group.teardown":
        this.attempt = this.runTeardown();
        this.attempt.catch(() => {});
        return;
      case "group.teardownFailed":
        void this.onTeardownFailed();
        return;
      case "group.finished":
        void this.finish(event.outcome);
        return;
    }
  }

  /** Clears the way: reaps orphans of dead launchers, and checks this name is free. */
  private async reap(): Promise<void> {
    let report: ReapReport;
    try {
      report = await reapDeployments({
        stateDir: this.stateDir,
        ...this.ports,
        logger: this.logger,
        ...(this.spec.teardown !== undefined && { teardown: this.spec.teardown }),
        ...(this.spec.remote?.ssh !== undefined && { ssh: this.spec.remote.ssh }),
        hurry: this.hurry.signal,
      });
    } catch (error) {
      // Said as a folder baton makes that cannot be written is: which path, why, what to do.
      const { why, advice } = folderRefusal(error, this.stateDir, "stateDir");
      this.send({
        type: "REAP_FAILED",
        failure: {
          code: "REAP_FAILED",
          message: `the state dir ${this.stateDir} cannot be read (${why}), so the reaper cannot check it for orphans; ${advice}. No rank was started`,
          ...(refusedForGood(error) && { retryable: false as const }),
        },
      });
      return;
    }
    for (const { deployment, error } of report.failed) {
      // The message names the file and what to do; a stack would only bury it.
      this.logger.warn(
        { deployment, reason: error.message },
        "an orphaned deployment could not be reaped",
      );
    }
    const live = report.live.find((entry) => entry.deployment === this.deployment);
    const failed = report.failed.find((entry) => entry.deployment === this.deployment);
    if (live !== undefined) {
      this.blocked(
        `it is running under a live launcher (pid ${live.pid}); stop that one first or pick another --name`,
      );
      return;
    }
    if (failed !== undefined) {
      // What failed the reap says whether a later one can succeed: survivors of a teardown
      // may die, a host may answer; a manifest that is not one, or is another state dir's, stays.
      if (saysNotRetryable(failed.error)) {
        this.blocked(
          `its last reap failed, and no reap will succeed until that is fixed: ${failed.error.message}`,
          false,
        );
      } else {
        this.blocked(
          `its last reap failed: ${failed.error.message}. Every launch reaps again first, so one succeeds once those processes are gone; \`baton reap --state-dir ${this.stateDir}\` tells whether they are`,
        );
      }
      return;
    }
    let taken: string | undefined;
    try {
      taken = await this.claim();
    } catch (error) {
      this.send({
        type: "REAP_FAILED",
        failure: { code: "LAUNCH_FAILED", ...this.cannotHold(error) },
      });
      return;
    }
    if (taken !== undefined) {
      this.blocked(taken);
      return;
    }
    // Stopped while claiming: the name is given back.
    if (!this.group.getSnapshot().matches("reaping")) {
      await this.ports.files.remove(this.paths.lease);
      return;
    }
    this.send({ type: "REAPED" });
  }

  /**
   * The state dir cannot take this deployment's files: why and what to do, as for the store
   * (`unwritableFolder`), and `retryable: false` when only a person can change that. A folder
   * that cannot be made (a symbolic link to nothing on the way, a file system that makes no
   * folders) is such a refusal, as permission denied is: a rank job's attempts follow at once
   * unless it has a backoff, and each met the same missing disk.
   */
  private cannotHold(error: unknown): { message: string; retryable?: false } {
    const { why, advice, unwritable } = folderRefusal(error, this.stateDir, "stateDir");
    return {
      message: `the state dir ${this.stateDir} cannot hold deployment ${this.deployment} (${why}); ${advice}. No rank was started`,
      ...((unwritable?.kind === "notMade" || refusedForGood(error)) && {
        retryable: false as const,
      }),
    };
  }

  /** The name is not free: `retryable: false` when it will not be without a person's help. */
  private blocked(why: string, retryable?: false): void {
    this.send({
      type: "REAP_FAILED",
      failure: {
        code: "DEPLOYMENT_BLOCKED",
        message: `it cannot be launched: ${why}`,
        ...(retryable === false && { retryable }),
      },
    });
  }

  /**
   * Claims this deployment's name by creating its lease exclusively (`claimLease`): of two
   * launchers of one name at once, one goes on and the other is blocked. A lease a launcher
   * left behind when it died before writing its manifest (its pid is gone, when the lease is
   * this machine's, or it was not renewed for its stale time: `leaseLauncherGone`; one that
   * cannot be read, once untouched that long) is taken over. A reaper's claim (`REAPER_CLAIM`: it removes an empty cgroup this name left) is
   * waited for. Returns why the name is taken, or undefined once it is this launcher's.
   */
  private async claim(): Promise<string | undefined> {
    const { files, procs, clock } = this.ports;
    const path = this.paths.lease;
    const made = await files.mkdirp(this.paths.dir);
    const refused = await claimOrTakeOver({
      files,
      clock,
      path,
      deployment: this.deployment,
      pid: procs.selfPid,
      token: this.token,
      staleAfterMs: this.timeouts.leaseStaleMs,
      logger: this.logger,
      launcherHost: this.ports.host,
      left: (held, now) =>
        leaseLauncherGone(held, this.ports.host, (pid) => procs.inspect(pid), now),
      // A reaper removing an empty cgroup this name left holds it for a few ms.
      waitFor: {
        lease: (held) => held.token.startsWith(REAPER_CLAIM),
        pollMs: REAPER_CLAIM_POLL_MS,
        times: REAPER_CLAIM_WAITS,
      },
      takingOver: "taking over a lease its launcher left",
    }).catch(async (error: unknown) => {
      await this.removeMade(made);
      throw error;
    });
    if (refused === undefined) return undefined;
    return refused.held === "unreadable"
      ? `its lease ${path} cannot be read (a lease is written whole, so it was damaged, edited by hand, or cut short by a power loss as it was made), and is taken over once untouched for ${formatDuration(this.timeouts.leaseStaleMs)}; remove it if no launcher of that name is running, pick another --name, or launch again then`
      : `another launcher (${leaseHolder(refused.held)}) claimed it a moment ago and is starting its ranks; stop that one first or pick another --name`;
  }

  /**
   * Removes the folders the claim made (`made`, the topmost, down to the deployment's own),
   * deepest first, when its lease could not be written: a state dir that cannot hold the
   * deployment (in a cgroup file system each folder made is a cgroup) keeps nothing of this
   * launch. Each goes only when empty; one that cannot be removed is logged and left.
   */
  private async removeMade(made: string | undefined): Promise<void> {
    if (made === undefined) return;
    for (let dir = this.paths.dir; isWithin(dir, made); dir = dirname(dir)) {
      try {
        if (!(await this.ports.files.removeDir(dir))) return;
      } catch (error) {
        this.logger.warn({ dir, err: error }, "a folder this launch made could not be removed");
        return;
      }
    }
  }

  /** Writes the lease and manifest, starts the ranks, and starts watching their markers. */
  private async launch(): Promise<void> {
    const { files, procs, clock } = this.ports;
    try {
      await files.mkdirp(this.paths.dir);
      // Markers, acks or a cancel file left by an earlier run under this name mean nothing now;
      // the lease is this launcher's claim on the name.
      await clearDeployment(files, this.paths, { keepLease: true });
      // An earlier run's outcome is not this one's.
      await files.remove(this.paths.outcome);
    } catch (error) {
      this.send({ type: "LAUNCH_FAILED", ...this.cannotHold(error) });
      return;
    }
    try {
      const port = this.spec.masterPort ?? (await this.ports.freePort());
      this.lease = await holdLease({
        files,
        clock,
        path: this.paths.lease,
        deployment: this.deployment,
        pid: procs.selfPid,
        token: this.token,
        launcherHost: this.ports.host,
        staleAfterMs: this.timeouts.leaseStaleMs,
        logger: this.logger,
        onLost: (reason) => this.leaseLost(this.paths.lease, reason),
        onTakenOver: (other) => {
          this.takenOverBy = other;
          this.leaseLost(
            this.paths.lease,
            `another launcher (pid ${other.pid}) took it over, as it was not renewed for over ${other.staleAfterMs} ms`,
          );
        },
        ...(this.inspect !== undefined && { inspect: this.inspect }),
        ...(this.spec.plantedBugs !== undefined && { plantedBugs: this.spec.plantedBugs }),
      });
      this.cgroup = this.contain();
      await this.writeManifest();
      if (!this.group.getSnapshot().matches("launching")) return;
      await this.openSites();
      if (!this.group.getSnapshot().matches("launching")) return;
      this.outcomeStartedAt = clock.now();
      const started = await Promise.allSettled(await this.spawnAll(port));
      await this.writeManifest();
      await this.recordOutcome();
      const failed = started.findIndex((outcome) => outcome.status === "rejected");
      if (failed !== -1) {
        const spawnError = (started[failed] as PromiseRejectedResult).reason as Error;
        // A RemoteHostError's message starts with its host.
        const where =
          this.hosts[failed]?.kind === "ssh" && !(spawnError instanceof RemoteHostError)
            ? ` on ${this.hosts[failed]?.spec}`
            : "";
        // A program not there (or not executable) here, or not there on an ssh host.
        const shellCode =
          spawnError instanceof ProgramNotRunError || spawnError instanceof RemoteHostError
            ? spawnError.shellCode
            : undefined;
        this.send({
          type: "LAUNCH_FAILED",
          message: `rank ${failed} of ${this.worldSize} could not be started${where}: ${spawnError.message}${this.spawned.length > 0 ? ". The ranks already started were stopped" : ""}`,
          // A program or working directory that is not there is not there for the next launch.
          ...(saysNotRetryable(spawnError) && { retryable: false as const }),
          ...(shellCode !== undefined && { shellCode }),
        });
        return;
      }
      this.logger.info(
        { deployment: this.deployment, ranks: this.spawned.map((s) => s.pid), port },
        "rank group launched",
      );
      this.send({ type: "LAUNCHED" });
      this.watching = true;
      this.watch();
    } catch (error) {
      const ranks =
        this.spawned.length > 0 ? "The ranks already started were stopped" : "No rank was started";
      if (error instanceof RankGroupError && error.code === "DEPLOYMENT_BLOCKED") {
        // An ssh host's state dir holds the name for another launcher (`claimMirroredLease`):
        // refused as a name held here is, and given back by the teardown, not a failed launch.
        this.send({
          type: "LAUNCH_BLOCKED",
          message: `it cannot be launched: ${error.message}. ${ranks}`,
        });
        return;
      }
      this.send({
        type: "LAUNCH_FAILED",
        message: `it could not be launched: ${(error as Error).message}. ${ranks}`,
        ...(saysNotRetryable(error) && { retryable: false as const }),
      });
    }
  }

  /** This deployment as teardown tells it from one of its name in another state dir. */
  private identity(): DeploymentIdentity {
    return { deployment: this.deployment, stateDir: this.stateDir };
  }

  /**
   * The deployment's cgroup for its local ranks, when `contain` is not off, a rank is local
   * and this machine lets this user contain processes; otherwise undefined, and why is logged.
   */
  private contain(): string | undefined {
    const { containment } = this.ports.procs;
    if (this.spec.contain === false || this.hosts.every((host) => host.kind !== "local")) {
      return undefined;
    }
    const { deployment } = this;
    if (containment === undefined) {
      this.logger.info({ deployment }, "ranks not contained: this machine has no cgroup v2");
      return undefined;
    }
    try {
      const cgroup = containment.create(deploymentCgroupName(this.identity()));
      this.logger.debug({ deployment, cgroup }, "ranks contained");
      return cgroup;
    } catch (error) {
      this.logger.info({ deployment, err: error }, "ranks not contained");
      return undefined;
    }
  }

  /**
   * Opens a site on every distinct ssh host, in parallel: the remote state dir, the
   * deployment's directory there and the mirrored lease. A site that opened is kept (the
   * teardown closes it) even when another fails; the first failure is thrown.
   */
  private async openSites(): Promise<void> {
    const targets = new Map<string, RankHost>(this.hosts.map((host) => [host.spec, host]));
    const opened = await Promise.allSettled(
      [...targets.values()].flatMap((target) =>
        target.kind === "ssh"
          ? [
              openRemoteSite({
                target,
                deployment: this.deployment,
                ...(this.spec.remote?.ssh !== undefined && { ssh: this.spec.remote.ssh }),
                ...(this.spec.remote?.stateDir !== undefined && {
                  stateDir: this.spec.remote.stateDir,
                }),
                launcherPid: this.ports.procs.selfPid,
                launcherHost: this.ports.host,
                procs: this.ports.procs,
                token: this.token,
                leaseStaleMs: this.timeouts.leaseStaleMs,
                clock: this.ports.clock,
                logger: this.logger,
                onLeaseLost: (reason) => this.leaseLost(`mirrored on ${target.spec}`, reason),
                ...(this.inspect !== undefined && { inspect: this.inspect }),
              }).then((site) => {
                const cancels = cancelFile({
                  files: site.files,
                  clock: this.ports.clock,
                  stateDir: site.stateDir,
                  deployment: this.deployment,
                });
                this.sites.set(target.spec, { site, cancels });
              }),
            ]
          : [],
      ),
    );
    const reasons = opened.flatMap((outcome) =>
      outcome.status === "rejected" ? [outcome.reason as unknown] : [],
    );
    const twice = reasons.find((reason) => reason instanceof HostNamedTwice);
    if (twice !== undefined) throw this.namedTwice(twice);
    if (reasons.length > 0) throw reasons[0];
  }

  /**
   * The launch's refusal when a site found this launch's own mirrored lease (`HostNamedTwice`):
   * it names that entry of `hosts` and the one whose site opened on a state dir of that path
   * first, in the order of `hosts`; when several opened on that path (one per machine), it
   * names them all as the candidates.
   */
  private namedTwice(twice: HostNamedTwice): ConfigError {
    const order = (a: string, b: string) => this.hostGroups.indexOf(a) - this.hostGroups.indexOf(b);
    const first = [...this.sites]
      .filter(([, { site }]) => site.stateDir === twice.stateDir)
      .map(([spec]) => spec)
      .sort(order);
    if (first.length === 0) return twice;
    const advice = `this launch's lease of deployment ${this.deployment} was already there. List each machine once in --hosts, under one name`;
    if (first.length > 1) {
      return new ConfigError(
        `--hosts (hosts) names one machine twice: ${twice.host} reaches the state dir ${twice.stateDir} of one of ${first.join(", ")} as the same user, where ${advice}`,
      );
    }
    const [a, b] = [first[0] as string, twice.host].sort(order);
    return new ConfigError(
      `--hosts (hosts) names one machine twice: ${a} and ${b} reach the same state dir ${twice.stateDir} as the same user, where ${advice}`,
    );
  }

  /**
   * Starts every rank, in rank order, the remote ones side by side. A local spawn blocks the
   * event loop (Node's spawn is synchronous, and a cgroup move is part of it), so the ranks
   * are spawned in slices of `SPAWN_SLICE_MS`, yielding between them: a signal or a time limit
   * that comes while a large world starts is handled then, and the ranks not yet spawned never
   * are. Returns each started rank's spawn.
   */
  private async spawnAll(port: number): Promise<Promise<void>[]> {
    const { clock } = this.ports;
    const spawns: Promise<void>[] = [];
    let sliceStart = clock.now();
    for (let rank = 0; rank < this.worldSize; rank++) {
      if (clock.now() - sliceStart >= SPAWN_SLICE_MS) {
        await new Promise((resolve) => clock.setTimeout(resolve, 0));
        if (!this.group.getSnapshot().matches("launching")) break;
        sliceStart = clock.now();
      }
      const spawning = this.spawn(rank, port);
      // Handled here at once: it may reject while the loop yields above, before the caller's
      // `allSettled` takes it, and an unhandled rejection ends the worker's process.
      spawning.catch(() => {});
      spawns.push(spawning);
    }
    return spawns;
  }

  /** Starts one rank on its host; a rank that cannot be started is told so, and this rejects. */
  private async spawn(rank: number, port: number): Promise<void> {
    const host = this.hosts[rank] as RankHost;
    const own: Record<string, string> = {
      RANK: String(rank),
      WORLD_SIZE: String(this.worldSize),
      LOCAL_RANK: String(this.localRank(rank)),
      LOCAL_WORLD_SIZE: String(this.hosts.filter((other) => other.spec === host.spec).length),
      GROUP_RANK: String(this.hostGroups.indexOf(host.spec)),
      GROUP_WORLD_SIZE: String(this.hostGroups.length),
      MASTER_ADDR: this.masterAddr,
      MASTER_PORT: String(port),
      BATON_DEPLOYMENT: this.deployment,
      BATON_STATE_DIR: this.stateDir,
      BATON_LAUNCHER_PID: String(this.ports.procs.selfPid),
      BATON_MARKER_HEARTBEAT_MS: String(this.timeouts.markerHeartbeatMs),
      BATON_LEASE_STALE_MS: String(this.timeouts.leaseStaleMs),
    };
    const site = this.sites.get(host.spec)?.site;
    let handle: ProcHandle | RemoteRankHandle;
    try {
      handle =
        site === undefined ? this.spawnLocal(rank, own) : await this.spawnRemote(site, rank, own);
    } catch (error) {
      this.ranks[rank]?.send({ type: "SPAWN_FAILED", reason: (error as Error).message });
      throw error;
    }
    const spawned: Spawned = {
      rank,
      pid: handle.pid,
      handle,
      exit: undefined,
      exitedAt: undefined,
      site,
      stopped: false,
    };
    // Remote ranks start in any order; everything the group reports stays in rank order.
    this.spawned.push(spawned);
    this.spawned.sort((a, b) => a.rank - b.rank);
    this.ranks[rank]?.send({ type: "SPAWNED", pid: handle.pid, pgid: handle.pid });
    void handle.exited.then(async (exit) => {
      spawned.exit = exit;
      spawned.exitedAt = this.ports.clock.now();
      void this.recordOutcome();
      this.logger.info(
        // Not `pid`: the log's own `pid` is this process's (a second `pid` key in its JSON line).
        { deployment: this.deployment, rank, rankPid: handle.pid, ...exit },
        "rank exited",
      );
      // A short rank can become ready and exit between two reads of the watch: read its
      // marker once more, so that one still saying "ready" counts as ready.
      await this.readMarker(spawned).catch((error: unknown) => {
        this.logger.warn({ deployment: this.deployment, rank, err: error }, "marker not readable");
      });
      this.ranks[rank]?.send({ type: "EXITED", code: exit.code, signal: exit.signal });
    });
  }

  /** The rank's index among the ranks on its host. */
  private localRank(rank: number): number {
    const { spec } = this.hosts[rank] as RankHost;
    return this.hosts.slice(0, rank).filter((other) => other.spec === spec).length;
  }

  /** A local rank: the operator's environment, under it `spec.env`, over it baton's. */
  private spawnLocal(rank: number, own: Record<string, string>): ProcHandle {
    const operator = this.spec.operatorEnv ?? process.env;
    const env: Record<string, string> = { ...this.spec.env };
    for (const [key, value] of Object.entries(operator)) if (value !== undefined) env[key] = value;
    return this.ports.procs.spawn({
      argv: this.argv,
      env: { ...env, ...own },
      ...(this.spec.cwd !== undefined && { cwd: this.spec.cwd }),
      logFile: this.paths.log(rank),
      newGroup: true,
      ...(this.cgroup !== undefined && { cgroup: this.cgroup }),
    });
  }

  /**
   * A remote rank: the remote login environment, under it `spec.env`, over it baton's (this
   * machine's environment stays here); its output goes to the local log file.
   */
  private spawnRemote(
    site: RemoteSite,
    rank: number,
    own: Record<string, string>,
  ): Promise<RemoteRankHandle> {
    const { remote } = this.spec;
    return site.spawnRank({
      argv: this.argv,
      env: own,
      ...(this.spec.env !== undefined && { envDefaults: { ...this.spec.env } }),
      ...(remote?.cwd !== undefined && { cwd: remote.cwd }),
      ...(remote?.guardGraceMs !== undefined && { guardGraceMs: remote.guardGraceMs }),
      logFile: this.paths.log(rank),
    });
  }

  private async writeManifest(): Promise<void> {
    const ranks: ManifestRank[] = this.spawned.map(({ rank, pid, site }) => ({
      rank,
      localRank: this.localRank(rank),
      host: (this.hosts[rank] as RankHost).spec,
      pid,
      pgid: pid,
      ...(site !== undefined && { stateDir: site.stateDir }),
    }));
    const manifest: Manifest = {
      deployment: this.deployment,
      launcher: { pid: this.ports.procs.selfPid, token: this.token, host: this.ports.host },
      ranks,
      worldSize: this.worldSize,
      argv: this.argv,
      startedAt: this.ports.clock.now(),
      stateDir: this.stateDir,
      ...(this.cgroup !== undefined && { cgroup: this.cgroup }),
    };
    await this.ports.files.writeAtomic(
      this.paths.manifest,
      encodeStateFile(MANIFEST_FORMAT, manifest),
    );
  }

  /**
   * Writes the outcome record (`outcome.json`) as it stands, once the ranks are being started:
   * each rank started, how each one that exited ended, and `ended` once the teardown is
   * verified. Writes go one after another, each taking the record as it is when it starts, so
   * changes that come during a write share the next one (a thousand ranks stopped together
   * are a few writes, not a thousand); one that fails is logged and passed by (the record is
   * for a person to read afterwards, never for deciding).
   */
  private recordOutcome(ended?: Outcome["ended"]): Promise<void> {
    if (ended !== undefined) this.outcomeEnded = ended;
    if (this.outcomeStartedAt === undefined) return this.outcomeWrites;
    if (this.outcomeQueued !== undefined) return this.outcomeQueued;
    const write = async () => {
      this.outcomeQueued = undefined;
      const text = encodeStateFile(OUTCOME_FORMAT, this.outcome(this.outcomeStartedAt as number));
      await this.ports.files.writeAtomic(this.paths.outcome, text);
    };
    this.outcomeQueued = this.outcomeWrites.then(write).catch((error: unknown) => {
      this.logger.warn({ deployment: this.deployment, err: error }, "outcome not recorded");
    });
    this.outcomeWrites = this.outcomeQueued;
    return this.outcomeQueued;
  }

  /** The outcome record as it stands: the ranks started, their exits, and how the group ended. */
  private outcome(startedAt: number): Outcome {
    return {
      deployment: this.deployment,
      launcher: { pid: this.ports.procs.selfPid, token: this.token },
      worldSize: this.worldSize,
      argv: this.argv,
      startedAt,
      ranks: this.spawned.map(({ rank, pid, exit, exitedAt }) => ({
        rank,
        host: (this.hosts[rank] as RankHost).spec,
        pid,
        ...(exit !== undefined && {
          exit: {
            at: exitedAt as number,
            ...(exit.code !== null && { code: exit.code }),
            ...(exit.signal !== null && { signal: exit.signal }),
          },
        }),
      })),
      ...(this.outcomeEnded !== undefined && { ended: this.outcomeEnded }),
    };
  }

  /** Reads every running rank's marker, every `watchMs`, while the group runs. */
  private watch(): void {
    this.watchTimer = this.ports.clock.setTimeout(async () => {
      try {
        await Promise.all(this.spawned.map((spawned) => this.readMarker(spawned)));
      } catch (error) {
        this.logger.warn({ deployment: this.deployment, err: error }, "markers not readable");
      }
      if (this.watching) this.watch();
    }, this.timeouts.watchMs);
  }

  private async readMarker({ rank, pid, site }: Spawned): Promise<void> {
    const actor = this.ranks[rank];
    if (actor === undefined) return;
    const watched = () => {
      const snapshot = actor.getSnapshot();
      return (
        snapshot.status === "active" && (snapshot.matches("loading") || snapshot.matches("ready"))
      );
    };
    if (!watched()) return;
    const path = (site?.paths ?? this.paths).marker(rank);
    try {
      const marker = await readStateFile(site?.files ?? this.ports.files, MARKER_FORMAT, path);
      if (marker === undefined) return;
      // The launch cleared earlier runs' markers: what is here now, this rank's process wrote.
      if (marker.deployment !== this.deployment || marker.rank !== rank) {
        this.markersNotCounted.set(rank, {
          rank,
          malformed: `${path} names deployment "${marker.deployment}" and rank ${marker.rank}, where a rank writes its own ($BATON_DEPLOYMENT "${this.deployment}", $RANK ${rank})`,
        });
        return;
      }
      if (marker.pid === pid) this.markersNotCounted.delete(rank);
      else this.markersNotCounted.set(rank, { rank, started: pid, inMarker: marker.pid });
      // The rank may have exited (and its actor stopped) while the marker was being read.
      if (watched()) actor.send({ type: "MARKER", marker });
    } catch (error) {
      if (!(error instanceof RankFileError)) throw error;
      // Its own words, not the error's advice to remove a file no baton process owns: the
      // rank wrote it, and must write it in the format.
      this.markersNotCounted.set(rank, {
        rank,
        malformed: `${error.path} is not a valid ${error.format} file: ${error.problem} (the format is documented in ARCHITECTURE.md, "Rank-side files and library")`,
      });
      this.logger.debug({ deployment: this.deployment, rank, err: error }, "unreadable marker");
    }
  }

  private stopWatching(): void {
    this.watching = false;
    this.ports.clock.clearTimeout(this.watchTimer);
  }

  /** One teardown attempt: every rank and its group, verified; then the files go. */
  private async runTeardown(): Promise<TeardownReport> {
    await this.launching;
    this.stopWatching();
    for (const actor of this.ranks)
      if (actor.getSnapshot().status === "active") actor.send({ type: "STOP" });
    const on = (site: RemoteSite | undefined) =>
      this.spawned.filter((spawned) => spawned.site === site).map((spawned) => spawned.pid);
    /** One host's teardown, the ranks there that it stopped marked so. */
    const marking =
      (site: RemoteSite | undefined, run: () => Promise<TeardownReport>) => async () => {
        const report = await run();
        for (const spawned of this.spawned) {
          if (spawned.site === site && report.stopped.includes(spawned.pid)) spawned.stopped = true;
        }
        return report;
      };
    const pids = on(undefined);
    const local = marking(undefined, () =>
      tearDown(
        {
          ...this.identity(),
          groups: pids,
          pids,
          sweepCandidates: () =>
            markerPids(this.ports.files, this.paths, this.identity(), this.ports.procs),
          heldByAnother: async () => holderOf(await this.lease?.takenBy(), this.paths.lease),
          launcherPid: this.ports.procs.selfPid,
          forbiddenGroups: this.forbiddenGroups,
          ...(this.cgroup !== undefined && { cgroup: this.cgroup }),
        },
        {
          procs: this.ports.procs,
          clock: this.ports.clock,
          logger: this.logger,
          hurry: this.hurry.signal,
          ...(this.spec.plantedBugs !== undefined && { plantedBugs: this.spec.plantedBugs }),
          ...(this.inspect !== undefined && { inspect: this.inspect }),
        },
        this.spec.teardown,
      ),
    );
    let report: TeardownReport;
    try {
      report = await tearDownAcrossHosts(
        local,
        [...this.sites.values()].map(({ site }) =>
          marking(site, () => site.tearDown(on(site), this.spec.teardown, this.hurry.signal)),
        ),
      );
    } catch (error) {
      this.teardownError = error as Error;
      this.send({ type: "TEARDOWN_FAILED", message: (error as Error).message });
      throw error;
    }
    // Verified dead: each child's exit is reported as soon as Node has reaped it.
    await Promise.all(this.spawned.map((spawned) => spawned.handle.exited));
    this.leftRunning = leftRunningIn(
      report.others,
      this.spawned.flatMap(({ site, rank, pid }) =>
        site === undefined ? [{ rank, pgid: pid, stopped: report.stopped.includes(pid) }] : [],
      ),
    );
    // Info, as a rank's exit is: the caller reports them with the group's end (`baton launch`).
    for (const { rank, ...left } of this.leftRunning) {
      this.logger.info(
        { deployment: this.deployment, rank, ...left },
        `baton stopped a process ${rank === undefined ? "the ranks" : `rank ${rank}`} left running`,
      );
    }
    // Another launcher of this name took the lease over (it went stale while this one lived):
    // the name's files are that launcher's now, and so are its outcome record and cgroup.
    let other = await this.lease?.takenBy();
    if (other === undefined) await this.recordEnd();
    // The local lease claims the name until every host's files are gone: released first, it
    // could go stale while a slow host was cleared, and a launch of the same name that took the
    // name over then lost its new mirrored lease and markers to this clear.
    const sites = [...this.sites.values()];
    this.sites.clear();
    const notRemoved = await Promise.all(
      sites.map(({ site }) =>
        site.close({ clear: true }).catch((error: unknown) => {
          // Its ranks are verified gone; what is left there is a stale lease and old markers.
          this.logger.warn(
            { deployment: this.deployment, host: site.host.target.spec, err: error },
            "remote deployment files not removed",
          );
          return undefined;
        }),
      ),
    );
    if (this.cgroup !== undefined && other === undefined) {
      await releaseCgroup(this.ports.procs, this.ports.clock, this.cgroup, this.logger);
    }
    try {
      // Renewed until the other files are gone: released first, it could go stale while they
      // were removed, and a launch of the same name that took the name over then lost its new
      // manifest and lease to this clear. Taken over, it is released and nothing removed.
      const cleared = await clearDeployment(this.ports.files, this.paths, { lease: this.lease });
      other = cleared.takenBy;
      notRemoved.push(cleared.folderNotRemoved);
      if (cleared.takenDuring !== undefined) {
        const during = cleared.takenDuring;
        this.takenOverBy = during;
        this.logger.warn(
          { deployment: this.deployment, otherPid: during.pid, lease: this.paths.lease },
          `another launcher (pid ${during.pid}) took over deployment ${this.deployment} while this launcher removed its files (its lease not renewed for over ${during.staleAfterMs} ms: this launcher was stopped, or could not write it): its lease ${this.paths.lease} was kept, but the manifest, markers, acks and cancel file removed before may have been that launcher's`,
        );
      }
    } catch (error) {
      // The processes are gone, and the lease is no longer renewed: a leftover manifest is
      // reaped by the next launch once that lease is stale (at once when it was removed).
      this.logger.warn({ deployment: this.deployment, err: error }, "deployment files not removed");
    }
    this.foldersNotRemoved = notRemoved.filter((folder) => folder !== undefined);
    // A warning the user sees: a group that ends without failing carries it to its caller
    // (`GroupExit.foldersNotRemoved`, which `baton launch` prints), so the log has it at info
    // there, as the processes left running; a failed group's error does not carry it.
    const failed = this.group.getSnapshot().context.failure !== undefined;
    for (const folder of this.foldersNotRemoved) {
      this.logger[failed ? "warn" : "info"](
        { deployment: this.deployment, ...folder },
        folderNotRemovedLine(folder),
      );
    }
    if (other !== undefined) {
      this.takenOverBy = other;
      this.warnTakenOver(other, report);
    }
    this.report = report;
    this.send({ type: "TEARDOWN_DONE" });
    return report;
  }

  /** Records how the group ended in its outcome record, once its teardown is verified. */
  private async recordEnd(): Promise<void> {
    const outcome = outcomeOf(this.group.getSnapshot().context);
    const reason =
      outcome.status === "failed"
        ? outcome.failure.message
        : outcome.status === "stopped"
          ? outcome.reason
          : undefined;
    await this.recordOutcome({
      at: this.ports.clock.now(),
      status: outcome.status,
      ...(reason !== undefined && { reason }),
      ...(this.leftRunning.length > 0 && { leftRunning: this.leftRunning }),
    });
  }

  /**
   * Tells that another launcher (`other`'s) took the name over: this launcher stopped only its
   * own ranks (`report`) and left that launcher's files and processes as they are.
   */
  private warnTakenOver(other: Lease, report: TeardownReport): void {
    const { paths } = this;
    const stopped = report.stopped.length > 0 ? `pids ${report.stopped.join(", ")}` : "none left";
    this.logger.warn(
      { deployment: this.deployment, otherPid: other.pid, lease: paths.lease },
      `another launcher (pid ${other.pid}) took over deployment ${this.deployment} after this launcher's lease went stale (not renewed for over ${other.staleAfterMs} ms: this launcher was stopped, or could not write it): only this launcher's own ranks were stopped (${stopped}); that launcher's ranks and its files (${paths.lease}, ${paths.manifest}, the markers, acks, cancel file and outcome record in ${paths.dir}) were left as they are`,
    );
  }

  /** A teardown that could not be verified: the group's own failure wins, if it has one. */
  private async onTeardownFailed(): Promise<void> {
    const { failure } = this.group.getSnapshot().context;
    const teardownError = this.teardownError as Error;
    this.settle(
      failure !== undefined ? await this.failureError(failure, teardownError) : teardownError,
    );
  }

  private async finish(outcome: GroupOutcome): Promise<void> {
    if (outcome.status === "failed") {
      this.settle(await this.failureError(outcome.failure));
      return;
    }
    let report: TeardownReport;
    try {
      report = this.report ?? (await this.stop());
    } catch (error) {
      // Stopped before launching while processes of this name could not be verified gone.
      this.settle(error as Error);
      return;
    }
    this.settle({
      deployment: this.deployment,
      status: outcome.status,
      ...(outcome.status === "stopped" && { reason: outcome.reason }),
      ranks: this.rankExits(),
      leftRunning: this.leftRunning,
      foldersNotRemoved: this.foldersNotRemoved,
      teardown: report,
    });
  }

  private settle(result: GroupExit | Error): void {
    if (this.settled) return;
    this.settled = true;
    if (result instanceof Error) {
      this.settleReady.reject(result);
      this.settleExit.reject(result);
      return;
    }
    this.settleReady.reject(
      new RankGroupError(
        "STOPPED",
        `deployment ${this.deployment} ${result.status === "stopped" ? `was stopped (${result.reason})` : "finished"} before every rank was ready`,
        this.deployment,
      ),
    );
    this.settleExit.resolve(result);
  }

  private rankExits(): RankExit[] {
    return this.spawned.map(({ rank, pid, exit }) => ({
      rank,
      pid,
      code: exit?.code ?? null,
      signal: exit?.signal ?? null,
    }));
  }

  /** Whether no rank wrote a marker the launcher read, its own or not: a program that writes none. */
  private noMarkerAtAll(): boolean {
    return (
      this.markersNotCounted.size === 0 &&
      this.ranks.every((actor) => actor.getSnapshot().context.phase === undefined)
    );
  }

  /** The group's failure as an error a person can act on, quoting the rank's log. */
  private async failureError(
    failure: GroupFailure,
    teardownError?: Error,
  ): Promise<RankGroupError> {
    const group = this.group.getSnapshot().context;
    /** The ranks the load timeout found not ready: the first one's log is quoted. */
    const waiting =
      failure.code === "BARRIER_TIMEOUT"
        ? this.ranks.map((_, rank) => rank).filter((rank) => !passedBarrier(group, rank))
        : [];
    const rank = failure.rank ?? waiting[0];
    const logFile = rank !== undefined ? this.paths.log(rank) : undefined;
    const exitCode =
      failure.exit === undefined
        ? failure.shellCode
        : (failure.exit.code ??
          128 + (constants.signals[failure.exit.signal as NodeJS.Signals] ?? 0));
    const advice: Record<GroupFailure["code"], string> = {
      REAP_FAILED: "",
      DEPLOYMENT_BLOCKED: "",
      LAUNCH_FAILED: "",
      BARRIER_TIMEOUT: ` A rank is ready once it writes ${this.paths.dir}/rank-R.marker.json with phase "ready" (the baton rank library and examples/ranks/rank.py do); raise the load timeout (--load-timeout-ms, or timeouts.loadTimeoutMs) if loading takes longer.${this.noMarkerAtAll() ? NO_MARKER_AT_ALL : markersNotCounted([...this.markersNotCounted.values()])}`,
      RANK_FAILED:
        this.worldSize === 1
          ? ""
          : otherRanksEnded(
              this.spawned
                .filter((other) => other.rank !== failure.rank)
                .map(({ rank, exit, stopped }) => ({
                  rank,
                  exit,
                  // Without a verified teardown, whom it signalled is not known.
                  stopped: this.report === undefined || stopped,
                })),
            ),
      RANK_LOST:
        " A rank rewrites its marker every heartbeat; one that stops doing so is hung or cut off, and the group was stopped.",
      LEASE_LOST: ` Ranks stop on their own once the launcher's lease is ${this.timeouts.leaseStaleMs} ms old, so the launcher stopped them first. Check that the state dir takes writes (disk full, quota, read-only, a network file system gone)${this.hosts.some((host) => host.kind === "ssh") ? " and that its ssh hosts answer" : ""}, then launch again.`,
    };
    // A relaunch of the name appends to the log: quote only what this launch's rank wrote.
    const logStart = this.spawned.find((spawned) => spawned.rank === rank)?.handle.logStart;
    const quoted = logFile !== undefined ? await this.ports.logTail(logFile, logStart) : "";
    const tail =
      logFile === undefined
        ? ""
        : waiting.length > 1
          ? ` Their logs are ${logNames(waiting)} in ${this.paths.dir}.\nRank ${rank}'s: ${quoted}`
          : ` Its log is ${logFile}.\n${quoted}`;
    const notRun =
      failure.code === "RANK_FAILED" && failure.exit?.signal === null && failure.exit.code !== null
        ? commandNotRun(failure.exit.code, quoted)
        : undefined;
    const host = rank !== undefined ? this.hosts[rank] : undefined;
    const signalOrCode =
      failure.code === "RANK_FAILED" && failure.exit?.code != null && host?.kind === "ssh"
        ? remoteExitCodeNote(failure.exit.code, host.spec)
        : "";
    const other = this.takenOverBy;
    const taken =
      other === undefined
        ? ""
        : ` Another launcher (pid ${other.pid}) took this deployment's name over meanwhile, as this launcher's lease was not renewed for over ${other.staleAfterMs} ms (this launcher was stopped, or could not write it): only this launcher's own ranks were stopped, and that launcher's ranks and files were left as they are. Launch again once that launch has ended, or under another --name.`;
    const stuck =
      teardownError !== undefined
        ? ` The teardown that followed is not verified either: ${teardownError.message}`
        : "";
    // The quoted log comes last: a sentence after it would read as the log's last line.
    return new RankGroupError(
      failure.code,
      `deployment ${this.deployment}: ${failure.message}.${signalOrCode}${other === undefined ? advice[failure.code] : taken}${notRun?.advice ?? ""}${stuck}${tail}`,
      this.deployment,
      {
        ...(rank !== undefined && { rank }),
        ...(exitCode !== undefined && { exitCode }),
        ...(logFile !== undefined && { logFile }),
        ...(teardownError !== undefined && { teardownError }),
      },
      failure.retryable ?? notRun?.retryable,
    );
  }

  /** Writes a cancel epoch, then waits (bounded) for every running rank's own evidence. */
  private async drain(order: {
    scope: "all" | "requests";
    ids?: readonly string[];
    reason: string;
  }): Promise<DrainReport> {
    await this.ready;
    const { clock } = this.ports;
    const started = clock.now();
    const locations: Location[] = [
      { site: undefined, cancels: this.cancels },
      ...this.sites.values(),
    ];
    // Each location's file gets its own epoch (`max(now, previous + 1)` of that file), and its
    // ranks are judged against it; the report names the highest.
    const written = await Promise.all(
      locations.map(async (location) => ({
        ...location,
        epoch: (await location.cancels.write(order)).epoch,
      })),
    );
    const epoch = Math.max(...written.map((location) => location.epoch));
    for (;;) {
      const running = this.spawned.filter((spawned) => spawned.exit === undefined);
      const evidence = await Promise.all(
        written.map((location) =>
          location.cancels.evidence(
            location.epoch,
            running.filter((spawned) => spawned.site === location.site).map((s) => s.rank),
          ),
        ),
      );
      const ranks = evidence.flat().sort((a, b) => a.rank - b.rank);
      const drained = ranks.every(
        (rank) => rank.applied && (order.scope === "requests" || rank.active === 0),
      );
      const elapsedMs = clock.now() - started;
      if (
        drained ||
        elapsedMs >= this.timeouts.drainMs ||
        !this.group.getSnapshot().matches("running")
      ) {
        return { epoch, drained, elapsedMs, ranks };
      }
      await new Promise<void>((wake) => clock.setTimeout(() => wake(), this.timeouts.watchMs));
    }
  }

  /** Sends to the group unless it has finished. */
  /** The watchdog of a lease (`where`: its path, or the host it is mirrored on) gave it up. */
  private leaseLost(where: string, reason: string): void {
    // Info: the group fails with it (LEASE_LOST), which its caller reports (`baton launch`).
    this.logger.info({ deployment: this.deployment, reason }, `lease ${where} lost`);
    this.send({
      type: "LEASE_LOST",
      message: `the launcher could not renew its lease ${where}: ${reason}`,
    });
  }

  private send(event: GroupEvent): void {
    if (this.group.getSnapshot().status === "active") this.group.send(event);
  }
}

/** Most logs named one by one; more are named by their pattern and their ranks. */
const MOST_LOGS_NAMED = 4;

/**
 * The names of `ranks`' logs in their deployment's folder, briefly: `rank-0.log, rank-1.log
 * and rank-3.log`, or for more than a few `rank-R.log for ranks 0-39`.
 */
function logNames(ranks: readonly number[]): string {
  if (ranks.length > MOST_LOGS_NAMED) return `rank-R.log for ${rankList(ranks)}`;
  return new Intl.ListFormat("en").format(ranks.map((rank) => `rank-${rank}.log`));
}

/** `size` characters of `[a-z0-9]` from the Entropy port. */
function randomId(entropy: Entropy, size: number): string {
  let id = "";
  for (let i = 0; i < size; i++)
    id += ID_ALPHABET[Math.floor(entropy.random() * ID_ALPHABET.length)];
  return id;
}
