import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import { ConfigError, SlurmError } from "../errors.ts";
import { formatDuration } from "../formatDuration.ts";
import type { Resources } from "../graph/job.ts";
import { allocationPhase, pendingReason } from "../machines/allocationState.ts";
import { type AllocationView, decideScaling } from "../machines/slurmScaling.ts";
import { checkOptionNames } from "../optionNames.ts";
import { cancelAbandonedAllocations } from "./abandonedAllocations.ts";
import { checkPoolOptions } from "./checkPoolOptions.ts";
import { checkSbatchOptions } from "./checkSbatchOptions.ts";
import { checkSlurmPoolOptions } from "./checkSlurmPoolOptions.ts";
import { checkConnect, isLoopback, workerConnect } from "./coordinatorAddress.ts";
import { makeWorkerLogsFolder } from "./logsFolder.ts";
import { logTail } from "./logTail.ts";
import { nodeClock } from "./nodeClock.ts";
import type { Clock } from "./ports.ts";
import { requireJobsModule } from "./requireJobsModule.ts";
import { requireWhole } from "./requireWhole.ts";
import { resourcesAdvice } from "./resourcesAdvice.ts";
import { shellQuote } from "./shellQuote.ts";
import {
  COMMAND_TIMEOUT,
  type CommandTimeout,
  nodeSlurmCommands,
  POOL_COMMANDS,
  type QueueEntry,
  SLURM_COMMAND_TIMEOUT_MS,
  type SlurmCommands,
} from "./slurmCommands.ts";
import { checkWorkerCount } from "./workerCountLimit.ts";
import { FINAL_WORKER_EXITS } from "./workerExitCodes.ts";
import type { PoolStart, PoolStop, RunningPool, StuckJob, WorkerPool } from "./workerPool.ts";
import { type WorkerProcessOptions, workerProcessFlags } from "./workerProcessOptions.ts";

const BATON_BIN = fileURLToPath(new URL("../../bin/baton.js", import.meta.url));
/** Restarts of a dead worker inside one allocation, by default. */
export const WORKER_RESTARTS = 5;
/** How long a worker stays without a job before it leaves and its allocation ends, by default. */
export const IDLE_EXIT_MS = 5 * 60_000;
/**
 * The least time a Slurm command gets while none has succeeded, however little is left of
 * `unreachableMs`: a misconfigured squeue fails within milliseconds, a hanging one is still
 * cut off this soon after the bound.
 */
const LAST_COMMAND_MS = 1000;
/** A failing Slurm command's warning, unchanged, is logged again at most this often. */
const REPEAT_WARNING_MS = 60_000;
/**
 * What `sbatch` says when a submission is refused for its size: more array tasks than
 * MaxArraySize ("Invalid job array specification") or more jobs than a submit limit
 * ("Job violates accounting/QOS policy (job submit limit, ...)").
 */
const SUBMIT_LIMIT = /job array|submit limit|MaxSubmit|accounting\/QOS policy/i;
/** What `sbatch` says of a partition that does not exist ("invalid partition specified: gpuu"). */
const INVALID_PARTITION = /invalid partition/i;
/** What each worker offers unless told (`resources`): one cpu, what `sbatch` gives a task. */
export const DEFAULT_WORKER_RESOURCES: Readonly<Resources> = Object.freeze({ cpus: 1 });
/** The most allocations a pool holds at once unless told (`maxWorkers`). */
export const DEFAULT_MAX_WORKERS = 4;
/** How long Slurm may fail on every call from the start before the pool fails, unless told (`unreachableMs`). */
export const DEFAULT_UNREACHABLE_MS = 30_000;
/** How often the queue is read and the pool rescaled unless told (`pollMs`). */
export const DEFAULT_POLL_MS = 1000;
/** On stop, the least time joined allocations get to end on their own (`graceMs`). */
export const DEFAULT_STOP_GRACE_MS = 5000;
/** On stop, how long the queue has to show every allocation gone (`stopTimeoutMs`). */
export const DEFAULT_STOP_TIMEOUT_MS = 60_000;
/** How long allocations may all stay pending, none running, before the user is told why. */
const PENDING_WARNING_MS = 60_000;
/** The same pending reasons are told again at most this often. */
const REPEAT_PENDING_MS = 10 * 60_000;

