import { BatonError, RankGroupError, TeardownError } from "../errors.ts";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import { deploymentPaths } from "../rank/deploymentPaths.ts";
import { controlFiles } from "../runtime/clearDeployment.ts";
import { launchGroup } from "../runtime/launchGroup.ts";
import { createLogger } from "../runtime/logger.ts";
import type { Files, ProcExit, Procs } from "../runtime/ports.ts";
import type { GroupExit, RankGroup, RankGroupTimeouts } from "../runtime/rankGroup.ts";
import { reapDeployments } from "../runtime/reaper.ts";
import {
  DEFAULT_TEARDOWN_TIMEOUTS,
  type TeardownTimeouts,
  teardownDeadlineMs,
} from "../runtime/tearDown.ts";
import { type GroupProgress, watchGroup } from "../viz/groupProgress.ts";
import type { SimClock } from "./simClock.ts";
import type { SimEntropy } from "./simEntropy.ts";
import { SimFiles } from "./simFiles.ts";
import type { SimInvariant } from "./simInvariants.ts";
import type { SimLaunch } from "./simLaunch.ts";
import { type SimProcess, SimProcs, type SimSelf } from "./simProcs.ts";
import {
  rankArgv,
  SIM_RANK,
  type SimRankBehaviour,
  type SimRankEvent,
  simRankProgram,
} from "./simRankProgram.ts";

const STATE_DIR = "/sim/run";
/** Fewer steps than the real defaults, same logic: markers read every second, a 60 s barrier. */
const GROUP_TIMEOUTS: Partial<RankGroupTimeouts> = { watchMs: 1_000, loadTimeoutMs: 60_000 };
const TEARDOWN: Partial<TeardownTimeouts> = { pollMs: 250 };
/**
 * The simulated machine's name, written in its leases and manifests: not this machine's, whose
 * length would move the point a torn write cuts them at, and so a seed's trace, per machine.
 */
const SIM_HOST = "sim";
/**
 * A stop() settles (verified, or naming its survivors) within this: its own teardown, after a
 * launch still reaping a crashed launcher's orphans (one more teardown), and slack for writes.
 */
const STOP_BOUND_MS =
  2 * teardownDeadlineMs({ ...DEFAULT_TEARDOWN_TIMEOUTS, ...TEARDOWN }) + 10_000;
