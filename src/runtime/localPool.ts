import { EventEmitter } from "node:events";
import { appendFileSync } from "node:fs";
import { availableParallelism, hostname } from "node:os";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import { ConfigError, PoolError } from "../errors.ts";
import type { Resources } from "../graph/job.ts";
import { programName } from "../machines/programName.ts";
import { checkOptionNames } from "../optionNames.ts";
import { checkPoolOptions } from "./checkPoolOptions.ts";
import { checkConnect, workerConnect } from "./coordinatorAddress.ts";
import { emptyWorkerGroup, type LiveRemains, liveRemains, type Stray } from "./emptyWorkerGroup.ts";
import { folderRefusal } from "./folderRefusal.ts";
import { howItEnded } from "./howItEnded.ts";
import { localWorkerLog, localWorkerName } from "./localWorkerNames.ts";
import { makeWorkerLogsFolder } from "./logsFolder.ts";
import { logTail } from "./logTail.ts";
import { machineResources } from "./machineResources.ts";
import { nodeClock } from "./nodeClock.ts";
import { nodeProcs } from "./nodeProcs.ts";
import type { Clock, ProcExit, ProcHandle, ProcInfo, Procs, Signal } from "./ports.ts";
import { releaseCgroup } from "./releaseCgroup.ts";
import { POOL_CGROUP_LATER, removeAbandonedWorkerCgroups } from "./removeAbandonedWorkerCgroups.ts";
import { requireJobsModule } from "./requireJobsModule.ts";
import { requireWhole } from "./requireWhole.ts";
import { resourcesAdvice } from "./resourcesAdvice.ts";
import { SECRET_ENV } from "./secret.ts";
import { settledWithin } from "./settledWithin.ts";
import {
  checkWorkerCommand,
  type SecretIn,
  type WorkerCommandOption,
  workerCommandLine,
} from "./workerCommandLine.ts";
import { checkWorkerCount, defaultWorkerProcesses, machineLimits } from "./workerCountLimit.ts";
import { FINAL_WORKER_EXITS } from "./workerExitCodes.ts";
import {
  POOL_STOP_GRACE_MS,
  type PoolStart,
  type RunningPool,
  type StuckJob,
  type WorkerPool,
} from "./workerPool.ts";
import { workerPoolCgroupName } from "./workerPoolCgroup.ts";
import { type WorkerProcessOptions, workerProcessFlags } from "./workerProcessOptions.ts";

/** After SIGTERM, how long `stop()` waits before SIGKILL. */
const KILL_AFTER_MS = 2000;
/** Deaths of one worker slot tolerated within the window unless told (`maxRestarts`). */
export const DEFAULT_MAX_RESTARTS = 5;
/** The sliding window those deaths are counted in unless told (`windowMs`). */
export const DEFAULT_RESTART_WINDOW_MS = 60_000;

/** Pools this process has started with a cgroup, which numbers the next one's. */
let containedPools = 0;

export interface LocalPoolOptions {
  /**
   * The command line of the worker called `name`, e.g. `[process.execPath, "bin/baton.js",
   * "worker", "--connect", url, "--secret-file", path, "--jobs", module, "--name", name]`.
   * Never put the secret itself here: argv is visible to every user through `ps`.
   */
  argvFor(name: string): [string, ...string[]];
  /**
   * Directory of the workers' logs (created if missing): `worker-N.log` for slot N. One that
   * cannot be made or written in is a `ConfigError` from `startLocalPool` (`makeWorkerLogsFolder`).
   */
  logsDir: string;
  /** Worker processes to keep running (default `os.availableParallelism()`). */
  maxWorkers?: number;
  /** Added to this process's environment, which workers inherit. */
  env?: Record<string, string>;
  /** Working directory of the workers (default this process's). */
  cwd?: string;
  /** Deaths of one worker slot tolerated within `windowMs`; one more fails the pool (default 5). */
  maxRestarts?: number;
  /** The restart budget's sliding window, in ms (default 60 000). */
  windowMs?: number;
  /**
   * Exit codes after which a worker is not replaced, because a new one would end the same
   * way: the pool fails at once, with the worker's log (default none; `localPool` gives
   * `baton worker`'s `FINAL_WORKER_EXITS`: bad usage, a job module that does not load, a
   * setup the coordinator refused).
   */
  finalExitCodes?: readonly number[];
  /**
   * Whether the worker called `name` joined the coordinator (default: every worker counts as
   * joined). `stop()` sends SIGTERM at once to one that did not: it holds no job, and would
   * otherwise take the whole grace period to load and find its coordinator gone.
   */
  joined?(name: string): boolean;
  /**
   * Whether the coordinator gave up on the worker called `name` (default: on none): it closed
   * that worker's connection for a lease that expired or a silence, or the connection broke.
   * `stop()` treats it as one that never joined: it holds no job, and hears no close.
   */
  gaveUpOn?(name: string): boolean;
  procs?: Procs;
  clock?: Clock;
  /**
   * Where the pool says whether its workers are contained (debug), what it found of gone
   * coordinators' workers (info) and a cgroup it could not remove (warn).
   */
  logger?: Logger | undefined;
}