/** What `slurmPool` takes: the job module on a shared filesystem, and what to ask Slurm for. */
export interface SlurmPoolOptions extends WorkerProcessOptions {
  /** The job module file workers load (`baton worker --jobs FILE`), on a filesystem the nodes share. */
  jobsModule: string;
  /** The most allocations (one worker each) held at once (default 4). */
  maxWorkers?: number | undefined;
  /** `sbatch --partition`. */
  partition?: string | undefined;
  /**
   * Further `sbatch` options, passed as given (`--time=1:00:00`, `--qos=low`). Those the pool
   * sets itself are refused: the job name, the array, the log files, and what each allocation
   * gets (`--cpus-per-task`, `--mem`, `--gpus`, a `--gres` of gpus), which `resources` says.
   */
  sbatchOptions?: readonly string[] | undefined;
  /** Submit a scale-up as one job array (default) or as separate jobs. */
  array?: boolean | undefined;
  /**
   * What each worker offers (default `{ cpus: 1 }`); asked of Slurm as `--cpus-per-task`,
   * `--mem` (MiB) and `--gres=gpu:N`.
   */
  resources?: Resources | undefined;
  /**
   * The coordinator's address as the nodes reach it, HOST:PORT or ws://HOST:PORT, each
   * worker's `--connect` (default: the address it listens on, and for a wildcard `listen`
   * such as `0.0.0.0:7000`, which no node reaches, this machine's host name with that port,
   * `os.hostname()`; give another when the nodes reach it by another name, `login1.ib:7000`).
   * Port 0 and a wildcard host are refused when the pool is made, and `connect` without
   * `createEngine`'s `listen` by `createEngine`.
   */
  connect?: string | undefined;
  /** How often the queue is read and the pool rescaled (default 1000 ms). */
  pollMs?: number | undefined;
  /**
   * Longest any Slurm command may take (default 30 s); while none has succeeded, no longer
   * than what is left of `unreachableMs`.
   */
  commandTimeoutMs?: number | undefined;
  /**
   * On stop, how long the allocations whose worker joined the run, and was not given up on by
   * the coordinator, get to end on their own before `scancel` (default 5 s, or `abortGraceMs`
   * when longer); the others are cancelled at once. One whose worker runs a handler that
   * ignored its abort through a cancel's grace is ended with SIGKILL once what is left of
   * `abortGraceMs` since that abort has passed (at once without it), as `localPool` does.
   */
  graceMs?: number | undefined;
  /** On stop, how long to wait for the queue to confirm every allocation gone (default 60 s). */
  stopTimeoutMs?: number | undefined;
  /** Restarts of a dead worker inside one allocation before the allocation fails (default 5). */
  workerRestarts?: number | undefined;
  /**
   * How long, in ms, a worker stays without a job before it leaves the run, so that its
   * allocation ends and gives its node back (default 5 min; `Infinity`: never, each worker
   * stays until the run ends). Its workers run `baton worker --idle-exit`: a worker leaves as
   * a stopped one does, so a job handed to it as it leaves goes back to ready, and the pool
   * submits new allocations if demand rises again. `baton run --slurm-idle-exit DURATION`.
   *
   * @example
   * ```ts
   * // A long tail: nodes whose workers have had nothing to do for a minute are given back.
   * slurmPool({ jobsModule: "/shared/jobs.ts", maxWorkers: 64, idleExitMs: 60_000 });
   * ```
   */
  idleExitMs?: number | undefined;
  /**
   * How long Slurm's commands may fail on every call from the pool's start, none having
   * succeeded yet, before the pool fails with `SLURM_UNREACHABLE` (default 30 s; `Infinity`:
   * never): no working Slurm client on this machine. Once one has succeeded, failures are
   * tolerated. `baton run --slurm-unreachable-after DURATION`.
   */
  unreachableMs?: number | undefined;
  /** The Slurm commands (default: the real ones, with `commandTimeoutMs`). */
  commands?: SlurmCommands | undefined;
  clock?: Clock | undefined;
}

/** The allocations of a pool as the last poll saw them. */
export interface SlurmPoll {
  demand: number;
  allocations: AllocationView[];
}

export interface SlurmPoolEvents {
  /** New allocations. */
  submitted: [string[]];
  /** Allocations `scancel` was asked for; `scaleDown` means with `--state=PENDING`. */
  cancelled: [{ ids: string[]; scaleDown: boolean }];
  /** After every poll that read the queue. */
  poll: [SlurmPoll];
  failed: [SlurmError];
}

/** An allocation the pool holds. */
interface Allocation extends AllocationView {
  /** A pending-only cancel was sent (scale-down) or any cancel (stop). */
  cancelRequested: boolean;
  /** Slurm's reason for it, as the last poll read it (`Priority`, `Resources`, ...). */
  reason: string;
}

/** The options `slurmPool` takes, by name, for `checkOptionNames`. */
export const SLURM_POOL_OPTIONS: Record<keyof SlurmPoolOptions, true> = {
  jobsModule: true,
  maxWorkers: true,
  partition: true,
  sbatchOptions: true,
  array: true,
  resources: true,
  connect: true,
  pollMs: true,
  commandTimeoutMs: true,
  graceMs: true,
  stopTimeoutMs: true,
  workerRestarts: true,
  idleExitMs: true,
  unreachableMs: true,
  commands: true,
  clock: true,
  handlerThread: true,
  logLevel: true,
  abortGraceMs: true,
};

/**
 * Baton workers in Slurm allocations; see `startSlurmPool`. The CLI's `baton run --slurm`.
 *
 * @example
 * ```ts
 * const engine = createEngine({
 *   jobs,
 *   workers: slurmPool({ jobsModule: "/shared/jobs.ts", maxWorkers: 16, partition: "cpu" }),
 *   store: "/shared/.baton",
 *   listen: "0.0.0.0:7000",
 * });
 * ```
 */
export function slurmPool(options: SlurmPoolOptions): WorkerPool {
  checkOptionNames("slurmPool", options, SLURM_POOL_OPTIONS, {
    shape: "{ jobsModule, maxWorkers, partition, … }",
  });
  requireJobsModule("slurmPool", options.jobsModule);
  checkPoolOptions("slurmPool", options);
  checkConnect("slurmPool", options.connect);
  checkSbatchOptions(options.sbatchOptions, "slurmPool");
  checkSlurmPoolOptions(options);
  const maxWorkers = options.maxWorkers ?? DEFAULT_MAX_WORKERS;
  requireWhole("slurmPool", "maxWorkers", maxWorkers);
  checkWorkerCount("slurmPool: maxWorkers", maxWorkers, "connected");
  idleExitFlags(options);
  const resources = options.resources ?? DEFAULT_WORKER_RESOURCES;
  return {
    offers: [resources],
    offerMore: (enough) => resourcesAdvice("slurmPool", enough),
    remote: true,
    jobsModule: options.jobsModule,
    connect: options.connect,
    start: (context) => startSlurmPool(options, context),
  };
}