/** How often a rank checks its launcher. */
const RANK_WATCH_MS = 2_000;
/** A teardown or reap that is not verified, or a blocked launch, is tried again this much later. */
const RETRY_AFTER_MS = 30_000;
/** Every group must have ended, verified, and every orphan been reaped this long after the start. */
const LIVENESS_MS = 20 * 60_000;
const LAUNCHER = "sim-launcher";
const REAPER = "sim-reaper";
const STRANGER = "stranger";
const SIGNAL_NUMBERS: Record<string, number> = { SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
const SILENT = createLogger({ level: "silent", pretty: false });

/** How the rank-group scenario reports what it sees and what broke. */
export interface RankGroupHooks {
  trace(line: string): void;
  /** Invariant `invariant` broke: `detail` says what happened (`violationMessage` says the rest). */
  fail(invariant: SimInvariant, detail: string): void;
  /** Each launch's group and rank phases as they change (the dashboard's replay). */
  groupProgress?(progress: GroupProgress): void;
}

export interface RankGroupScenarioOptions {
  /** The largest world size drawn (1 to this many ranks per group). */
  maxWorld: number;
  plantedBugs: readonly PlantedBug[];
  /** The launches to make, instead of drawn ones (`SimulateOptions.launches`). */
  launches?: readonly SimLaunch[] | undefined;
}

/** What one launch is to do, drawn from the seed or given (`SimLaunch`). */
interface LaunchPlan {
  ranks: readonly SimRankBehaviour[];
  /** The operator stops the group this long after the launch (Ctrl-C); never when absent. */
  stopAfterMs?: number;
  /**
   * The launcher is killed this long after the launch, or `afterMs` after it starts its
   * `atFileWrite.n`-th write or removal of a file, if that comes first: a crash in the middle
   * of its first lease, its manifest, or the clearing of its files. A drawn crash is relaunched
   * (`relaunchAfterMs` later, under the same name or not); a given one is not.
   */
  crash?: {
    afterMs?: number;
    torn: boolean;
    relaunchAfterMs?: number;
    sameName?: boolean;
    atFileWrite?: { n: number; afterMs: number };
  };
  /** A stranger takes the pid of a rank that exited (pid reuse), by rank. */
  reuse: Map<number, { afterMs: number; foreignUser: boolean }>;
  /** The launcher starts its ranks in a cgroup (`contain`), and then helpers may empty their environment. */
  contain: boolean;
  /** The state dir's disk refuses every write for `forMs`, `afterMs` after the launch. */
  diskFull?: { afterMs: number; forMs: number };
}

/** One launcher process and its group. */
interface Launch {
  n: number;
  plan: LaunchPlan;
  self: SimSelf;
  group: RankGroup;
  /** Rank pids this launch started, with their rank. */
  ranks: Map<number, number>;
  /** How each of its ranks died, with the step it happened in. */
  deaths: Map<number, { exit: ProcExit; step: number }>;
  /** Its ranks that took their launcher for dead, by pid. */
  orphaned: Set<number>;
  /** The step the operator asked to stop in. */
  stopStep?: number;
  crashed: boolean;
  /** Settled with a verified teardown, or blocked before launching anything. */
  finished: boolean;
  /** A stop() retry is scheduled. */
  retrying?: boolean;
  /** When the stop() still pending was called. */
  stopSince?: number;
}

/**
 * The rank-group part of a simulated world: the real `launchGroup` (group and rank machines,
 * lease, manifest, barrier, marker watch, verified teardown) and the real reaper on a
 * simulated process table, simulated files and the simulation's clock, launching simulated
 * ranks ({@link simRankProgram}) drawn from the seed: world size, ranks that fail with a code,
 * ignore TERM, survive a KILL, hang in D, stay zombies, ignore their launcher's death, start a
 * helper that leaves the group; strangers that take a dead rank's pid; and a launcher that
 * crashes (its writes cut, maybe torn) and is relaunched, under the same name or another, so
 * that the new launch's reaper must clear the orphans; and a state dir whose disk is full for
 * a while. With `launches` it makes those instead, as given (`SimLaunch`: nothing drawn, no
 * relaunch after a crash, no retry of a refused launch). The operator stops the group at a drawn
 * moment and retries while the teardown is not verified; a final `baton reap` clears what a
 * failed reap left. After every step it checks the rank-group invariants (8–14 of
 * `SIM_INVARIANTS`: 8 verified teardown ⇒ nothing of the deployment alive, 9 no signal
 * outside a deployment, 10 the manifest exists while the deployment has a live process, and
 * a verified teardown leaves nothing of the deployment's directory but the ranks' logs (no
 * manifest, lease, cancel file, marker, ack, or temp file of a killed writer), 11 a failing
 * rank fails its group with its exit code, 12 the next launch's reaper kills a crashed
 * launcher's orphans before launching, 13 stop() settles within the teardown's deadlines (a
 * teardown that trusts a dead rank waits forever for its exit), 14 a live launcher gives its
 * ranks up before they take it for dead), and that it
 * is all over within 20 virtual minutes (invariant 6).
 *
 * @example
 * ```ts
 * const groups = new RankGroupScenario(clock, entropy.fork("ranks"), { maxWorld: 4, plantedBugs: [] }, hooks);
 * groups.start();
 * // ... run the clock; after every step:
 * groups.check();
 * groups.done; // true once every group ended verified and no orphan is left
 * ```
 */
export class RankGroupScenario {
  readonly procs: SimProcs;
  readonly files: SimFiles;
  done = false;
  private readonly launches: Launch[] = [];
  private readonly crashPoints: SimEntropy;
  private readonly reaperCrashPoints: SimEntropy;
  private readonly containment: SimEntropy;
  private readonly diskFulls: SimEntropy;
  /** Deployments seen with a process in disk-sleep (a reap may legitimately fail on them). */
  private readonly sawDiskSleep = new Set<string>();
  private checkedSignals = 0;
  private step = 0;
  private startedAt = 0;
  private reaping = false;
  /** Launches scheduled and not started yet. */
  private scheduled = 0;
  private newborn: SimSelf | undefined;
  /** The simulation is over: later continuations of its dead world are not traced. */
  private closed = false;
  /** Each deployment's manifest path. */
  private readonly manifests = new Map<string, string>();
  /**
   * The ranks of any deployment among `processes` (zombies too), in pid order, each with its
   * deployment and that deployment's manifest: invariant 10 reads it for every live rank after
   * every step, and it changes only when a process is started or reaped.
   */
  private ranks: readonly Rank[] = [];
  private ranksOf: readonly SimProcess[] | undefined;

  constructor(
    private readonly clock: SimClock,
    private readonly entropy: SimEntropy,
    private readonly options: RankGroupScenarioOptions,
    private readonly hooks: RankGroupHooks,
  ) {
    this.files = new SimFiles(entropy.fork("files"), (line) => this.trace(line));
    this.crashPoints = entropy.fork("crash-points");
    this.reaperCrashPoints = entropy.fork("reaper-crash-points");
    this.containment = entropy.fork("containment");
    this.diskFulls = entropy.fork("disk-full");
    this.procs = new SimProcs({
      clock,
      cgroups: true,
      programs: {
        [SIM_RANK]: simRankProgram({
          files: this.files,
          procs: { inspect: (pid) => this.procs.inspect(pid) },
          watchEveryMs: RANK_WATCH_MS,
          onEvent: (event) => this.onRank(event),
        }),
        [LAUNCHER]: () => ({
          label: "launcher",
          onTerm: "ignore",
          main: (self) => this.born(self),
        }),
        [REAPER]: () => ({ label: "reaper", onTerm: "ignore", main: (self) => this.born(self) }),
      },
    });
  }

  /** Schedules the launches given, or draws the first launch and schedules it. */
  start(): void {
    this.startedAt = this.clock.now();
    const { launches } = this.options;
    if (launches === undefined) {
      this.schedule(this.drawPlan(true), undefined, this.entropy.int(0, 5_000));
      return;
    }
    for (const launch of launches) this.schedule(givenPlan(launch), launch.name, launch.atMs ?? 0);
  }

  /** The simulation is over (its trace is closed). */
  close(): void {
    this.closed = true;
  }

  private trace(line: string): void {
    if (!this.closed) this.hooks.trace(line);
  }

  /** The checks after a step: signals, manifests, liveness. */
  check(): void {
    if (this.done) return;
    this.step++;
    const signals = this.procs.signals;
    for (; this.checkedSignals < signals.length; this.checkedSignals++) {
      const record = signals[this.checkedSignals]!;
      if (record.signal === 0) continue;
      const to = record.receivers.map((r) => r.pid).join(",");
      this.trace(
        `ranks signal ${record.signal} ${record.target} ${record.id} ${record.outcome}${to ? ` -> ${to}` : ""}`,
      );
      for (const receiver of record.receivers) {
        if (deploymentOf(receiver.label) === undefined) {
          this.hooks.fail(
            9,
            `${record.signal} (to ${record.target} ${record.id}) reached pid ${receiver.pid} (${receiver.label ?? "no label"}), which is no rank of any deployment`,
          );
        }
      }
    }
    for (const { proc, deployment, manifest } of this.rankProcesses()) {
      if (proc.state === "zombie") continue;
      if (proc.state === "disk-sleep") this.sawDiskSleep.add(deployment);
      if (this.files.peek(manifest) === undefined) {
        this.hooks.fail(
          10,
          `pid ${proc.pid} (${proc.label}) is alive but ${deploymentPaths(STATE_DIR, deployment).manifest} is gone`,
        );
      }
    }
    if (this.scheduled === 0 && this.launches.every((l) => l.finished || l.crashed)) {
      const left = this.orphans();
      if (left.length === 0) {
        this.done = true;
        this.trace("ranks over");
        return;
      }
      if (!this.reaping) {
        // On the clock, not now: the runner fires the next timer right after this check.
        this.reaping = true;
        this.clock.setTimeout(() => this.reap(left), 0);
      }
    }
    for (const launch of this.launches) {
      const since = launch.stopSince;
      if (since !== undefined && !launch.crashed && this.clock.now() > since + STOP_BOUND_MS) {
        const alive = this.alive(launch.group.deployment);
        this.hooks.fail(
          13,
          `stop() of ${launch.group.deployment} has not settled ${this.clock.now() - since} ms after it was called (bound ${STOP_BOUND_MS} ms); alive: ${alive.map((p) => `${p.pid} (${p.label}, ${p.state})`).join(", ") || "none"}`,
        );
      }
    }
    if (this.clock.now() > this.startedAt + LIVENESS_MS) {
      this.hooks.fail(
        6,
        `the rank groups are not over ${LIVENESS_MS} virtual ms after the start: ${this.launches.map((l) => `launch ${l.n} ${l.group.deployment} ${l.crashed ? "crashed" : l.finished ? "finished" : "running"}`).join("; ")}`,
      );
    }
  }

  private drawPlan(first: boolean): LaunchPlan {
    const e = this.entropy;
    const world = e.int(1, Math.max(1, this.options.maxWorld));
    const ranks: SimRankBehaviour[] = [];
    const reuse = new Map<number, { afterMs: number; foreignUser: boolean }>();
    for (let rank = 0; rank < world; rank++) {
      const b: SimRankBehaviour = {};
      if (!e.chance(0.05)) b.loadMs = e.int(100, 5_000);
      if (e.chance(0.15)) b.exit = { afterMs: e.int(200, 20_000), code: e.int(1, 3) };
      else if (e.chance(0.25)) b.exit = { afterMs: e.int(200, 30_000), code: 0 };
      if (e.chance(0.3)) b.ignoreTerm = true;
      if (e.chance(0.2)) b.killsToDie = 2;
      if (e.chance(0.12)) b.diskSleep = { afterMs: e.int(0, 10_000), forMs: e.int(100, 60_000) };
      if (e.chance(0.3)) b.zombieMs = e.int(1, 3_000);
      if (e.chance(0.2)) b.deaf = true;
      if (e.chance(0.3)) {
        b.helper = {
          ...(e.chance(0.4) && { setsidAfterMs: e.int(0, 3_000) }),
          ...(e.chance(0.3) && { ignoreTerm: true }),
        };
      }
      ranks.push(b);
      if (e.chance(0.3)) {
        reuse.set(rank, { afterMs: e.int(0, 2_000), foreignUser: e.chance(0.4) });
      }
    }
    // Containment, and a helper that empties its environment (found only through the cgroup,
    // so only drawn in a contained launch), come from a stream of their own, as crash points
    // do: adding them left every other draw of a seed as it was.
    const contain = this.containment.chance(0.5);
    if (contain) {
      for (const b of ranks) if (b.helper && this.containment.chance(0.5)) b.helper.clearEnv = true;
    }
    // Crash points come from a stream of their own, so that adding them left every other
    // draw of a seed as it was.
    const point = this.crashPoints;
    const atFileWrite = () => ({ n: point.int(1, 12), afterMs: point.int(0, 6) });
    // A relaunch may crash too, mostly in its own reap of the crashed launch before it.
    const crash =
      first && e.chance(0.25)
        ? {
            afterMs: e.int(0, 20_000),
            torn: e.chance(0.5),
            relaunchAfterMs: e.int(100, 5_000),
            sameName: e.chance(0.5),
            ...(point.chance(0.5) && { atFileWrite: atFileWrite() }),
          }
        : !first && point.chance(0.2)
          ? {
              afterMs: point.int(0, 20_000),
              torn: point.chance(0.5),
              relaunchAfterMs: point.int(100, 5_000),
              sameName: point.chance(0.5),
              atFileWrite: atFileWrite(),
            }
          : undefined;
    // A full disk under the state dir, from a stream of its own too: long enough, and the
    // launcher cannot renew its lease and must give its ranks up before they take it for dead.
    const full = this.diskFulls;
    const diskFull = full.chance(0.25)
      ? { afterMs: full.int(0, 10_000), forMs: full.int(1_000, 45_000) }
      : undefined;
    return {
      ranks,
      stopAfterMs: e.int(2_000, 40_000),
      reuse,
      contain,
      ...(crash && { crash }),
      ...(diskFull && { diskFull }),
    };
  }

  private schedule(plan: LaunchPlan, name: string | undefined, afterMs: number): void {
    this.scheduled++;
    this.clock.setTimeout(() => {
      this.scheduled--;
      this.launch(plan, name);
    }, afterMs);
  }

  /** Starts a launcher process that launches a group with `plan`. */
  private launch(plan: LaunchPlan, name: string | undefined): void {
    const n = this.launches.length + 1;
    const self = this.spawnSelf(LAUNCHER);
    const ranks = new Map<number, number>();
    let launch!: Launch;
    const procs = this.view(
      self.pid,
      () => {
        if (ranks.size === 0) this.checkReaped(launch);
      },
      ranks,
    );
    const group = launchGroup({
      argv: rankArgv(plan.ranks),
      worldSize: plan.ranks.length,
      stateDir: STATE_DIR,
      ...(name !== undefined && { name }),
      operatorEnv: {},
      contain: plan.contain,
      timeouts: GROUP_TIMEOUTS,
      teardown: TEARDOWN,
      ports: {
        procs,
        files: this.crashingFiles(self, plan.crash?.atFileWrite, () => this.crash(launch)),
        clock: self.clock,
        entropy: this.entropy.fork(`launch-${n}`),
        freePort: async () => 29_500 + n,
        logTail: async () => "(a simulated rank writes no log)",
        host: SIM_HOST,
      },
      logger: SILENT,
      plantedBugs: this.options.plantedBugs,
      ...(this.hooks.groupProgress && { inspect: watchGroup(this.hooks.groupProgress) }),
    });
    launch = {
      n,
      plan,
      self,
      group,
      ranks,
      deaths: new Map(),
      orphaned: new Set(),
      crashed: false,
      finished: false,
    };
    this.launches.push(launch);
    const { deployment } = group;
    this.trace(
      `ranks launch ${n} ${deployment} by launcher ${self.pid}${plan.contain ? " contained" : ""}: ${JSON.stringify(plan.ranks)} stop ${plan.stopAfterMs === undefined ? "never" : `+${plan.stopAfterMs}`}${plan.crash ? ` crash ${JSON.stringify(plan.crash)}` : ""}${plan.diskFull ? ` disk full +${plan.diskFull.afterMs} for ${plan.diskFull.forMs} ms` : ""}`,
    );
    launch.group.ready.then(
      () => this.trace(`ranks ${deployment} ready`),
      () => {},
    );
    launch.group.wait().then(
      (exit) => this.settled(launch, exit),
      (error: Error) => this.settled(launch, error),
    );
    const { stopAfterMs, crash, diskFull } = plan;
    if (stopAfterMs !== undefined) self.clock.setTimeout(() => this.stop(launch), stopAfterMs);
    if (crash?.afterMs !== undefined) {
      this.clock.setTimeout(() => this.crash(launch), crash.afterMs);
    }
    if (diskFull !== undefined) {
      this.clock.setTimeout(() => {
        this.trace(`ranks disk full for ${diskFull.forMs} ms`);
        this.files.refuseWrites(this.clock.now() + diskFull.forMs);
      }, diskFull.afterMs);
    }
  }

  /**
   * The files of process `self`; with a crash `point`, `crash` is called `point.afterMs`
   * after the process starts its `point.n`-th write or removal of a file, or, for 0, right
   * before it (the call then never happens: its process is dead).
   */
  private crashingFiles(
    self: SimSelf,
    point: { n: number; afterMs: number } | undefined,
    crash: () => void,
  ): Files {
    const files = this.files.port(self.clock);
    if (point === undefined) return files;
    let count = 0;
    const counted = () => {
      if (++count !== point.n) return;
      if (point.afterMs === 0) crash();
      else this.clock.setTimeout(crash, point.afterMs);
    };
    return {
      ...files,
      writeAtomic: (path, data, mode) => {
        counted();
        return files.writeAtomic(path, data, mode);
      },
      remove: (path) => {
        counted();
        return files.remove(path);
      },
    };
  }

  /**
   * The process table as process `pid` sees it: its own pid, what it spawns (told to
   * `onSpawn` first, and counted as ranks), and no signal once it is dead.
   */
  private view(pid: number, onSpawn?: () => void, ranks?: Map<number, number>): Procs {
    const procs = this.procs;
    const alive = () => {
      const proc = procs.process(pid);
      return proc !== undefined && proc.state !== "zombie";
    };
    const containment = procs.containment;
    return {
      selfPid: pid,
      // A dead process makes no cgroup and removes none; reading one is the table's business.
      ...(containment !== undefined && {
        containment: {
          create: (name) => {
            if (!alive()) throw new Error(`process ${pid} is gone`);
            return containment.create(name);
          },
          members: (cgroup) => containment.members(cgroup),
          list: () => containment.list(),
          remove: (cgroup) => alive() && containment.remove(cgroup),
          kill: (cgroup) => alive() && containment.kill(cgroup),
        },
      }),
      spawn: (options) => {
        onSpawn?.();
        const handle = procs.spawn(options);
        ranks?.set(handle.pid, ranks.size);
        return handle;
      },
      signal: (target, signal) => (alive() ? procs.signal(target, signal) : "ESRCH"),
      signalGroup: (target, signal) => (alive() ? procs.signalGroup(target, signal) : "ESRCH"),
      inspect: (target) => procs.inspect(target),
      list: () => procs.list(),
      environ: (target) => procs.environ(target),
    };
  }

  /** The operator asks the group to stop, and asks again while its teardown is unverified. */
  private stop(launch: Launch): void {
    if (launch.finished || launch.crashed) return;
    launch.stopStep ??= this.step;
    launch.stopSince ??= this.clock.now();
    this.trace(`ranks stop ${launch.group.deployment}`);
    launch.group.stop("stopped by the simulated operator").then(
      () => {
        launch.stopSince = undefined;
        this.verified(launch, "stop()");
      },
      (error: Error) => {
        launch.stopSince = undefined;
        if (!(error instanceof TeardownError)) {
          this.hooks.fail(6, `stop() of ${launch.group.deployment} failed: ${error.message}`);
          return;
        }
        this.unverified(launch, error);
        if (launch.finished) launch.self.exit(0);
      },
    );
  }

  private settled(launch: Launch, result: GroupExit | Error): void {
    const { deployment } = launch.group;
    if (launch.crashed) return;
    if (!(result instanceof Error)) {
      this.trace(`ranks ${deployment} ${result.status}`);
      const failed = [...launch.deaths].find(
        ([, { exit, step }]) =>
          exit.signal === null &&
          exit.code !== 0 &&
          (launch.stopStep === undefined || step < launch.stopStep),
      );
      if (failed !== undefined) {
        this.hooks.fail(
          11,
          `rank ${launch.ranks.get(failed[0])} (pid ${failed[0]}) of ${deployment} exited with code ${failed[1].exit.code}, yet the group ${result.status}`,
        );
      }
      this.verified(launch, `wait() ${result.status}`);
      return;
    }
    const code = result instanceof BatonError ? result.code : result.name;
    this.trace(`ranks ${deployment} failed ${code}`);
    if (code === "DEPLOYMENT_BLOCKED" || code === "REAP_FAILED") {
      launch.finished = true;
      launch.self.exit(1);
      // Given launches are all there is: one refused is not tried again.
      if (this.options.launches === undefined) {
        this.schedule(this.drawPlan(false), deployment, RETRY_AFTER_MS);
      }
      return;
    }
    if (result instanceof RankGroupError && result.code === "RANK_FAILED") {
      this.checkFailure(launch, result);
      this.checkNotOrphaned(launch, result);
    }
    if (result instanceof TeardownError) {
      this.unverified(launch, result);
    } else if (result instanceof RankGroupError && result.details.teardownError !== undefined) {
      this.unverified(launch, result.details.teardownError);
    } else {
      this.verified(launch, `wait() ${code}`);
    }
  }

  /** Invariant 11: the group names the rank that failed and the code it really exited with. */
  private checkFailure(launch: Launch, error: RankGroupError): void {
    const { rank, exitCode } = error.details;
    const pid = [...launch.ranks].find(([, r]) => r === rank)?.[0];
    const death = pid === undefined ? undefined : launch.deaths.get(pid);
    const actual =
      death === undefined
        ? undefined
        : (death.exit.code ?? 128 + (SIGNAL_NUMBERS[death.exit.signal ?? ""] ?? 0));
    this.trace(`ranks ${launch.group.deployment} RANK_FAILED rank ${rank} code ${exitCode}`);
    if (actual === undefined || actual !== exitCode || actual === 0) {
      this.hooks.fail(
        11,
        `${launch.group.deployment} failed naming rank ${rank} with code ${exitCode}, but that rank ${death === undefined ? "has not exited" : `exited with ${JSON.stringify(death.exit)}`}`,
      );
    }
  }

  /**
   * Invariant 14: a launcher that never crashed gives its ranks up itself (`LEASE_LOST` when it
   * cannot renew its lease) before any of them takes it for dead, so its group never fails
   * because a rank left orphaned.
   */
  private checkNotOrphaned(launch: Launch, error: RankGroupError): void {
    const pid = [...launch.ranks].find(([, r]) => r === error.details.rank)?.[0];
    if (pid === undefined || !launch.orphaned.has(pid)) return;
    this.hooks.fail(
      14,
      `${launch.group.deployment} failed naming rank ${error.details.rank} (pid ${pid}), which left because it took its launcher ${launch.self.pid} for dead, and that launcher never crashed`,
    );
  }

  /** Invariants 8 and 10 after a verified teardown: nothing alive, only the logs left. */
  private verified(launch: Launch, how: string): void {
    if (!launch.finished) {
      launch.finished = true;
      const { deployment } = launch.group;
      this.trace(`ranks ${deployment} verified (${how})`);
      // Stopped before it started a rank: a manifest of this name is a crashed launch's, reaped.
      this.checkGone(
        deployment,
        `the teardown of launch ${launch.n} (${how})`,
        launch.ranks.size > 0,
      );
    }
    // Like `baton launch`, the launcher exits once its stop() has settled too (invariant 13
    // holds it to that): wait() can settle first when the stop came during the launch's reap.
    if (launch.stopSince === undefined) launch.self.exit(0);
  }

  private checkGone(deployment: string, by: string, owned = true): void {
    const alive = this.alive(deployment);
    if (alive.length > 0) {
      this.hooks.fail(
        8,
        `${by} of ${deployment} says verified while ${alive.map((p) => `${p.pid} (${p.label}, ${p.state})`).join(", ")} live`,
      );
    } else if (owned) {
      const left = this.controlFilesOf(deployment);
      if (left.length > 0) {
        this.hooks.fail(
          10,
          `${by} of ${deployment} is verified but ${left.join(", ")} ${left.length === 1 ? "is" : "are"} still there`,
        );
      }
    }
  }

  /** An unverified teardown must name a survivor that is alive; the operator retries later. */
  private unverified(launch: Launch, error: Error): void {
    const { deployment } = launch.group;
    const survivors = error instanceof TeardownError ? error.survivors : [];
    this.trace(
      `ranks ${deployment} teardown unverified: ${survivors.map((s) => `${s.pid} ${s.state}`).join(", ")}`,
    );
    const alive = new Set(this.alive().map((p) => p.pid));
    if (!survivors.some((s) => alive.has(s.pid))) {
      this.hooks.fail(
        8,
        `the teardown of ${deployment} is unverified, but none of its survivors (${survivors.map((s) => s.pid).join(", ")}) is alive`,
      );
      return;
    }
    if (!this.hasManifest(deployment)) {
      this.hooks.fail(10, `the teardown of ${deployment} is unverified, but its manifest is gone`);
    }
    if (launch.retrying) return;
    launch.retrying = true;
    launch.self.clock.setTimeout(() => {
      launch.retrying = false;
      this.stop(launch);
    }, RETRY_AFTER_MS);
  }

  /** The launcher is killed: its timers and writes stop; its ranks become orphans. */
  private crash(launch: Launch): void {
    const { crash } = launch.plan;
    if (launch.finished || launch.crashed || crash === undefined) return;
    launch.crashed = true;
    const { deployment } = launch.group;
    this.trace(
      `ranks launcher ${launch.self.pid} of ${deployment} crashed${crash.torn ? " torn" : ""}`,
    );
    this.files.crash(launch.self.clock, { torn: crash.torn });
    launch.self.exit(137);
    if (crash.relaunchAfterMs !== undefined) {
      this.schedule(
        this.drawPlan(false),
        crash.sameName === true ? deployment : undefined,
        crash.relaunchAfterMs,
      );
    }
  }

  /**
   * Invariant 12, when a launch after a crash starts its first rank: its reaper has run, so a
   * crashed launcher's deployment has nothing alive and no manifest left — unless the reap
   * could not be verified (a process in D), which keeps the manifest.
   */
  private checkReaped(launch: Launch): void {
    for (const earlier of this.launches) {
      if (!earlier.crashed || earlier === launch) continue;
      const { deployment } = earlier.group;
      const alive = this.alive(deployment);
      if (deployment === launch.group.deployment) {
        if (alive.length > 0) {
          this.hooks.fail(
            12,
            `launch ${launch.n} of ${deployment} starts its ranks while ${alive.map((p) => p.pid).join(", ")} of the crashed launch ${earlier.n} live`,
          );
        }
        continue;
      }
      const manifest = this.hasManifest(deployment);
      const excused = manifest && this.sawDiskSleep.has(deployment);
      if ((alive.length > 0 || manifest) && !excused) {
        this.hooks.fail(
          12,
          `launch ${launch.n} starts its ranks while the crashed ${deployment} ${alive.length > 0 ? `has ${alive.map((p) => `${p.pid} (${p.label})`).join(", ")} alive` : "still has its manifest"}`,
        );
      }
    }
  }

  /** `baton reap`, run by the simulated operator until no crashed launch left a control file. */
  private reap(left: string[]): void {
    const self = this.spawnSelf(REAPER);
    this.trace(`ranks reap ${left.join(", ")} by ${self.pid}`);
    const again = () =>
      this.clock.setTimeout(() => {
        this.reaping = false;
      }, RETRY_AFTER_MS);
    // Some reaps are killed in the middle of a file write or removal, and the next one must
    // finish the job.
    const e = this.reaperCrashPoints;
    const point = e.chance(0.5) ? { n: e.int(1, 6), afterMs: e.int(0, 2) } : undefined;
    let over = false;
    const crash = () => {
      if (over) return;
      over = true;
      this.trace(`ranks reaper ${self.pid} crashed`);
      this.files.crash(self.clock, { torn: true });
      self.exit(137);
      again();
    };
    reapDeployments({
      stateDir: STATE_DIR,
      procs: this.view(self.pid),
      files: this.crashingFiles(self, point, crash),
      clock: self.clock,
      host: SIM_HOST,
      teardown: TEARDOWN,
    }).then(
      (report) => {
        over = true;
        for (const { deployment } of report.reaped) {
          this.trace(`ranks reaped ${deployment}`);
          this.checkGone(deployment, "baton reap");
        }
        for (const { deployment } of report.failed) this.trace(`ranks reap failed ${deployment}`);
        self.exit(0);
        again();
      },
      (error: Error) => this.hooks.fail(6, `baton reap failed: ${error.stack ?? error}`),
    );
  }

  private onRank(event: SimRankEvent): void {
    const { deployment, rank, pid, exit } = event;
    this.trace(
      `ranks ${deployment} rank ${rank} pid ${pid} ${event.kind}${exit ? ` ${exit.code ?? exit.signal}` : ""}`,
    );
    if (event.kind === "ready") return;
    const launch = this.launches.find((l) => l.ranks.has(pid));
    if (launch === undefined) return;
    if (event.kind === "orphaned") {
      launch.orphaned.add(pid);
      return;
    }
    launch.deaths.set(pid, { exit: exit!, step: this.step });
    const reuse = launch.plan.reuse.get(rank);
    if (reuse !== undefined) {
      this.clock.setTimeout(() => this.takePid(pid, reuse.foreignUser), reuse.afterMs);
    }
  }

  /** Pid reuse: a stranger (maybe another user's) takes a dead rank's pid, when it is free. */
  private takePid(pid: number, foreignUser: boolean): void {
    if (this.done || this.procs.process(pid) !== undefined) return;
    try {
      this.procs.start({
        pid,
        argv: ["postgres", "-D", "/var/lib/postgres"],
        newGroup: true,
        label: STRANGER,
        onTerm: "ignore",
        ...(foreignUser && { uid: 0 }),
      });
      this.trace(`ranks a stranger${foreignUser ? " of another user" : ""} took pid ${pid}`);
    } catch {
      // The pid is still a process group id (a rank's helper lives on in it): not free yet.
    }
  }

  /** Starts a process of the simulated operator (a launcher, a reaper) and returns it. */
  private spawnSelf(command: string): SimSelf {
    this.procs.spawn({ argv: [command], newGroup: true });
    const self = this.newborn!;
    this.newborn = undefined;
    return self;
  }

  private born(self: SimSelf): void {
    this.newborn = self;
  }

  /** Live processes (zombies are dead) of `deployment`, or of any deployment without one. */
  private alive(deployment?: string): SimProcess[] {
    return this.rankProcesses()
      .filter(
        (rank) =>
          rank.proc.state !== "zombie" &&
          (deployment === undefined || rank.deployment === deployment),
      )
      .map(({ proc }) => proc);
  }

  private rankProcesses(): readonly Rank[] {
    const processes = this.procs.processes();
    if (processes === this.ranksOf) return this.ranks;
    const ranks: Rank[] = [];
    for (const proc of processes) {
      const deployment = deploymentOf(proc.label);
      if (deployment !== undefined)
        ranks.push({ proc, deployment, manifest: this.manifestOf(deployment) });
    }
    this.ranksOf = processes;
    this.ranks = ranks;
    return ranks;
  }

  private manifestOf(deployment: string): string {
    let manifest = this.manifests.get(deployment);
    if (manifest === undefined) {
      manifest = deploymentPaths(STATE_DIR, deployment).manifest;
      this.manifests.set(deployment, manifest);
    }
    return manifest;
  }

  private hasManifest(deployment: string): boolean {
    return this.files.peek(this.manifestOf(deployment)) !== undefined;
  }

  /** Crashed launches whose manifest, or lease (a crash before the manifest), is still on disk. */
  private orphans(): string[] {
    const crashed = this.launches.filter((l) => l.crashed).map((l) => l.group.deployment);
    return [...new Set(crashed)].filter((d) => this.controlFilesOf(d).length > 0);
  }

  /** The paths of a deployment's control files (not its ranks' logs or its outcome record). */
  private controlFilesOf(deployment: string): string[] {
    const paths = deploymentPaths(STATE_DIR, deployment);
    const prefix = `${paths.dir}/`;
    const names = this.files
      .paths()
      .filter((path) => path.startsWith(prefix))
      .map((path) => path.slice(prefix.length));
    return controlFiles(paths, names).map((name) => `${prefix}${name}`);
  }
}

/** The plan of a launch given as `launch`: nothing drawn, and no relaunch after a crash. */
function givenPlan(launch: SimLaunch): LaunchPlan {
  const { crash } = launch;
  return {
    ranks: launch.ranks,
    ...(launch.stopAfterMs !== undefined && { stopAfterMs: launch.stopAfterMs }),
    reuse: new Map(),
    contain: launch.contain ?? false,
    ...(crash !== undefined && {
      crash: {
        ...(crash.afterMs !== undefined && { afterMs: crash.afterMs }),
        torn: crash.torn ?? false,
        ...(crash.atFileWrite !== undefined && { atFileWrite: crash.atFileWrite }),
      },
    }),
  };
}

/** A process of a deployment's, as `RankGroupScenario` checks it. */
interface Rank {
  proc: SimProcess;
  deployment: string;
  manifest: string;
}

/** The deployment a process label names (`<deployment>/rank-R…`), if it is a rank's. */
function deploymentOf(label: string | undefined): string | undefined {
  const slash = label?.indexOf("/rank-") ?? -1;
  return slash > 0 ? label!.slice(0, slash) : undefined;
}