/** A dead worker and the process that took its place, emitted as `replaced`. */
export interface WorkerReplaced {
  /** The new worker's name (`local-3.2`) and pid. */
  worker: string;
  pid: number;
  /**
   * The dead worker's name, pid and how it ended: the process the pool started, so with a
   * `command` that forked the worker, the command's exit (the worker's cannot be known).
   */
  previous: { worker: string; pid: number; exit: ProcExit };
  logFile: string;
}

/**
 * Processes a worker left in its process group or its cgroup, found once it had exited and
 * stopped, emitted as `strays`: children of its handlers when it crashed or was killed, those
 * that left its group (a session of their own), or the worker itself behind a `command` that
 * forked it instead of `exec`ing it.
 */
export interface WorkerStrays {
  /** The worker's name and pid, which is its group's id. */
  worker: string;
  pid: number;
  /** Its cgroup, when it was contained (absent where no cgroup v2 is delegated). */
  cgroup?: string | undefined;
  /** Each process found, and how it ended. */
  strays: Stray[];
  logFile: string;
}

export interface LocalPoolEvents {
  replaced: [WorkerReplaced];
  strays: [WorkerStrays];
  failed: [PoolError];
}

/**
 * Worker processes on this machine; see `startLocalPool`. Events: `replaced` (a dead worker
 * was replaced), `strays` (processes left in a dead worker's group were stopped) and
 * `failed` (once, with the same error `failed` resolves to).
 */
export interface LocalPool {
  /**
   * Resolves (never rejects) with the pool's failure: a worker slot in a crash loop, or a
   * worker that could not be started. Pending forever while the pool is healthy.
   */
  readonly failed: Promise<PoolError>;
  /** Pids of the worker processes not yet exited and reaped. */
  pids(): number[];
  /**
   * How the worker process called `name` ended (`{ code: 1, signal: null }`), once it has
   * exited and been reaped; undefined for one still running or never started. With a
   * `command` that forked the worker, the command's exit (the worker's cannot be known).
   */
  exitOf(name: string): ProcExit | undefined;
  /**
   * How many worker processes run that have not joined the coordinator yet (`joined`): those
   * still starting (Node, the job module), or that cannot reach it; 0 without `joined`.
   */
  starting(): number;
  on<E extends keyof LocalPoolEvents>(
    event: E,
    listener: (...args: LocalPoolEvents[E]) => void,
  ): this;
  /**
   * Stops replacing workers, sends SIGTERM at once to those that never joined (`joined`) or
   * that the coordinator gave up on (`gaveUpOn`), and SIGKILL 2 s later to those of them left.
   * Waits up to `graceMs` for the rest to exit on their own (the coordinator closing their
   * connections is the normal path), sends SIGTERM to those left, and SIGKILL 2 s later.
   * Resolves once every worker process has exited and been reaped, and whatever was left in
   * its process group or cgroup has been stopped too (`strays`) and its cgroup removed. A
   * second call returns the first call's promise. The `stuck` workers, whose handlers ignore
   * their abort, are given up to `afterMs` to exit, then SIGKILL: a SIGTERM would have them
   * wait for that handler again. Each one killed so gets a last line in its log saying why
   * (`[baton pool <time>] local-1 (pid 4242) killed with SIGKILL: the handler of job … (kind)
   * ignored its abort through the cancel's grace (10000 ms), …`), and the same warning in
   * `logger`.
   */
  stop(graceMs?: number, stuck?: StuckWorkers): Promise<void>;
}

/**
 * Workers whose handlers ignore their abort (each name to the job its handler runs), how
 * long they may still take, and how long before the stop their abort came (a cancel's grace).
 */
export interface StuckWorkers {
  workers: ReadonlyMap<string, StuckJob>;
  afterMs: number;
  abortedMsAgo: number;
}

/** One worker position: `local-N` and its replacements, sharing `worker-N.log`. */
interface Slot {
  n: number;
  generation: number;
  logFile: string;
  /** Clock times of deaths within the window, oldest first. */
  deaths: number[];
}