/**
 * Starts a Slurm pool for one run. Every `pollMs` it reads the queue (`squeue`, and
 * `scontrol show job` for an allocation the queue no longer lists) and sizes itself to the
 * run's demand (`context.demand`: jobs ready or running its workers can take) capped at
 * `maxWorkers`, by `decideScaling`: it submits what is missing (one job array, or separate
 * jobs) and cancels the newest pending allocations beyond it, with `scancel --state=PENDING`
 * so that Slurm itself refuses to cancel one that has just started. Each allocation runs a
 * batch script (0700, next to the run's secret file, removed by a stop that saw every
 * allocation end) that starts `baton worker --connect ... --secret-file FILE` and restarts
 * it, up to `workerRestarts` times, if it dies: the job it held goes back to the coordinator
 * (WORKER_LOST) and the allocation lives on. Its log is `<logsDir>/slurm-<allocation>.log`.
 * A worker that has had no job for `idleExitMs` (5 min) leaves the run by itself, which ends
 * its allocation COMPLETED and gives its node back: the pool drops it as it does any
 * allocation that completes, and submits another when demand exceeds what is left.
 * On start it also cancels what is left active of the pools named by
 * `context.abandonedRunFiles` (batch scripts of coordinators that died on this host), and
 * warns when its workers are told a loopback address (`createEngine` without `listen`), which
 * a worker on another node takes for its own; an allocation that fails then says it again.
 *
 * An allocation that Slurm ends TIMEOUT, NODE_FAIL or PREEMPTED after its worker joined is
 * replaced: the job its worker held goes back (WORKER_LOST) and the next round submits
 * another while demand lasts. One that ends FAILED, CANCELLED (not by this pool),
 * OUT_OF_MEMORY (or BOOT_FAIL, DEADLINE, ...), or TIMEOUT before its worker joined, fails the
 * pool with a `SlurmError` naming it, its state, its log and the log's last lines; so does an `sbatch` that Slurm
 * refuses, and a Slurm command that is not on the PATH (`SLURM_MISSING`). A Slurm command
 * that fails or times out is logged (once while it fails the same way, then at most once a
 * minute) and means "no information": nothing is submitted, cancelled or concluded from it.
 * But when none has succeeded in the `unreachableMs` since the start, this machine is no
 * working Slurm client: the pool fails (`SLURM_UNREACHABLE`, quoting Slurm's last line).
 *
 * `stop()` cancels at once the allocations whose worker never joined the run
 * (`context.joined`; such a worker holds no job), those whose every joined worker the
 * coordinator gave up on (`context.gaveUpOn`: it hears no close), and the pending ones, gives the others
 * `graceMs` to end (their workers leave when the coordinator closes), cancels what is left,
 * and resolves once a successful `squeue` shows none of them active; after `stopTimeoutMs`
 * it rejects with `STOP_UNCONFIRMED` naming those left. An allocation whose worker runs a
 * handler that ignored its abort through a cancel's grace (`PoolStop.stuck`; never one
 * tearing a rank job's group down) is given what is left of `abortGraceMs` since that abort,
 * then ended with SIGKILL to its batch step (`SlurmCommands.kill`): `scancel`'s SIGTERM
 * would have its worker wait for that handler again, and Slurm its KillWait before SIGKILL.
 *
 * @example
 * ```ts
 * const pool = startSlurmPool({ jobsModule: "/shared/jobs.ts", maxWorkers: 2 }, context);
 * pool.on("submitted", (ids) => console.log("submitted", ids));
 * await pool.stop();
 * ```
 */
export function startSlurmPool(options: SlurmPoolOptions, context: PoolStart): SlurmPool {
  return new SlurmPool(options, context);
}

/** A running Slurm pool; see `startSlurmPool`. */
export class SlurmPool extends EventEmitter<SlurmPoolEvents> implements RunningPool {
  readonly failed: Promise<SlurmError>;
  /** Resolves once a Slurm command has answered: Slurm works from this machine. */
  readonly started: Promise<void>;
  /** The job name of every allocation of this pool (`baton-<8 hex>`). */
  readonly name: string;
  /** The batch script each allocation runs. */
  readonly script: string;
  private readonly commands: SlurmCommands;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly maxWorkers: number;
  private readonly pollMs: number;
  private readonly offer: Resources;
  private readonly sbatchOptions: string[];
  /**
   * When the workers are told a loopback address (no `listen`): why one on another node would
   * fail to join, and what to give instead; said as the pool starts and when an allocation fails.
   */
  private readonly loopbackAdvice: string | undefined;
  private readonly table = new Map<string, Allocation>();
  private order = 0;
  private timer: unknown;
  private polling: Promise<void> = Promise.resolve();
  /** Cancelling the allocations of pools whose coordinator died (see `cancelAbandoned`). */
  private readonly reaping: Promise<void>;
  private stopping: Promise<void> | undefined;
  /** Scaling has stopped for a failure. */
  private failing = false;
  /** `failed` has been resolved. */
  private reported = false;
  private resolveFailed: (error: SlurmError) => void = () => {};
  private resolveStarted: () => void = () => {};
  private readonly startedAt: number;
  /** A Slurm command has succeeded since the pool started. */
  private answered = false;
  /** The failure last logged (command and Slurm's last line), when, and the failures not logged since. */
  private lastWarning: { failure: string; at: number; unlogged: number } | undefined;
  /**
   * Since when every allocation has been pending (none running), and the pending reasons
   * last told and when; undefined while one runs or none is pending.
   */
  private waiting: { since: number; told?: { reasons: string; at: number } } | undefined;

  constructor(
    private readonly options: SlurmPoolOptions,
    private readonly context: PoolStart,
  ) {
    super();
    this.maxWorkers = options.maxWorkers ?? DEFAULT_MAX_WORKERS;
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
    if (context.secretFile === undefined) {
      throw new ConfigError("Slurm workers need the run's secret in a file");
    }
    this.offer = options.resources ?? DEFAULT_WORKER_RESOURCES;
    this.clock = options.clock ?? nodeClock();
    this.commands =
      options.commands ??
      nodeSlurmCommands({ timeoutMs: () => this.timeoutMs(), required: POOL_COMMANDS });
    this.startedAt = this.clock.now();
    this.name = `baton-${randomBytes(4).toString("hex")}`;
    this.logger = context.logger.child({ pool: this.name });
    this.failed = new Promise((resolve) => {
      this.resolveFailed = resolve;
    });
    this.started = new Promise((resolve) => {
      this.resolveStarted = resolve;
    });
    makeWorkerLogsFolder(context.logsDir);
    // Named after the run's secret, so that a run killed before its stop leaves a script the
    // next run on this host removes with the secret (`sweepAbandonedRunFiles`).
    const stem = context.secretFile.endsWith(".secret")
      ? context.secretFile.slice(0, -".secret".length)
      : join(dirname(context.secretFile), "run");
    this.script = `${stem}.${this.name}.sbatch`;
    const connect = workerConnect(options.connect, context.address, hostname());
    this.loopbackAdvice = isLoopback(connect)
      ? `its workers are told to connect to ${connect}, a loopback address, where only an allocation on this machine reaches the run: a worker on another node finds nothing there and exits 3. Give baton run --listen an address the nodes reach, such as --listen 0.0.0.0:7000 (createEngine's listen)`
      : undefined;
    if (this.loopbackAdvice !== undefined) {
      this.logger.warn(`the Slurm pool ${this.name}: ${this.loopbackAdvice}`);
    }
    writeFileSync(this.script, batchScript(options, connect, context, this.offer), {
      mode: 0o700,
    });
    this.sbatchOptions = sbatchOptions(options, this.offer);
    this.reaping = this.cancelAbandoned(context.abandonedRunFiles ?? []);
    this.schedule(0);
  }

  /** The allocations the pool holds now (pending or running), oldest first. */
  allocations(): AllocationView[] {
    return [...this.table.values()].map(({ id, state, order }) => ({ id, state, order }));
  }

  /**
   * What the pool's workers wait for, in words for a progress line, or undefined when nothing:
   * the allocations Slurm keeps pending, with Slurm's reasons (the first word of each) by
   * count, none while Slurm has not looked at them yet (`None`), and the workers starting in
   * allocations that run but whose worker has not joined the run yet (Node and the job module
   * loading from the shared filesystem: seconds, a minute on a busy node): "Slurm: 3
   * allocations pending (2 Priority, 1 Resources), 1 worker starting". Those a scale-down is
   * cancelling do not count; outside the engine (no `PoolStart.joined`) no worker is counted
   * as starting.
   */
  waitingFor(): string | undefined {
    const held = [...this.table.values()];
    const pending = held.filter((a) => a.state === "pending" && !a.cancelRequested);
    const starting =
      this.context.joined === undefined
        ? 0
        : held.filter((a) => a.state === "running" && !this.workerJoined(a)).length;
    const counts = new Map<string, number>();
    for (const { reason } of pending) {
      const word = /^\w+/.exec(reason)?.[0];
      if (word !== undefined && word !== "None") counts.set(word, (counts.get(word) ?? 0) + 1);
    }
    const sorted = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    const reasons =
      sorted.length === 0
        ? ""
        : sorted.length === 1
          ? ` (${sorted[0]![0]})`
          : ` (${sorted.map(([reason, count]) => `${count} ${reason}`).join(", ")})`;
    const n = pending.length;
    const waits = [
      ...(n > 0 ? [`${n} allocation${n === 1 ? "" : "s"} pending${reasons}`] : []),
      ...(starting > 0 ? [`${starting} worker${starting === 1 ? "" : "s"} starting`] : []),
    ];
    return waits.length === 0 ? undefined : `Slurm: ${waits.join(", ")}`;
  }

  /**
   * " The partitions Slurm lists here: debug (its default), gpu." for a refusal that names
   * the partition; "" when `sinfo` does not answer (the refusal stands without the list).
   */
  private async partitionsHere(): Promise<string> {
    const listed = await this.commands.partitions().catch(() => []);
    if (listed.length === 0) return "";
    const names = listed.map((p) => (p.endsWith("*") ? `${p.slice(0, -1)} (its default)` : p));
    return ` The partitions Slurm lists here: ${names.join(", ")}.`;
  }

  /** The log file of an allocation. */
  logFile(id: string): string {
    return join(this.context.logsDir, `slurm-${id}.log`);
  }

  stop(ended?: PoolStop): Promise<void> {
    this.stopping ??= this.shutDown(ended?.stuck);
    return this.stopping;
  }

  private schedule(ms: number): void {
    this.timer = this.clock.setTimeout(() => {
      this.polling = this.scale().finally(() => {
        if (this.stopping === undefined && !this.failing) this.schedule(this.pollMs);
      });
    }, ms);
  }

  /** One round: read the queue, settle what ended, then submit or cancel to meet demand. */
  private async scale(): Promise<void> {
    if (!(await this.refresh())) return;
    if (this.failing || this.stopping !== undefined) return;
    this.watchPending();
    if (this.failing) return;
    const demand = this.context.demand?.(this.offer) ?? this.maxWorkers;
    const allocations = this.allocations();
    const decision = decideScaling({ demand, maxWorkers: this.maxWorkers, allocations });
    this.emit("poll", { demand, allocations });
    if (decision.cancel.length > 0) {
      this.logger.info({ allocations: decision.cancel, demand }, "cancelling pending allocations");
      for (const id of decision.cancel) this.table.get(id)!.cancelRequested = true;
      this.emit("cancelled", { ids: decision.cancel, scaleDown: true });
      await this.commands
        .cancel(decision.cancel, { pendingOnly: true })
        .catch((error: unknown) => this.noInformation("scancel", error));
    }
    if (decision.submit > 0) await this.submit(decision.submit, demand);
  }

  private async submit(count: number, demand: number): Promise<void> {
    let ids: string[];
    try {
      ids = await this.commands.submit({
        script: this.script,
        name: this.name,
        count,
        array: this.options.array ?? true,
        logsDir: this.context.logsDir,
        options: this.sbatchOptions,
      });
    } catch (error) {
      if (error instanceof SlurmError && error.code === "SBATCH_REJECTED") {
        // A cluster's MaxArraySize (1001 by default) or a per-user submit limit refuses many
        // at once; a bad partition or option refuses one as well, and then the hint misleads.
        const many =
          count > 1 && SUBMIT_LIMIT.test(error.message)
            ? `, or ask for fewer allocations at once with --max-workers (maxWorkers): this submission asked for ${count}${this.options.array === false ? "" : " as one job array"}, which a limit of the cluster's (MaxArraySize, MaxSubmitJobs) may refuse`
            : "";
        const partitions = INVALID_PARTITION.test(error.message) ? await this.partitionsHere() : "";
        this.fail(
          new SlurmError(
            "SBATCH_REJECTED",
            `Slurm refused the pool's allocations: ${error.message}. Check --partition and --slurm-opt${many}.${partitions}`,
          ),
        );
      } else {
        // A timed-out sbatch may still have submitted: the next squeue adopts what carries our name.
        this.noInformation("sbatch", error);
      }
      return;
    }
    this.answer();
    for (const id of ids) {
      this.table.set(id, {
        id,
        state: "pending",
        order: this.order++,
        cancelRequested: false,
        reason: "None",
      });
    }
    this.logger.info({ allocations: ids, demand }, "allocations submitted");
    this.emit("submitted", ids);
  }