/**
 * Starts `maxWorkers` worker processes, once: there is no idle timeout and no scaling. Each
 * process gets `argvFor(name)`, this process's environment plus `env`, and appends its
 * stdout and stderr to `${logsDir}/worker-N.log`, where the pool also writes a line naming
 * each worker it starts. Workers run in their own process groups, so a Ctrl-C at the
 * terminal reaches the engine, which shuts the run down in order, and not the workers.
 *
 * The pool owns processes, not jobs: when a worker dies, the coordinator sees its
 * connection close (WORKER_LOST) and the pool starts a replacement named with the next
 * generation (`local-3` → `local-3.2` → `local-3.3`). A worker that exits with code 0 is not
 * replaced: the worker command exits 0 only when the coordinator closed its connection
 * normally, which happens when the run is over. More than `maxRestarts` deaths of one slot
 * within `windowMs` (a worker that cannot start, or keeps crashing) fail the pool: no more
 * replacements, and `failed` resolves with a `PoolError` naming the worker, how it ended,
 * the count, its log file and the last lines that worker wrote there. The budget is per slot so that a few
 * jobs that kill their workers (the coordinator fails those as poison) do not fail the
 * pool. A failed pool leaves its other workers running; call `stop()` in every case.
 *
 * Signals go to pids whose `exited` has not settled: an unreaped child's pid cannot have
 * been reused by another program. Where `procs` has a containment (a delegated cgroup v2),
 * each worker starts in a cgroup of its own, `baton/workers-<run>@<pid>.<n>/<worker>`
 * (`workerPoolCgroupName`), which keeps every process it starts, whatever group or session
 * they move to; the pool first removes those of coordinators that are gone
 * (`removeAbandonedWorkerCgroups`). Once a worker has exited (replaced, dismissed, or at
 * `stop()`), any process still in its group or its cgroup is stopped: SIGTERM, SIGKILL 2 s
 * later (`cgroup.kill`), emitted as `strays` and written to the worker's log (see
 * `emptyWorkerGroup`); its cgroup is then removed, and the pool's at `stop()`.
 *
 * @example
 * ```ts
 * const pool = startLocalPool({
 *   maxWorkers: 4,
 *   logsDir: "/var/tmp/run-1/logs",
 *   argvFor: (name) => [process.execPath, "bin/baton.js", "worker", "--connect", url,
 *     "--secret-file", secretFile, "--jobs", "./jobs.ts", "--name", name],
 * });
 * pool.on("replaced", (r) => logger.warn(r, "worker replaced"));
 * const failure = pool.failed.then((error) => run.cancel(error.message));
 * // ... after the coordinator has closed the workers' connections:
 * await pool.stop();
 * ```
 */
export function startLocalPool(options: LocalPoolOptions): LocalPool {
  return new Pool(options);
}