  /**
   * Reads the queue and settles every allocation it knows. Returns false when the queue
   * could not be read: then nothing changed.
   */
  private async refresh(): Promise<boolean> {
    let entries: QueueEntry[];
    try {
      entries = await this.commands.queue(this.name);
    } catch (error) {
      this.noInformation("squeue", error);
      return false;
    }
    this.answer();
    this.lastWarning = undefined;
    const listed = new Map(entries.map((entry) => [entry.id, entry]));
    for (const entry of entries) {
      const phase = allocationPhase(entry.state);
      if (this.table.has(entry.id) || (phase !== "pending" && phase !== "running")) continue;
      // Ours by name, not known: an sbatch that timed out after submitting.
      this.logger.warn({ allocation: entry.id, state: entry.state }, "adopting allocation");
      this.table.set(entry.id, {
        id: entry.id,
        state: phase,
        order: this.order++,
        cancelRequested: false,
        reason: entry.reason,
      });
    }
    for (const allocation of [...this.table.values()]) {
      let entry = listed.get(allocation.id) ?? arrayRecordOf(listed, allocation.id);
      if (entry === undefined) {
        try {
          entry = await this.commands.show(allocation.id);
        } catch (error) {
          this.noInformation("scontrol show job", error);
          continue;
        }
        if (entry === undefined) {
          this.logger.warn(
            { allocation: allocation.id },
            "Slurm no longer knows this allocation; counting it as ended",
          );
          this.table.delete(allocation.id);
          continue;
        }
      }
      this.settle(allocation, entry);
    }
    return true;
  }

  private settle(allocation: Allocation, entry: QueueEntry): void {
    const phase = allocationPhase(entry.state);
    switch (phase) {
      case undefined:
        return;
      case "pending":
        allocation.state = "pending";
        allocation.reason = entry.reason;
        return;
      case "running":
        // A pending-only cancel does not touch a job that has started.
        if (allocation.state === "pending" && this.stopping === undefined) {
          allocation.cancelRequested = false;
        }
        allocation.state = "running";
        return;
      case "ended":
        this.table.delete(allocation.id);
        this.logger.info({ allocation: allocation.id, state: entry.state }, "allocation ended");
        return;
      case "lost":
        this.table.delete(allocation.id);
        if (this.stopping !== undefined) {
          this.logger.info({ allocation: allocation.id, state: entry.state }, "allocation ended");
          return;
        }
        // A time limit that ends a worker before it joins would end every replacement so.
        if (entry.state.startsWith("TIMEOUT") && !this.workerJoined(allocation)) {
          this.failAllocation(
            allocation.id,
            entry,
            " before its worker joined the run: its time limit leaves a worker no time to start (raise --time in --slurm-opt, or leave it out for the partition's default)",
          );
          return;
        }
        // Its worker is gone: the coordinator hands its job on (WORKER_LOST), and the next
        // round submits a replacement while jobs remain.
        this.logger.warn(
          { allocation: allocation.id, state: entry.state, reason: entry.reason },
          `Slurm allocation ${allocation.id} ended ${entry.state}${reasonOf(entry)}: the job its worker held goes back and is retried, and another allocation is submitted while jobs remain`,
        );
        return;
      case "failed": {
        this.table.delete(allocation.id);
        const ours =
          entry.state.startsWith("CANCELLED") &&
          (allocation.cancelRequested || this.stopping !== undefined);
        if (ours || this.stopping !== undefined) {
          this.logger.info({ allocation: allocation.id, state: entry.state }, "allocation ended");
          return;
        }
        this.failAllocation(allocation.id, entry, "");
        return;
      }
    }
  }

  /**
   * Tells the user why the run waits for Slurm. An allocation pending for a reason that
   * Slurm will never start it for as asked (`pendingReason`) fails the pool
   * (`ALLOCATION_UNSATISFIABLE`), as an `sbatch` that refuses it would. When every
   * allocation has been pending, none running, for `PENDING_WARNING_MS`, a warning says for
   * how long and Slurm's reasons in words; again when they change, and at most every
   * `REPEAT_PENDING_MS` while they do not.
   */
  private watchPending(): void {
    const pending = [...this.table.values()].filter((a) => a.state === "pending");
    const blocked = pending.find((a) => pendingReason(a.reason).blocked);
    if (blocked !== undefined) {
      this.fail(
        new SlurmError(
          "ALLOCATION_UNSATISFIABLE",
          `Slurm will not start allocation ${blocked.id} of pool ${this.name} as asked: it is pending for ${blocked.reason}, ${pendingReason(blocked.reason).says}. ` +
            `Change what the pool asks for (--slurm-resources, --partition, --slurm-opt; its sbatch options are ${this.sbatchOptions.join(" ")}), or ask the cluster's administrators; ` +
            `\`scontrol show job ${blocked.id}\` and \`scontrol show partition\` show the request and the limits.`,
          [blocked.id],
        ),
      );
      return;
    }
    if (pending.length === 0 || pending.length < this.table.size) {
      this.waiting = undefined;
      return;
    }
    const now = this.clock.now();
    this.waiting ??= { since: now };
    const waited = now - this.waiting.since;
    if (waited < PENDING_WARNING_MS) return;
    const reasons = reasonsOf(pending);
    const { told } = this.waiting;
    if (told?.reasons === reasons && now - told.at < REPEAT_PENDING_MS) return;
    this.waiting.told = { reasons, at: now };
    this.logger.warn(
      { allocations: pending.map((a) => a.id) },
      `no allocation of the Slurm pool ${this.name} has started in ${formatDuration(waited)}: ${reasons}; the run waits for Slurm (\`squeue -n ${this.name}\` lists them)`,
    );
  }

  /** Fails the pool with `ALLOCATION_FAILED` for an allocation that ended `entry.state`. */
  private failAllocation(id: string, entry: QueueEntry, when: string): void {
    this.halt();
    const log = this.logFile(id);
    void logTail(log).then((tail) =>
      this.fail(
        new SlurmError(
          "ALLOCATION_FAILED",
          `Slurm allocation ${id} of pool ${this.name} ended ${entry.state}${reasonOf(entry)}${when}, ` +
            "so the run stops. " +
            (this.loopbackAdvice === undefined
              ? ""
              : `If its worker could not connect: ${this.loopbackAdvice}. `) +
            `Its log ${log} says what its worker did; ` +
            `\`scontrol show job ${id}\` says why Slurm ended it (while Slurm remembers it). ${tail}`,
          [id],
          log,
        ),
      ),
    );
  }

  /**
   * Cancels every allocation still pending or running of the pools whose batch scripts the
   * engine found abandoned: their coordinator died on this host, so a pending one would only
   * start a worker that cannot connect, and a running one holds a node for nothing.
   */
  private async cancelAbandoned(runFiles: readonly string[]): Promise<void> {
    const { cancelled, failed } = await cancelAbandonedAllocations(runFiles, this.commands);
    // A warning, so that `baton run` shows it: the user who killed a run learns where its
    // allocations went, and that this run will not find their workers.
    for (const { pool, allocations } of cancelled) {
      this.logger.warn(
        { abandonedPool: pool, allocations },
        `cancelled the Slurm allocations ${allocations.join(", ")} of pool ${pool}, left in the queue by a baton run on this host that was killed: their workers could only fail to reach it`,
      );
    }
    for (const { pool, error } of failed) {
      this.logger.warn(
        { err: error, abandonedPool: pool },
        `could not cancel the allocations of the Slurm pool ${pool}, whose coordinator died on this host; cancel them with \`scancel -n ${pool}\``,
      );
    }
  }

  /**
   * A Slurm command failed: no information. A failure is logged when it is new or changed,
   * and the same one again at most every `REPEAT_WARNING_MS`, with the count of those not
   * logged. Slurm failing on every call since the start for `unreachableMs` fails the pool.
   */
  private noInformation(command: string, error: unknown): void {
    // Slurm's commands missing from this machine is no passing failure: no round will do better.
    if (error instanceof SlurmError && error.code === "SLURM_MISSING") {
      this.fail(error);
      return;
    }
    const said = lastLine(error instanceof Error ? error.message : String(error));
    const now = this.clock.now();
    const unreachableMs = this.options.unreachableMs ?? DEFAULT_UNREACHABLE_MS;
    if (!this.answered && this.stopping === undefined && now - this.startedAt >= unreachableMs) {
      this.fail(
        new SlurmError(
          "SLURM_UNREACHABLE",
          `no Slurm command has succeeded in the ${formatDuration(now - this.startedAt)} since the pool started (--slurm-unreachable-after, slurmPool's unreachableMs: ${formatDuration(unreachableMs)}); ${command} last said: ${said}. ` +
            "This machine is no working Slurm client: check `scontrol ping` and the Slurm configuration here (slurm.conf, SLURM_CONF), run baton on a login node of the cluster, or run without --slurm. " +
            "If Slurm here only answers late (a controller restarting), wait longer with baton run --slurm-unreachable-after (slurmPool's unreachableMs).",
        ),
      );
      return;
    }
    const failure = `${command}: ${said}`;
    const last = this.lastWarning;
    if (last !== undefined && last.failure === failure && now - last.at < REPEAT_WARNING_MS) {
      last.unlogged++;
      return;
    }
    const since =
      last?.failure === failure && last.unlogged > 0
        ? ` (failed ${last.unlogged} more times since the last warning)`
        : "";
    this.lastWarning = { failure, at: now, unlogged: 0 };
    this.logger.warn(
      { err: error },
      `${command} failed${since}; no information this round, nothing is concluded from it`,
    );
  }

  /** A Slurm command has answered: the pool has started. */
  private answer(): void {
    this.answered = true;
    if (!this.reported) this.resolveStarted();
  }

  /**
   * A Slurm command's timeout: `commandTimeoutMs`, but while none has succeeded, no longer
   * than what is left of `unreachableMs`, so that a command that hangs (a controller that does
   * not answer) cannot hold the pool past the bound the user gave; and not under
   * `LAST_COMMAND_MS`, so that the last command before the bound, one that fails at once, can
   * still say why (its `fatal:` line, not that it was killed). A command killed is told which
   * of the two it outlived, as the way to wait longer.
   */
  private timeoutMs(): CommandTimeout {
    const commandTimeoutMs = this.options.commandTimeoutMs ?? SLURM_COMMAND_TIMEOUT_MS;
    const command = { ms: commandTimeoutMs, setBy: COMMAND_TIMEOUT };
    if (this.answered || this.stopping !== undefined) return command;
    const left =
      this.startedAt + (this.options.unreachableMs ?? DEFAULT_UNREACHABLE_MS) - this.clock.now();
    const bound = Math.max(LAST_COMMAND_MS, Math.ceil(left));
    return bound < commandTimeoutMs
      ? { ms: bound, setBy: "--slurm-unreachable-after (slurmPool's unreachableMs)" }
      : command;
  }

  /** Stops scaling: nothing is submitted or cancelled any more until `stop()`. */
  private halt(): void {
    this.failing = true;
    this.clock.clearTimeout(this.timer);
  }

  private fail(error: SlurmError): void {
    if (this.reported) return;
    this.reported = true;
    this.halt();
    this.resolveFailed(error);
    this.emit("failed", error);
  }