class Pool extends EventEmitter<LocalPoolEvents> implements LocalPool {
  readonly failed: Promise<PoolError>;
  private readonly procs: Procs;
  private readonly clock: Clock;
  private readonly env: Record<string, string>;
  private readonly maxRestarts: number;
  private readonly windowMs: number;
  /** Worker processes not yet reaped, their names and slots. */
  private readonly live = new Map<ProcHandle, { name: string; slot: Slot }>();
  /** How each worker process that has exited ended, by its name (`exitOf`). */
  private readonly exits = new Map<string, ProcExit>();
  private resolveFailed: (error: PoolError) => void = () => {};
  private failing = false;
  private stopping: Promise<void> | undefined;
  /** Dead workers' process groups being emptied. */
  private readonly emptying = new Set<Promise<void>>();
  /** The cgroup holding the workers' own (by its name and path), when contained. */
  private readonly cgroup: { name: string; path: string } | undefined;
  /** Gone coordinators' pools' cgroups being emptied and removed. */
  private abandoned: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: LocalPoolOptions) {
    super();
    const maxWorkers = options.maxWorkers ?? availableParallelism();
    requireWhole("startLocalPool", "maxWorkers", maxWorkers);
    checkPoolOptions("startLocalPool", {
      maxRestarts: options.maxRestarts,
      windowMs: options.windowMs,
    });
    this.maxRestarts = options.maxRestarts ?? DEFAULT_MAX_RESTARTS;
    this.windowMs = options.windowMs ?? DEFAULT_RESTART_WINDOW_MS;
    this.procs = options.procs ?? nodeProcs();
    this.clock = options.clock ?? nodeClock();
    this.env = { ...inheritedEnv(), ...options.env };
    this.failed = new Promise((resolve) => {
      this.resolveFailed = resolve;
    });
    makeWorkerLogsFolder(options.logsDir);
    this.cgroup = this.contain();
    for (let n = 1; n <= maxWorkers && !this.failing; n++) {
      const logFile = localWorkerLog(options.logsDir, n);
      this.launch({ n, generation: 1, logFile, deaths: [] }, "");
    }
  }

  /**
   * The pool's cgroup, when this machine contains processes (its debug log says why not);
   * then also starts removing gone coordinators' pools' cgroups.
   */
  private contain(): { name: string; path: string } | undefined {
    const { logger } = this.options;
    const { containment } = this.procs;
    const uncontained =
      "worker processes not contained: each one's process group is stopped when it exits, " +
      "but not a process that left it (setsid, a detached spawn)";
    if (containment === undefined) {
      logger?.debug(`${uncontained}; this machine has no cgroup v2`);
      return undefined;
    }
    const name = workerPoolCgroupName(this.options.logsDir, this.procs.selfPid, ++containedPools);
    let path: string;
    try {
      path = containment.create(name);
    } catch (error) {
      logger?.debug({ err: error }, uncontained);
      return undefined;
    }
    logger?.debug({ cgroup: path }, "worker processes contained, each in a cgroup of its own");
    this.abandoned = removeAbandonedWorkerCgroups(
      this.procs,
      this.clock,
      KILL_AFTER_MS,
      logger,
    ).catch((error: unknown) =>
      logger?.warn({ err: error }, "cannot remove the cgroups of gone coordinators' workers"),
    );
    return { name, path };
  }

  pids(): number[] {
    return [...this.live.keys()].map((handle) => handle.pid);
  }

  exitOf(name: string): ProcExit | undefined {
    return this.exits.get(name);
  }

  starting(): number {
    const { joined } = this.options;
    if (joined === undefined) return 0;
    let starting = 0;
    for (const { name } of this.live.values()) if (!joined(name)) starting++;
    return starting;
  }

  stop(graceMs = POOL_STOP_GRACE_MS, stuck?: StuckWorkers): Promise<void> {
    if (!(graceMs >= 0)) {
      return Promise.reject(new ConfigError(`graceMs must be at least 0, not ${graceMs}`));
    }
    this.stopping ??= this.shutDown(graceMs, stuck);
    return this.stopping;
  }

  private async shutDown(graceMs: number, stuck: StuckWorkers | undefined): Promise<void> {
    const { joined, gaveUpOn } = this.options;
    // Those the run does not wait for: no job, and no close they could hear.
    const unawaited = (name: string) =>
      (joined !== undefined && !joined(name)) || gaveUpOn?.(name) === true;
    const now: ProcHandle[] = [];
    const later: ProcHandle[] = [];
    const held: ProcHandle[] = [];
    for (const [handle, { name }] of this.live) {
      (stuck?.workers.has(name) ? held : unawaited(name) ? now : later).push(handle);
    }
    await Promise.all([
      this.terminate(now, 0),
      this.terminate(later, graceMs),
      stuck && this.killStuck(held, stuck),
    ]);
    // Each exit has started emptying its group by now: its callback came before ours.
    await Promise.all(this.emptying);
    await this.abandoned;
    if (this.cgroup !== undefined) {
      await releaseCgroup(
        this.procs,
        this.clock,
        this.cgroup.path,
        this.options.logger,
        POOL_CGROUP_LATER,
      );
    }
  }

  /**
   * Waits up to `graceMs` for `handles` to exit, sends SIGTERM to those left, and SIGKILL
   * 2 s later; resolves once each has exited and been reaped.
   */
  private async terminate(handles: readonly ProcHandle[], graceMs: number): Promise<void> {
    if (handles.length === 0) return;
    const exited = Promise.all(handles.map((handle) => handle.exited));
    if (graceMs > 0) await settledWithin(exited, graceMs, this.clock);
    this.signalLive(handles, "SIGTERM");
    await this.kill(handles, KILL_AFTER_MS);
  }

  /**
   * Waits up to `stuck.afterMs` for the `handles` of workers whose handlers ignore their
   * abort to exit, then sends SIGKILL to those left, and says why in each one's log (its last
   * line) and the run's: the log of a worker killed so simply stopped.
   */
  private async killStuck(handles: readonly ProcHandle[], stuck: StuckWorkers): Promise<void> {
    const workers = handles.map((handle) => ({ handle, ...this.live.get(handle)! }));
    await this.kill(handles, stuck.afterMs);
    const left = stuck.afterMs > 0 ? ` and the ${stuck.afterMs} ms left of its abort grace` : "";
    for (const { handle, name, slot } of workers) {
      // One that returned from its handler within the time left ended as any other.
      if ((await handle.exited).signal !== "SIGKILL") continue;
      const job = stuck.workers.get(name)!;
      const why =
        `${name} (pid ${handle.pid}) killed with SIGKILL: the handler of job ${job.id} (${job.kind}) ignored its ` +
        `abort through the cancel's grace (${stuck.abortedMsAgo} ms)${left}, and a SIGTERM ` +
        "would have it wait for that handler again";
      this.poolLine(slot, why);
      this.options.logger?.warn(
        { worker: name, workerPid: handle.pid, job: job.id, kind: job.kind, log: slot.logFile },
        `worker ${why}`,
      );
    }
  }

  /** Waits up to `afterMs` for `handles` to exit, then sends SIGKILL to those left. */
  private async kill(handles: readonly ProcHandle[], afterMs: number): Promise<void> {
    if (handles.length === 0) return;
    const exited = Promise.all(handles.map((handle) => handle.exited));
    if (afterMs > 0) await settledWithin(exited, afterMs, this.clock);
    this.signalLive(handles, "SIGKILL");
    await exited;
  }

  /** Signals those of `handles` not yet reaped. */
  private signalLive(handles: readonly ProcHandle[], signal: Signal): void {
    for (const handle of handles) {
      if (this.live.has(handle)) this.procs.signal(handle.pid, signal);
    }
  }

  /**
   * Starts the slot's current generation; `why` tells the log what it replaces. A worker that
   * cannot be started fails the pool, and the result is undefined.
   */
  private launch(slot: Slot, why: string): { name: string; pid: number } | undefined {
    const name = localWorkerName(slot.n, slot.generation);
    let handle: ProcHandle;
    let cgroup: string | undefined;
    try {
      this.poolLine(slot, `starting ${name}${why}`);
      cgroup = this.workerCgroup(slot, name);
      handle = this.procs.spawn({
        argv: this.options.argvFor(name),
        env: this.env,
        cwd: this.options.cwd,
        logFile: slot.logFile,
        newGroup: true,
        cgroup,
      });
    } catch (error) {
      if (cgroup !== undefined) this.procs.containment?.remove(cgroup);
      this.failing = true;
      // Its log file refused (the only file a spawn opens): named, why, and what to do.
      const { why, advice, system } = folderRefusal(error, dirname(slot.logFile), "workerLogs");
      const reason = system ? `${why}; ${advice}` : why;
      // Asynchronously, so that listeners added right after startLocalPool hear it.
      queueMicrotask(() =>
        this.fail(
          new PoolError(
            "WORKER_SPAWN",
            `the local pool could not start worker ${name}: ${reason}`,
            name,
            slot.logFile,
          ),
        ),
      );
      return undefined;
    }
    this.live.set(handle, { name, slot });
    void handle.exited.then((exit) => {
      // One look at what it left, for its exit line and as the sweep's first.
      const left = this.leftRunning(handle.pid, cgroup);
      this.onExit(
        slot,
        handle,
        name,
        exit,
        left instanceof Error ? [] : [...left.group, ...left.escaped],
      );
      const emptied = this.emptyGroup(slot, name, handle.pid, cgroup, left);
      this.emptying.add(emptied);
      void emptied.then(() => this.emptying.delete(emptied));
    });
    return { name, pid: handle.pid };
  }

  /**
   * The live processes the exited worker whose pid is `pid` left in its process group and
   * `cgroup`, or why they cannot be read (`CGROUP_HOLDS_THIS_PROCESS`: the sweep says so).
   */
  private leftRunning(pid: number, cgroup: string | undefined): LiveRemains | Error {
    try {
      return liveRemains({ pgid: pid, cgroup }, this.procs);
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /**
   * The cgroup worker `name` starts in, below the pool's, or undefined when the pool is not
   * contained or this one cannot be made (said in the slot's log: its group alone is swept).
   */
  private workerCgroup(slot: Slot, name: string): string | undefined {
    const { containment } = this.procs;
    if (this.cgroup === undefined || containment === undefined) return undefined;
    try {
      return containment.create(`${this.cgroup.name}/${name}`);
    } catch (error) {
      this.poolLine(slot, `${name} not contained: ${(error as Error).message}`);
      return undefined;
    }
  }

  /**
   * Stops what the exited worker `name` left in its process group (whose id is its `pid`) and
   * its `cgroup`, as `left` (`leftRunning`, at its exit) found them first, says so, and
   * removes the cgroup.
   */
  private async emptyGroup(
    slot: Slot,
    name: string,
    pid: number,
    cgroup: string | undefined,
    left: LiveRemains | Error,
  ): Promise<void> {
    const swept =
      cgroup === undefined
        ? "its process group (not contained: one that left it was not looked for)"
        : `its process group and its cgroup ${cgroup}`;
    let strays: Stray[];
    try {
      if (left instanceof Error) throw left;
      strays = await emptyWorkerGroup(
        { pgid: pid, cgroup },
        this.procs,
        this.clock,
        KILL_AFTER_MS,
        left,
      );
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.poolLine(
        slot,
        `cannot look for processes ${name} (pid ${pid}) left in ${swept}: ${reason}`,
      );
      return;
    } finally {
      if (cgroup !== undefined) {
        await releaseCgroup(this.procs, this.clock, cgroup, this.options.logger, POOL_CGROUP_LATER);
      }
    }
    if (strays.length === 0) return;
    const each = strays
      .map(
        (s) =>
          `${s.pid} (${s.program}${s.escaped ? ", outside its process group" : ""}) ${
            s.ended === "still running" ? s.ended : `ended by ${s.ended}`
          }`,
      )
      .join(", ");
    this.poolLine(slot, `${name} (pid ${pid}) had exited, leaving processes in ${swept}: ${each}`);
    this.emit("strays", {
      worker: name,
      pid,
      ...(cgroup !== undefined && { cgroup }),
      strays,
      logFile: slot.logFile,
    });
  }

  /**
   * A line of the pool's own in the slot's log, `[baton pool <time>] text`, let go when it
   * cannot be written (a full disk): it is for whoever reads the log, the pool's events carry
   * the same news, and a worker can still start (its output is dropped until there is room).
   */
  private poolLine(slot: Slot, text: string): void {
    const when = new Date(this.clock.now()).toISOString();
    try {
      appendFileSync(slot.logFile, `[baton pool ${when}] ${text}\n`, { mode: 0o600 });
    } catch {
      // Nothing more to do: see above.
    }
  }

  /**
   * Replaces the worker that exited, or fails the pool, or neither (stopping, exit 0). `left`:
   * the processes it started still running, which make its exit code that of the process the
   * pool started, not necessarily the worker's; the slot's log says so.
   */
  private onExit(
    slot: Slot,
    handle: ProcHandle,
    name: string,
    exit: ProcExit,
    left: readonly ProcInfo[],
  ): void {
    this.live.delete(handle);
    this.exits.set(name, exit);
    const ended = `${howItEnded(exit)}${whileRunning(left)}`;
    if (left.length > 0) this.poolLine(slot, `${name} (pid ${handle.pid}) ${ended}`);
    if (this.stopping !== undefined || this.failing || exit.code === 0) return;
    const now = this.clock.now();
    slot.deaths = slot.deaths.filter((at) => now - at < this.windowMs);
    slot.deaths.push(now);
    const previous = { worker: name, pid: handle.pid, exit };
    const final = exit.code !== null && (this.options.finalExitCodes ?? []).includes(exit.code);
    if (final || slot.deaths.length > this.maxRestarts) {
      this.failing = true;
      void this.crashLoop(slot, previous, ended, final, handle.logStart);
      return;
    }
    slot.generation++;
    const why = ` (replaces ${name}, pid ${handle.pid}, which ${howItEnded(exit)})`;
    const replacement = this.launch(slot, why);
    if (replacement === undefined) return;
    this.emit("replaced", {
      worker: replacement.name,
      pid: replacement.pid,
      previous,
      logFile: slot.logFile,
    });
  }

  /**
   * Fails the pool for a worker that is not replaced: `final`, or past the restart budget.
   * `logStart`: where its output begins in the slot's log, which its predecessors (and an
   * earlier pool given the same `logsDir`) appended to before: only its own part is quoted.
   */
  private async crashLoop(
    slot: Slot,
    previous: WorkerReplaced["previous"],
    howEnded: string,
    final: boolean,
    logStart: number | undefined,
  ): Promise<void> {
    const tail = await logTail(slot.logFile, logStart);
    const ended = `worker ${previous.worker} (pid ${previous.pid}) ${howEnded}`;
    this.fail(
      final
        ? new PoolError(
            "WORKER_CANNOT_START",
            `${ended}, which a new worker would too (bad usage, a job module that does not load, ` +
              "or a setup the coordinator refused: a job module other than the one it hashed, " +
              "changed on disk since, or defining other kinds or versions than createEngine's " +
              `jobs?), so the local pool does not replace it. Its log ${slot.logFile} says why. ${tail}`,
            previous.worker,
            slot.logFile,
          )
        : new PoolError(
            "WORKER_CRASH_LOOP",
            `${ended}: ${slot.deaths.length} deaths of worker slot local-${slot.n} within ${this.windowMs} ms, ` +
              `more than maxRestarts (${this.maxRestarts}), so the local pool stops replacing ` +
              `workers. Its log ${slot.logFile} says why it exits (a job module that does not ` +
              "load, a rejected secret, an unreachable coordinator, a crash); only if these " +
              "deaths are expected, give localPool a higher maxRestarts (baton run has no flag " +
              `for it: fix what ends its workers). ${tail}`,
            previous.worker,
            slot.logFile,
          ),
    );
  }

  private fail(error: PoolError): void {
    this.resolveFailed(error);
    this.emit("failed", error);
  }
}

/** This process's environment without unset entries. */
function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined) env[key] = value;
  }
  return env;
}