  private async shutDown(stuck: PoolStop["stuck"]): Promise<void> {
    this.clock.clearTimeout(this.timer);
    await this.polling;
    await this.reaping;
    const stopTimeoutMs = this.options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
    const started = this.clock.now();
    const waitMs = Math.min(this.pollMs, 250);
    // An allocation whose worker never joined holds no job, nor does one whose every joined
    // worker the coordinator gave up on (an expired lease, a silence, a broken link: such a
    // worker hears no close), and a pending one would only start a worker with nothing to
    // do: all are cancelled at once (one the queue shows only now, an sbatch that timed out,
    // as soon as it does). One whose worker runs a handler that ignored its abort through a
    // cancel's grace (`stuck`) is ended once what is left of `abortGraceMs` since that abort
    // has passed, with SIGKILL to its batch step: scancel's SIGTERM would have its worker wait
    // for that handler again, and Slurm the allocation's KillWait. The others end on their
    // own: the coordinator has closed their workers' connections.
    const stuckUntil =
      started + Math.max(0, (this.options.abortGraceMs ?? 0) - (stuck?.abortedMsAgo ?? 0));
    const unawaited = new Set<string>();
    const cancelUnawaited = async () => {
      const fresh = this.allocations().filter((a) => !unawaited.has(a.id));
      const due = stuck !== undefined && this.clock.now() >= stuckUntil;
      const held = due ? this.runningStuck(fresh, stuck) : [];
      const idle = fresh.filter((a) => !held.some((h) => h.id === a.id) && !this.workerServing(a));
      for (const a of [...held, ...idle]) unawaited.add(a.id);
      for (const { id, worker, job } of held) {
        this.logger.warn(
          { allocation: id, worker, job: job.id, kind: job.kind, log: this.logFile(id) },
          `ending the Slurm allocation ${id} at once (SIGKILL to its batch step): the handler of job ${job.id} (${job.kind}) on its worker ${worker} ignored its abort through the cancel's grace (${stuck?.abortedMsAgo} ms), and would hold the node until it returns`,
        );
      }
      await this.cancel(
        held.map((a) => a.id),
        "kill",
      );
      await this.cancel(idle.map((a) => a.id));
    };
    await cancelUnawaited();
    const graceUntil =
      started +
      (this.options.graceMs ?? Math.max(DEFAULT_STOP_GRACE_MS, this.options.abortGraceMs ?? 0));
    while (this.table.size > 0 && this.clock.now() < graceUntil) {
      await this.sleep(waitMs);
      await this.refresh();
      await cancelUnawaited();
    }
    let cancelledAt = Number.NEGATIVE_INFINITY;
    while (this.table.size > 0) {
      if (this.clock.now() - started > stopTimeoutMs) {
        const left = [...this.table.keys()];
        throw new SlurmError(
          "STOP_UNCONFIRMED",
          `the Slurm pool ${this.name} could not confirm within ${stopTimeoutMs} ms that its allocations ended: ${left.join(", ")}. Check with \`squeue -n ${this.name}\` and cancel them with \`scancel -n ${this.name}\`.`,
          left,
        );
      }
      // Again every few seconds: a cancel can be lost with a failing slurmctld.
      if (this.clock.now() - cancelledAt > 5000) {
        cancelledAt = this.clock.now();
        await this.cancel([...this.table.keys()]);
      }
      await this.sleep(waitMs);
      await this.refresh();
    }
    rmSync(this.script, { force: true });
    this.logger.info("every allocation has ended");
  }

  /**
   * Whether a worker of this allocation joined the run: one of the names the batch script
   * gives it (`slurm-<id>`, then `slurm-<id>.2`, ... for its restarts) is one the
   * coordinator accepted. A stop calls it after the coordinator stopped accepting workers,
   * so a worker whose hello was still on its way never joins. Outside the engine (no
   * `PoolStart.joined`) a running allocation counts as joined and a pending one does not.
   */
  private workerJoined(allocation: AllocationView): boolean {
    const { joined } = this.context;
    if (joined === undefined) return allocation.state === "running";
    return this.workerNames(allocation).some(joined);
  }

  /**
   * Whether a worker of this allocation joined the run and the coordinator has not given up
   * on it since (`PoolStart.gaveUpOn`): the stop waits for such a worker to leave when the
   * coordinator closes its connection. One given up on (its lease expired, it fell silent,
   * its link broke) hears no close; a restart of it that joined since counts on its own name.
   */
  private workerServing(allocation: AllocationView): boolean {
    const { joined, gaveUpOn } = this.context;
    if (joined === undefined || gaveUpOn === undefined) return this.workerJoined(allocation);
    return this.workerNames(allocation).some((name) => joined(name) && !gaveUpOn(name));
  }

  /**
   * Those of `allocations` whose worker (under any of its names) is one of `stuck.workers`,
   * whose handlers ignored their abort through a cancel's grace, with that worker and its job.
   */
  private runningStuck(
    allocations: readonly AllocationView[],
    stuck: NonNullable<PoolStop["stuck"]>,
  ): { id: string; worker: string; job: StuckJob }[] {
    return allocations.flatMap(({ id }) => {
      const worker = this.workerNames({ id }).find((name) => stuck.workers.has(name));
      return worker === undefined ? [] : [{ id, worker, job: stuck.workers.get(worker)! }];
    });
  }

  /** The names the batch script gives an allocation's worker and its restarts. */
  private workerNames(allocation: Pick<AllocationView, "id">): string[] {
    const restarts = this.options.workerRestarts ?? WORKER_RESTARTS;
    return Array.from({ length: restarts + 1 }, (_, i) => workerName(allocation.id, i + 1));
  }

  /**
   * A stop's `scancel` (any state), or with `kill` SIGKILL to the allocations' batch steps
   * (`SlurmCommands.kill`); a failure is retried by the caller's loop.
   */
  private async cancel(ids: string[], how: "cancel" | "kill" = "cancel"): Promise<void> {
    if (ids.length === 0) return;
    for (const id of ids) this.table.get(id)!.cancelRequested = true;
    this.emit("cancelled", { ids, scaleDown: false });
    const sent =
      how === "kill" ? this.commands.kill(ids) : this.commands.cancel(ids, { pendingOnly: false });
    await sent.catch((error: unknown) => this.noInformation("scancel", error));
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimeout(() => resolve(), ms));
  }
}

/**
 * The entry of an array task that Slurm lists only as its array: the tasks of an array that
 * have not started share the array's own record, and once that record has ended (one
 * `scancel` of several pending tasks) `squeue` lists it under the array's id (`1234`, not
 * `1234_5`) and `scontrol show job 1234_5` says "Job 1234_5 not found". Such a task's state
 * is its array record's; undefined for a plain allocation or when no such record is listed.
 */
function arrayRecordOf(
  listed: ReadonlyMap<string, QueueEntry>,
  id: string,
): QueueEntry | undefined {
  const array = /^(\d+)_\d+$/.exec(id)?.[1];
  const record = array === undefined ? undefined : listed.get(array);
  return record && { ...record, id };
}

/** "3 pending for Priority (jobs of higher priority are ahead of it), 1 for Resources (...)". */
function reasonsOf(pending: readonly Allocation[]): string {
  const counts = new Map<string, number>();
  for (const { reason } of pending) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([reason, count], i) => {
      const says = pendingReason(reason).says;
      return `${count}${i === 0 ? " pending" : ""} for ${reason}${says === undefined ? "" : ` (${says})`}`;
    })
    .join(", ");
}

/** ` (reason: R)` for an entry with a reason other than Slurm's `None`, else "". */
function reasonOf(entry: QueueEntry): string {
  return entry.reason && entry.reason !== "None" ? ` (reason: ${entry.reason})` : "";
}

/** The last non-empty line of a command's error: Slurm's own conclusion, not its whole trace. */
function lastLine(message: string): string {
  return (
    message
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "")
      .at(-1) ?? message
  );
}

/** `sbatch` options for one worker offering `offer`, then the user's. */
function sbatchOptions(options: SlurmPoolOptions, offer: Resources): string[] {
  return [
    `--cpus-per-task=${Math.max(1, Math.ceil(offer.cpus ?? 1))}`,
    ...(offer.memory ? [`--mem=${Math.ceil(offer.memory)}M`] : []),
    ...(offer.gpus ? [`--gres=gpu:${Math.ceil(offer.gpus)}`] : []),
    ...(options.partition !== undefined ? [`--partition=${options.partition}`] : []),
    `--chdir=${process.cwd()}`,
    ...(options.sbatchOptions ?? []),
  ];
}

/**
 * The name the batch script gives the `n`th worker of an allocation: `slurm-1234_5`, then
 * `slurm-1234_5.2`, ... for its restarts.
 */
function workerName(allocation: string, n: number): string {
  return n === 1 ? `slurm-${allocation}` : `slurm-${allocation}.${n}`;
}

/**
 * The `baton worker` flags for `idleExitMs`: `--idle-exit 300000ms` by default, none for
 * `Infinity`. Anything but a whole number of ms ≥ 1 or `Infinity` is a `ConfigError`.
 */
function idleExitFlags(options: SlurmPoolOptions): string[] {
  const ms = options.idleExitMs ?? IDLE_EXIT_MS;
  if (ms === Number.POSITIVE_INFINITY) return [];
  if (!(Number.isSafeInteger(ms) && ms >= 1)) {
    throw new ConfigError(
      `slurmPool: idleExitMs must be a whole number of ms of 1 or more, such as 300000 for 5 min (Infinity: workers never leave before the run ends), not ${ms}`,
    );
  }
  return ["--idle-exit", `${ms}ms`];
}

/**
 * The batch script: one `baton worker` per allocation, named after it (`slurm-1234_5`,
 * restarts `slurm-1234_5.2`, ...), not restarted after `FINAL_WORKER_EXITS` (bad usage, a job
 * module that does not load, a setup the coordinator refused). The secret stays in its file;
 * the script names the file.
 */
function batchScript(
  options: SlurmPoolOptions,
  connect: string,
  context: PoolStart,
  offer: Resources,
): string {
  const restarts = options.workerRestarts ?? WORKER_RESTARTS;
  const worker = [
    process.execPath,
    BATON_BIN,
    "worker",
    "--connect",
    connect,
    "--secret-file",
    context.secretFile!,
    "--jobs",
    options.jobsModule,
    "--cpus",
    String(offer.cpus ?? 0),
    "--gpus",
    String(offer.gpus ?? 0),
    "--memory",
    String(offer.memory ?? 0),
    ...workerProcessFlags(options),
    ...idleExitFlags(options),
  ]
    .map(shellQuote)
    .join(" ");
  return `#!/bin/sh
# baton: one worker in this Slurm allocation; a worker that dies is restarted (${restarts} times at most).
alloc="\${SLURM_ARRAY_JOB_ID:+\${SLURM_ARRAY_JOB_ID}_\${SLURM_ARRAY_TASK_ID}}"
alloc="\${alloc:-$SLURM_JOB_ID}"
n=1
while :; do
  name="slurm-$alloc"
  [ "$n" -gt 1 ] && name="$name.$n"
  echo "[baton slurm $(date -u +%Y-%m-%dT%H:%M:%SZ)] starting worker $name on $(hostname)"
  ${worker} --name "$name"
  code=$?
  [ "$code" -eq 0 ] && exit 0
  echo "[baton slurm $(date -u +%Y-%m-%dT%H:%M:%SZ)] worker $name exited with code $code"
  # ${FINAL_WORKER_EXITS.join(", ")}: bad usage, a job module that does not load here, or a setup the
  # coordinator refused (secret, job module, protocol version); another try would do the same.
  case "$code" in ${FINAL_WORKER_EXITS.join("|")}) exit "$code" ;; esac
  [ "$n" -gt ${restarts} ] && exit "$code"
  n=$((n + 1))
  sleep 1
done
`;
}