/**
 * What an exit means when the process the pool started left processes running (`left`): a
 * command that forked the worker (a script that starts it and exits, `setsid`) ended with a
 * code of its own, and the worker's cannot be known. Linux tells a process's exit only to its
 * parent, the command, and a cgroup holds processes, not their exit codes. Empty for none.
 */
function whileRunning(left: readonly ProcInfo[]): string {
  if (left.length === 0) return "";
  const each = left.map((p) => `${p.pid} (${programName(p)})`).join(", ");
  const still = left.length === 1 ? "a process it started" : `${left.length} processes it started`;
  return (
    ` (${still} still ran: ${each}, stopped next; that exit is the worker's own only if the ` +
    "pool started the worker or a command that execs it: a command that forked the worker " +
    "ends with a code of its own, and the worker's cannot be known, as only a process's " +
    "parent is told it)"
  );
}

/** What `localPool` takes: the job module its worker processes load, and how many. */
export interface LocalWorkersOptions extends WorkerProcessOptions {
  /** The job module file workers load (`baton worker --jobs FILE`). */
  jobsModule: string;
  /**
   * Worker processes, 0 for none (workers join with `baton worker`), at most what this
   * machine's memory and `ulimit -u` allow (default: the machine's cores, or that most when
   * fewer). More than the cores is logged as a warning when the pool starts. With a function
   * as `command`, whose workers may run elsewhere, neither applies: the most is what this
   * coordinator can hold connections to (its `ulimit -n`), as for `slurmPool`.
   */
  count?: number | undefined;
  /**
   * What each worker offers (default: the machine's cores and memory, no gpus; with a
   * function as `command`, each worker's own machine's, as `baton worker` offers by default,
   * and the graph is not checked against them before the run).
   */
  resources?: Resources | undefined;
  /**
   * Deaths of one worker slot tolerated within `windowMs` before the pool stops replacing it
   * and the run rejects with a `PoolError` (`WORKER_CRASH_LOOP`) (default 5).
   */
  maxRestarts?: number | undefined;
  /** The sliding window `maxRestarts` counts deaths in, in ms (default 60 000: a minute). */
  windowMs?: number | undefined;
  /**
   * How each worker process is started, for workers run your own way (default: `node
   * …/bin/baton.js worker …` itself). A prefix put before that command line, such as
   * `["nice", "-n", "5"]`, `["taskset", "-c", "0"]` or `["systemd-run", "--user", "--scope"]`;
   * or a function from the worker (`{ name, argv, args, secretFile }`) to the command line to
   * run, such as `docker run … IMAGE baton worker ...args`. The pool supervises what it starts
   * as it does its own workers (restarts, exit codes 2 and 4 final, stop with grace, a log per
   * worker), so the command should end with the worker's exit code and pass SIGTERM on to it
   * (`exec` it, as `nice`, `taskset`, `env` and `systemd-run --scope` do; `docker run` forwards
   * signals): one that forks the worker is stopped with its process group, but loses the exit
   * code that says whether to replace it (the pool goes by the command's, and says so in the
   * worker's log when the command ended while what it started still ran). Never put the secret on it: every user sees argv
   * through `ps`. A prefix runs the workers on this machine: `count` is bounded and warned
   * about as without one. A function may run them anywhere: only the connections bound it.
   */
  command?: WorkerCommandOption | undefined;
  /**
   * The coordinator's address as the workers reach it, HOST:PORT or ws://HOST:PORT, each
   * worker's `--connect` (default: the address it listens on; for a wildcard `listen` such
   * as `0.0.0.0:7400` and a function `command`, whose workers may run elsewhere, this
   * machine's host name with that port, `os.hostname()`; give another when the workers reach
   * this machine by another name, `build1.example.com:7400`). Port 0 and a wildcard host are refused
   * when the pool is made, and `connect` without `createEngine`'s `listen` by `createEngine`. Taken without `command` too: workers here may connect through a
   * name or another of this machine's addresses.
   */
  connect?: string | undefined;
  /**
   * How the run's secret reaches each worker: `"file"` (default), the path of the run's 0600
   * secret file (`--secret-file`; a container mounts it), or `"env"`, `BATON_SECRET` in the
   * environment of the process the pool starts and no `--secret-file`, for a command that hands
   * it on (`docker run -e BATON_SECRET`, `sudo --preserve-env=BATON_SECRET`).
   */
  secretIn?: SecretIn | undefined;
}

const BATON_BIN = fileURLToPath(new URL("../../bin/baton.js", import.meta.url));

/** The options `localPool` takes, by name, for `checkOptionNames`. */
export const LOCAL_POOL_OPTIONS: Record<keyof LocalWorkersOptions, true> = {
  jobsModule: true,
  count: true,
  resources: true,
  maxRestarts: true,
  windowMs: true,
  handlerThread: true,
  logLevel: true,
  abortGraceMs: true,
  command: true,
  secretIn: true,
  connect: true,
};

/**
 * The engine's pool of `baton worker` processes on this machine, over real sockets to the
 * coordinator, or started your own way (`command`: a wrapper, a container, another host).
 * The run's secret reaches them through a 0600 file (or, with `secretIn: "env"`, their
 * environment), never argv.
 *
 * @example
 * ```ts
 * const engine = createEngine({ jobs, workers: localPool({ jobsModule: "jobs.ts", count: 4 }), store: ".baton" });
 * // Each worker in a container of its own, given the secret through its environment:
 * const docker = localPool({
 *   jobsModule: "/app/jobs.ts",
 *   count: 4,
 *   resources: { cpus: 1, memory: 2048 },
 *   secretIn: "env",
 *   command: (worker) => ["docker", "run", "--rm", "--init", "--network", "host",
 *     "-e", "BATON_SECRET", "-v", "/app:/app:ro", "my-image", "baton", "worker", ...worker.args],
 * });
 * ```
 */
export function localPool(options: LocalWorkersOptions): WorkerPool {
  checkOptionNames("localPool", options, LOCAL_POOL_OPTIONS, { shape: "{ jobsModule, count, … }" });
  requireJobsModule("localPool", options.jobsModule);
  checkPoolOptions("localPool", options);
  checkWorkerCommand("localPool", options);
  checkConnect("localPool", options.connect);
  // A prefix (`nice`, `taskset`) runs the worker here; a function may run it anywhere.
  const runsHere = typeof options.command !== "function";
  // A function's workers, which may run elsewhere, offer their own machine's (as `baton
  // worker` does by default) unless told.
  const resources = options.resources ?? (runsHere ? machineResources() : undefined);
  const machine = machineLimits();
  const count = options.count ?? defaultWorkerProcesses(machine);
  requireWhole("localPool", "count", count, 0);
  checkWorkerCount("localPool: count", count, runsHere ? "processes" : "connected", machine);
  const resourceArgs = Object.entries(resources ?? {}).flatMap(([k, v]) =>
    v === undefined ? [] : [`--${k}`, String(v)],
  );
  return {
    // No workers of its own (`--workers 0`), or workers whose machines are not known in
    // advance: no job is refused for what this machine offers.
    offers: count === 0 || resources === undefined ? [] : [resources],
    offerMore: (enough) => resourcesAdvice("localPool", enough),
    remote: true,
    jobsModule: options.jobsModule,
    connect: options.connect,
    start(context: PoolStart): RunningPool {
      if (count === 0) return { failed: new Promise(() => {}), stop: async () => {} };
      const inEnv = options.secretIn === "env";
      const secretFile = inEnv ? undefined : context.secretFile;
      if (!inEnv && secretFile === undefined) {
        throw new ConfigError("worker processes need the run's secret in a file");
      }
      const secretArgs = secretFile === undefined ? [] : ["--secret-file", secretFile];
      const secretHex = Buffer.from(context.secret).toString("hex");
      if (runsHere && count > machine.cores) {
        context.logger.warn(
          { workers: count, cores: machine.cores },
          `${count} worker processes on this machine's ${machine.cores} cores: handlers that compute share the cores, so workers beyond them help only jobs that wait (on I/O, a service, a lock)`,
        );
      }
      const pool = startLocalPool({
        maxWorkers: count,
        logsDir: context.logsDir,
        argvFor: (name) => {
          const args = [
            "--connect",
            workerConnect(options.connect, context.address, runsHere ? undefined : hostname()),
            ...secretArgs,
            "--jobs",
            options.jobsModule,
            "--name",
            name,
            ...resourceArgs,
            ...workerProcessFlags(options),
          ];
          const worker = {
            name,
            argv: [process.execPath, BATON_BIN, "worker", ...args] as const,
            args,
            ...(secretFile !== undefined && { secretFile }),
          };
          return workerCommandLine("localPool", options.command, worker, secretHex);
        },
        ...(inEnv && { env: { [SECRET_ENV]: secretHex } }),
        ...(options.maxRestarts !== undefined && { maxRestarts: options.maxRestarts }),
        ...(options.windowMs !== undefined && { windowMs: options.windowMs }),
        finalExitCodes: FINAL_WORKER_EXITS,
        ...(context.joined !== undefined && { joined: context.joined }),
        ...(context.gaveUpOn !== undefined && { gaveUpOn: context.gaveUpOn }),
        logger: context.logger,
      });
      pool.on("strays", (s) =>
        context.logger.warn(
          // Not `pid`: the log's own `pid` is this process's.
          {
            worker: s.worker,
            workerPid: s.pid,
            cgroup: s.cgroup,
            strays: s.strays,
            log: s.logFile,
          },
          "processes a worker left stopped",
        ),
      );
      pool.on("replaced", (r) =>
        context.logger.warn(
          { worker: r.worker, previous: r.previous.worker, exit: r.previous.exit, log: r.logFile },
          "worker process replaced",
        ),
      );
      // A worker whose handler cleans up after its abort gets as long as its flag gives it.
      const graceMs = Math.max(POOL_STOP_GRACE_MS, options.abortGraceMs ?? 0);
      return {
        failed: pool.failed,
        // Without an abort grace of its own given, the cancel's grace was the handlers'.
        stop: (ended) =>
          pool.stop(
            graceMs,
            ended?.stuck && {
              ...ended.stuck,
              afterMs: Math.max(0, (options.abortGraceMs ?? 0) - ended.stuck.abortedMsAgo),
            },
          ),
        exitOf: (worker) => pool.exitOf(worker),
        // Why a run's bar waits for a worker while its own are still starting (several
        // seconds on a busy machine), where it said only that it waited for one to connect.
        waitingFor: () => {
          const starting = pool.starting();
          return starting === 0
            ? undefined
            : `${starting} worker${starting === 1 ? "" : "s"} starting`;
        },
      };
    },
  };
}
