import { hostname } from "node:os";
import { join } from "node:path";
import pino, { type Logger } from "pino";
import { type Actor, createActor } from "xstate";
import type { ListenerError, StoreError } from "../errors.ts";
import type { JobSpec, Json, Resources } from "../graph/job.ts";
import { namedJobs } from "../graph/namedJobs.ts";
import { planGraph } from "../graph/planGraph.ts";
import { coordinatorMachine } from "../machines/coordinator.ts";
import { demandGauge } from "../machines/demand.ts";
import type { CoordinatorEffect, JobBoard, JobRecord } from "../machines/jobBoard.ts";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import { AttemptLog } from "./attemptLog.ts";
import { checkEngineOptions } from "./checkEngineOptions.ts";
import { reachedFrom } from "./coordinatorAddress.ts";
import {
  type ConnectionTimeouts,
  CoordinatorServer,
  MAX_HANDSHAKE_BYTES,
} from "./coordinatorServer.ts";
import { guardInspect, type InspectOption } from "./guardInspect.ts";
import { inProcessPool } from "./inProcessPool.ts";
import { jobJson } from "./jobJson.ts";
import { type JobModule, type LoadedJobs, loadJobs } from "./jobModule.ts";
import { listenClaim } from "./listenClaim.ts";
import { memoryNet } from "./memoryNet.ts";
import { moduleSource } from "./moduleSource.ts";
import { nodeClock } from "./nodeClock.ts";
import { nodeEntropy } from "./nodeEntropy.ts";
import { nodeFiles } from "./nodeFiles.ts";
import { poisonExits } from "./poisonExits.ts";
import type { Clock, Entropy, Files, Listener, Net } from "./ports.ts";
import { resourcesAdvice } from "./resourcesAdvice.ts";
import { ResultStore } from "./resultStore.ts";
import { STORE_FULL_WAIT_MS, writeResults } from "./resultWriter.ts";
import {
  cancelOnAbort,
  type JobEvent,
  type JobOutcome,
  type JobStatus,
  Run,
  type RunOptions,
  type RunProgress,
  type RunResult,
  runSignal,
} from "./run.ts";
import { sweepAbandonedRunFiles } from "./runFiles.ts";
import { DEFAULT_KEEP_LOGS, markRunLogsEnded, pruneRunLogs, runLogsDir } from "./runLogs.ts";
import { keptSecret, writeSecretFile } from "./secret.ts";
import { unservedWarning, waitsForOffers } from "./unservedJobs.ts";
import type { PoolStop, RunningPool, WorkerPool } from "./workerPool.ts";
import { DEFAULT_MAX_FRAME_BYTES, wsNet } from "./wsNet.ts";

/** How long a cancelled run waits for its running jobs to stop before it shuts down. */
export const DEFAULT_CANCEL_GRACE_MS = 10_000;
/** How often a run emits `progress` unless told (`progressIntervalMs`). */
export const DEFAULT_PROGRESS_INTERVAL_MS = 200;
/** A `store.reading` event every this many stored results read (and one at the end). */
const STORE_READING_EVERY = 500;

/** How many of the jobs a cancel's grace ran out on its reason names; the rest are counted. */
const NAMED_STUCK_JOBS = 5;

/** `createEngine`'s `workers` as a count and resources of in-process workers. */
export interface WorkersOption {
  /** How many workers (default: the machine's cores). */
  count?: number | undefined;
  /** What each worker offers (default: the machine's cores and memory, no gpus). */
  resources?: Resources | undefined;
}

/** What `createEngine` takes: the job module, and how and where its jobs run (README, "Embedding"). */
export interface EngineOptions extends ConnectionTimeouts {
  /** The job module: kind → handler. */
  jobs: JobModule | LoadedJobs;
  /**
   * Who runs the jobs: a count (or count and resources) of in-process workers, or a pool
   * such as `localPool(...)` for worker processes. Default: one in-process worker per core.
   */
  workers?: number | WorkersOption | WorkerPool | undefined;
  /**
   * A result store directory: results are written there before a job counts as completed,
   * and a rerun of the same graph takes them instead of recomputing. (An open `ResultStore`
   * is taken too, for baton's own tests and tools; it is not part of the public API.)
   */
  store?: string | ResultStore | undefined;
  /**
   * Where a run without a store keeps its own files: `run/` (the secret worker processes
   * read) and `logs/` (their output). Default: `.baton` in the working directory. A run with
   * a store keeps them in the store's directory.
   */
  batonDir?: string | undefined;
  /**
   * Where each run's worker processes write their logs (`worker-N.log`, `slurm-<id>.log`):
   * runs of the engine at once append to the same files.
   * Default: a folder of its own in `logs/` (of the store, or of `batonDir`) named after the
   * run's start and id, `logs/2026-12-04T13-50-01-123Z-<run id>/`. One that cannot be made
   * (a symbolic link to nothing on its way, a file in its way, a folder this user may not
   * write in) rejects a run of worker processes (`localPool`, `slurmPool`) with a
   * `ConfigError` saying why when the pool starts, before any worker does.
   */
  logsDir?: string | undefined;
  /**
   * How many runs' log folders the default `logs/` keeps (default 20): a run that starts
   * worker processes removes older ones, except those written in the last day and not marked
   * ended (a run marks its folder once its workers stopped), whose run may still be going.
   * Not used with `logsDir`, which the caller looks after.
   */
  keepLogs?: number | undefined;
  /**
   * How long `cancel()` waits for running jobs to stop (default 10 s); past it the run is shut
   * down and they end as cancelled, even when a handler ignores its AbortSignal (a worker
   * process still running one is then killed, unless the pool's `abortGraceMs`, counted from
   * the same cancel, is longer; one tearing down a rank job's group finishes the teardown; an
   * in-process handler's promise is abandoned).
   */
  cancelGraceMs?: number | undefined;
  /**
   * A file holding the secret workers prove (hex, mode 0600), kept for run after run instead
   * of a new secret written for each run and removed at its end; made (32 random bytes) when
   * nothing is there. With a fixed `listen`, workers started with `baton worker --retry-for`
   * then join this run started again after a crash, and a run started later.
   *
   * @example
   * ```ts
   * createEngine({ jobs, workers: localPool({ jobsModule: "jobs.ts", count: 0 }),
   *   listen: "0.0.0.0:7000", secretFile: "/etc/baton/run.secret" });
   * ```
   */
  secretFile?: string | undefined;
  /**
   * Stop the run at the first job that fails for good (its retries spent, poison, a cycle
   * through `ctx.need`, nothing can take it): its dependents are skipped, the jobs running are
   * aborted as by `cancel()`, and every job not started ends as cancelled, naming it. The run
   * resolves with `ok: false`. Default: the other jobs go on.
   *
   * @example
   * ```ts
   * const result = await createEngine({ jobs, failFast: true }).run(graph);
   * ```
   */
  failFast?: boolean | undefined;
  /** Recompute every job even when the store has its result. */
  force?: boolean | undefined;
  /**
   * Reuse the results in `store` (a directory) without writing to it: a store that cannot be
   * written (a read-only mount, another user's results) or that should stay as it is. Nothing
   * is made or moved in it (a corrupt entry is left in place and its job run); what the run
   * computes is kept in memory only, so a rerun computes it again; the run's own files (`run/`,
   * `logs/`) go to `batonDir`, which must be outside the store when the workers are processes
   * (a `ConfigError` otherwise: the default `.baton` is refused as a store only read). Default:
   * a store is written, and refused if it cannot be.
   */
  storeReadOnly?: boolean | undefined;
  /**
   * How long the run waits when the store's disk has no room for results (`ENOSPC`,
   * `EDQUOT`; default 5 minutes): meanwhile the results are held, no job starts and no
   * attempt is spent, and the run emits `store.full`; past it the run stops and rejects with
   * a `StoreError` (`STORE_FULL`), keeping what was stored for the next run to resume from.
   */
  storeFullWaitMs?: number | undefined;
  /**
   * Where the coordinator listens (`HOST:PORT`, port 0 for any), over WebSockets. Default:
   * the in-memory Net for in-process workers, `127.0.0.1:0` for worker processes. A fixed port
   * takes one run of the engine at a time: a run started while another listens there rejects
   * with a `ConfigError` naming that run; port 0 gives each run a free port of its own.
   */
  listen?: string | undefined;
  /**
   * A pino logger, such as your service's own (another kind of object, such as `console`, is
   * a `ConfigError`); silent by default. Each line names the `run`, and an in-process
   * worker's lines, its handlers' `ctx.log` among them, the `worker` too.
   */
  logger?: Logger | undefined;
  /**
   * An XState inspection observer; it sees the coordinator and every connection actor. What
   * it throws is thrown again on a later tick, as XState does for a listener; the run goes on.
   */
  inspect?: InspectOption | undefined;
  /**
   * Called with each run's coordinator actor right after it is created, before it starts and
   * before the engine's own listeners: to watch the run's decisions at the source, each
   * `effects` batch with the event that caused it, without the cost of inspecting every
   * actor. The simulation's invariant checker attaches here.
   *
   * @example
   * ```ts
   * createEngine({ jobs, onCoordinator: (coordinator) =>
   *   coordinator.on("effects", ({ event, effects }) => console.log(event.type, effects)) });
   * ```
   */
  onCoordinator?: ((coordinator: Actor<typeof coordinatorMachine>) => void) | undefined;
  /**
   * Losses of a worker while running one job before it fails as poison (default 3). A worker
   * that leaves on purpose (it closes with 1001: Ctrl-C or SIGTERM, a preemption) gives its
   * job back without counting.
   */
  maxLost?: number | undefined;
  /** Most jobs of each listed kind running at once. */
  throttle?: Readonly<Record<string, number>> | undefined;
  /** A lease without a heartbeat for this long expires (default 20 s). */
  leaseTimeoutMs?: number | undefined;
  /** Frames larger than this are refused and their connection closed with 4004 (default 64 MiB). */
  maxFrameBytes?: number | undefined;
  /** How often a run emits `progress` (default 200 ms). */
  progressIntervalMs?: number | undefined;
  /** Ports to run on; Node's by default. */
  clock?: Clock | undefined;
  entropy?: Entropy | undefined;
  net?: Net | undefined;
  files?: Files | undefined;
  /** Deliberate bugs, for proving tests catch them. Never set this in production. */
  plantedBugs?: readonly PlantedBug[] | undefined;
}

/** One job of a {@link RunPlan}. */
export interface PlannedRunJob {
  id: string;
  kind: string;
  /** Ids of the jobs it runs after. */
  deps: string[];
  /** The store holds its result, so a run would take that instead of running the job. */
  stored: boolean;
}

/** What a run of a graph would do, found without running anything: see {@link Engine.plan}. */
export interface RunPlan {
  /** Every job of the graph, each after the jobs it runs after. */
  jobs: PlannedRunJob[];
  counts: {
    jobs: number;
    /** Jobs with a stored result (none with `force` or without a store). */
    stored: number;
    /** Jobs a run would start (jobs that handlers add with `ctx.need` come on top). */
    toRun: number;
    /** Stored entries found corrupt: their jobs are among those to run. */
    corrupt: number;
  };
}

/**
 * Runs graphs. One engine can run many graphs, one after another or at once (with a fixed
 * `listen` port, one at a time: see `EngineOptions.listen`). It holds nothing between runs (no
 * socket, worker, timer or file), so it has no `close()`: each run stops its workers, closes
 * its listener and clears its timers before it settles, and the process exits on its own once
 * its runs have.
 */
export interface Engine {
  /**
   * Plans and validates the graph (throwing a `GraphError` before anything runs), then
   * starts it. Pass the jobs you want; the jobs they run after are included. An AbortSignal
   * given as `signal` cancels the run when it aborts, as `run.cancel()` does.
   */
  run(graph: JobSpec | readonly JobSpec[], options?: RunOptions): Run;
  /**
   * A dry run: plans and validates the graph as `run` does and looks its jobs up in the
   * store, read-only (nothing is created, a corrupt entry is only counted), but starts
   * nothing: no worker, no listener, no job.
   *
   * @example
   * ```ts
   * const plan = await engine.plan(graph);
   * console.log(`${plan.counts.toRun} of ${plan.counts.jobs} jobs would run`);
   * ```
   */
  plan(graph: JobSpec | readonly JobSpec[]): Promise<RunPlan>;
}

/**
 * Creates an engine. By default it runs graphs on in-process workers connected over the
 * in-memory Net; give it a pool and a store for worker processes and durable results.
 *
 * @example
 * ```ts
 * const engine = createEngine({ jobs: { double: (n: number) => n * 2 }, workers: 4 });
 * const a = job("double", 21);
 * const result = await engine.run([a]);
 * result.get(a).value; // 42
 * ```
 */
export function createEngine(options: EngineOptions): Engine {
  checkEngineOptions(options);
  const pool = poolOf(options.workers);
  const jobs =
    typeof options.jobs === "object" && "codeHash" in options.jobs
      ? (options.jobs as LoadedJobs)
      : loadJobs(
          options.jobs,
          pool.jobsModule === undefined ? undefined : moduleSource(pool.jobsModule),
        );
  const clock = options.clock ?? nodeClock();
  const entropy = options.entropy ?? nodeEntropy();
  const files = options.files ?? nodeFiles();
  const networked = pool.remote || options.listen !== undefined;
  const net = options.net ?? (networked ? wsNet() : memoryNet());
  const logger = options.logger ?? pino({ level: "silent" });
  const inspect = options.inspect === undefined ? undefined : guardInspect(options.inspect);
  /** A fixed `listen` address: the run listening there holds it, and another one is refused. */
  const listening = listenClaim(options.listen);
  /** Plans `graph` as `caller` was given it: one job (messages name it so) or an array of them. */
  const planOf = (graph: JobSpec | readonly JobSpec[], caller: "engine.run" | "engine.plan") =>
    planGraph(Array.isArray(graph) ? (graph as readonly JobSpec[]) : [graph as JobSpec], {
      ...(!Array.isArray(graph) && { rootName: () => `${caller}'s graph` }),
      versionOf: jobs.versionOf,
      kinds: jobs.kinds,
      timeoutOf: jobs.timeoutOf,
      launchesRanks: jobs.launchesRanks,
      workers: pool.offers,
      offerMore: pool.offerMore,
    });
  return {
    async plan(graph) {
      const plan = planOf(graph, "engine.plan");
      const dir = typeof options.store === "string" ? options.store : options.store?.dir;
      const found =
        dir === undefined || options.force
          ? { stored: new Map<string, Json>(), corrupt: 0 }
          : await ResultStore.openReadOnly(dir, files).loadAll(plan.jobs.keys());
      const planned = [...plan.jobs.values()].map((job) => ({
        id: job.id,
        kind: job.kind,
        deps: [...job.deps],
        stored: found.stored.has(job.id),
      }));
      const stored = found.stored.size;
      return {
        jobs: planned,
        counts: {
          jobs: planned.length,
          stored,
          toRun: planned.length - stored,
          corrupt: found.corrupt,
        },
      };
    },

    run(graph, runOptions = {}) {
      const signal = runSignal(runOptions);
      const plan = planOf(graph, "engine.run");
      const runId = entropy.id(12);
      const log = logger.child({ run: runId });
      let cancelled: string | undefined;
      let cancel = (reason: string) => {
        cancelled = reason;
      };
      let settle!: { resolve: (result: RunResult) => void; reject: (error: unknown) => void };
      const result = new Promise<RunResult>((resolve, reject) => {
        settle = { resolve, reject };
      });
      let listenerError: ListenerError | undefined;
      const run = new Run(
        runId,
        result,
        (reason) => cancel(reason),
        (error) => {
          if (listenerError !== undefined) return;
          listenerError = error;
          // The run rejects with it: its caller reports it (`baton run` on stderr), so the
          // log keeps it at info (the run's log file), not a second time where errors show.
          log.info({ err: error }, "a listener on the run threw; cancelling the run");
          cancel(`a "${error.event}" listener on the run threw`);
        },
      );
      execute().then(settle.resolve, settle.reject);
      if (signal !== undefined) cancelOnAbort(run, signal);
      return run;

      async function execute(): Promise<RunResult> {
        // The run's duration counts reading the store: a rerun of a large graph spends most
        // of its time there.
        const calledAt = clock.now();
        const readOnly = options.storeReadOnly === true;
        const store =
          typeof options.store === "string"
            ? readOnly
              ? ResultStore.openReadOnly(options.store, files)
              : await ResultStore.open(options.store, files, log, clock)
            : options.store;
        /** Where results are written: the store, unless it is only read. */
        const written = readOnly ? undefined : store;
        if (readOnly) {
          log.info(
            { store: options.store },
            "the store's results are reused, and what this run computes is not stored",
          );
        }
        const stored =
          store && !options.force
            ? await store.loadAll(plan.jobs.keys(), (done, total) => {
                if (done % STORE_READING_EVERY === 0 || done === total)
                  run.emit("store.reading", { done, total });
              })
            : undefined;
        if (listenerError) throw listenerError;
        if (stored && stored.stored.size > 0) {
          log.info({ reused: stored.stored.size, corrupt: stored.corrupt }, "results reused");
        }
        const coordinator = createActor(coordinatorMachine, {
          input: {
            jobs: plan.jobs.values(),
            offers: pool.offers,
            offerMore: pool.offerMore,
            ...(stored && { stored: stored.stored }),
            durable: written !== undefined,
            ...(options.maxLost !== undefined && { maxLost: options.maxLost }),
            ...(options.throttle !== undefined && { throttle: options.throttle }),
            ...(options.failFast !== undefined && { failFast: options.failFast }),
            ...(options.leaseTimeoutMs !== undefined && {
              leaseTimeoutMs: options.leaseTimeoutMs,
            }),
            ...(options.plantedBugs !== undefined && { plantedBugs: options.plantedBugs }),
          },
          clock,
          ...(inspect !== undefined && { inspect }),
        });
        options.onCoordinator?.(coordinator);
        /** The store had no room for too long: the run stops and rejects with this. */
        let storeFull: StoreError | undefined;
        if (written) {
          writeResults(coordinator, written, log, {
            clock,
            waitMs: options.storeFullWaitMs ?? STORE_FULL_WAIT_MS,
            said: (event) => run.emit("store.full", event),
            giveUp: (error) => {
              if (storeFull !== undefined) return;
              storeFull = error;
              log.info(
                { err: error },
                "the result store had no room for too long; stopping the run",
              );
              // Said before the stop: a caller then knows why the run is ending, as it ends.
              run.emit("store.full", {
                dir: written.dir,
                full: true,
                stopping: true,
                message: error.message,
              });
              coordinator.send({ type: "SHUTDOWN", reason: error.message });
            },
          });
        }
        const board = coordinator.getSnapshot().context.board;
        const startedAt = clock.now();
        let grace: unknown;
        /** The workers a cancel's grace ran out on, for the pool's stop. */
        let stuck: PoolStop["stuck"];
        /**
         * Once the run is cancelled (a `cancel()`, a throwing listener, `failFast`), a handler
         * that ignores its AbortSignal must not hold it open for good, nor a result the store
         * has no room for: each is said as what it is (a held result was said to be a job
         * that did not stop, sending the user to look for a handler at fault).
         */
        const onCancelled = (reason: string) => {
          const graceMs = options.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS;
          grace ??= clock.setTimeout(() => {
            const { running, storing } = board.counts();
            const within = `within ${graceMs} ms of the cancel`;
            const unstored = board.storeFull ? `${within}: the result store has no room` : within;
            const held = [...board.leases.values()].map(({ job }) => job);
            const named = namedJobs(held, NAMED_STUCK_JOBS);
            const notStopped =
              held.length === 1
                ? `job ${named} did not stop`
                : `${held.length} jobs did not stop (${named})`;
            const why =
              storing === 0
                ? `${notStopped} ${within}`
                : running === 0
                  ? `its result could not be stored ${unstored}`
                  : `${notStopped}, and ${storing} result${storing === 1 ? "" : "s"} could not be stored, ${unstored}`;
            log.warn(
              { graceMs, running, storing },
              "the run did not end within the cancel's grace; shutting down",
            );
            // A rank job's worker is tearing its group down (its abort's work, bounded by the
            // teardown's deadline): it leaves as the others do, its exit held for the teardown.
            const workers = new Map<string, { id: string; kind: string }>();
            for (const [conn, { job }] of board.leases) {
              const worker = board.workerOf.get(conn);
              if (worker !== undefined && job.ranks === undefined) {
                workers.set(worker, { id: job.id, kind: job.kind });
              }
            }
            stuck = { workers, abortedMsAgo: graceMs };
            coordinator.send({ type: "SHUTDOWN", reason: `${reason}; ${why}` });
          }, graceMs);
        };
        const reused = stored !== undefined && stored.stored.size > 0;
        const tracker = trackRun(run, board, clock, startedAt, log, onCancelled, reused);
        coordinator.on("effects", ({ effects }) => tracker.onEffects(effects));
        const finished = new Promise<void>((resolve) =>
          coordinator.on("run.finished", () => resolve()),
        );

        const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
        listening.claim(runId);
        let listener: Listener;
        try {
          listener = await net.listen(
            options.listen ?? (networked ? "127.0.0.1:0" : `memory://run-${runId}`),
            { maxFrameBytes, maxHandshakeBytes: MAX_HANDSHAKE_BYTES },
          );
        } catch (error) {
          listening.release(runId);
          throw error;
        }
        // What the run has set up so far: a step that fails (an unwritable secret file, a pool
        // that cannot start, a throwing listener) ends the run with what it made undone, so no
        // listening socket or secret outlives it.
        let secretFile: { path: string; secret: Uint8Array } | undefined;
        let server: CoordinatorServer | undefined;
        let workers: RunningPool | undefined;
        /** The log folder this run chose for its worker processes, marked ended once they stop. */
        let ownLogsDir: string | undefined;
        let poolError: Error | undefined;
        try {
          // Everything was in the store, or the run was cancelled while it read the store: no
          // worker is needed (decided once, before the sweep, which only a started pool follows).
          const nothingToRun = board.done || cancelled !== undefined;
          const batonDir = written?.dir ?? options.batonDir ?? ".baton";
          const runDir = join(batonDir, "run");
          // Only a run that starts its pool sweeps: the pool cancels what the swept files stood
          // for (a dead run's Slurm allocations).
          const abandonedRunFiles =
            pool.remote && !nothingToRun
              ? await sweepAbandonedRunFiles(runDir, { files, logger: log })
              : [];
          secretFile =
            options.secretFile !== undefined
              ? await keptSecretFile(options.secretFile, { files, entropy }, log)
              : pool.remote
                ? await writeSecretFile(runDir, { files, entropy })
                : undefined;
          const secret = secretFile?.secret ?? entropy.bytes(32);
          server = new CoordinatorServer({
            listener,
            coordinator,
            clock,
            entropy,
            secret,
            run: runId,
            codeHash: jobs.codeHash,
            maxFrameBytes,
            logger: log,
            ...(store &&
              !options.force && {
                lookup: async (ids: readonly string[]) => (await store.loadAll(ids)).stored,
              }),
            ...(inspect !== undefined && { inspect }),
            ...(options.helloTimeoutMs !== undefined && { helloTimeoutMs: options.helloTimeoutMs }),
            ...(options.heartbeatMs !== undefined && { heartbeatMs: options.heartbeatMs }),
            ...(options.deadAfterMs !== undefined && { deadAfterMs: options.deadAfterMs }),
            onProgress: (frame, worker) =>
              run.emit("job.progress", {
                id: frame.job,
                // The connection takes progress only for the job it holds: one on the board.
                kind: board.jobs.get(frame.job)?.job.kind ?? "",
                worker,
                ...(frame.done !== undefined && { done: frame.done }),
                ...(frame.total !== undefined && { total: frame.total }),
                ...(frame.message !== undefined && { message: frame.message }),
              }),
          });
          log.info({ jobs: board.jobs.size, address: listener.address }, "run started");
          if (!nothingToRun) {
            run.emit("listening", {
              address: reachedFrom(listener.address, hostname()),
              listenAddress: listener.address,
              ...(secretFile && { secretFile: secretFile.path }),
            });
          }
          const logsRoot = join(batonDir, "logs");
          const logsDir = options.logsDir ?? runLogsDir(logsRoot, startedAt, runId);
          if (options.logsDir === undefined && pool.remote && !nothingToRun) {
            ownLogsDir = logsDir;
            await pruneRunLogs(logsRoot, {
              // This run's folder is made by the pool, after: it is one of the runs kept.
              keep: (options.keepLogs ?? DEFAULT_KEEP_LOGS) - 1,
              now: clock.now(),
              logger: log,
            });
          }
          workers = nothingToRun
            ? { failed: new Promise<Error>(() => {}), stop: async () => {} }
            : pool.start({
                address: listener.address,
                net,
                secret,
                ...(secretFile && { secretFile: secretFile.path }),
                logsDir,
                jobs,
                logger: log,
                clock,
                entropy,
                demand: demandGauge(board, options.throttle),
                joined: server.joined.bind(server),
                gaveUpOn: server.gaveUpOn.bind(server),
                abandonedRunFiles,
              });
          void workers.failed.then((error) => {
            // Once every job has ended, the pool's failure is its stop's (a worker that exits
            // with an error as the listener closes on it): the run's result stands.
            if (board.done) {
              log.warn({ err: error }, "the worker pool failed as it stopped, after the run");
              return;
            }
            poolError = error;
            // Like a listener's throw: the run rejects with it, its caller reports it.
            log.info({ err: error }, "the worker pool failed; stopping the run");
            coordinator.send({ type: "SHUTDOWN", reason: error.message });
          });
          cancel = (reason) => coordinator.send({ type: "CANCEL", reason });
          tracker.start(options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS, workers);
          coordinator.start();
          if (cancelled !== undefined) cancel(cancelled);
          await finished;
        } finally {
          // A cancel once the run has finished has nothing left to stop.
          cancel = () => {};
          if (grace !== undefined) clock.clearTimeout(grace);
          // The last progress is emitted once everything is closed: a listener that throws
          // must not keep the run's socket, workers and secret alive.
          tracker.stop();
          // DESIGN §4: the run is marked finished first (done above), then the server
          // closes, then the pool stops. The listener sends every close before it returns its
          // promise, which waits for the workers' answers; the pool's grace runs beside that
          // wait, so a worker that cannot answer (stopped, its event loop blocked) is waited
          // for once, not for the close handshake and then the whole grace again.
          try {
            const closed = listener.close();
            const stopped = Promise.resolve(workers?.stop(stuck && { stuck }));
            // Awaited below in every case; not an unhandled rejection while the close waits.
            stopped.catch(() => {});
            try {
              await closed;
            } finally {
              listening.release(runId);
              server?.stop();
              await stopped;
            }
            if (ownLogsDir !== undefined) await markRunLogsEnded(ownLogsDir, log);
          } finally {
            // Even when the pool cannot confirm its stop, the secret does not outlive the run,
            // unless the caller keeps it for the next.
            if (secretFile && options.secretFile === undefined) await files.remove(secretFile.path);
            coordinator.stop();
          }
        }
        run.emit("progress", tracker.progress());
        const { badFrames, droppedResults } = server.refused;
        if (badFrames + droppedResults > 0) {
          log.warn({ badFrames, droppedResults }, "frames refused during the run");
        }
        if (poolError) throw poolError;
        if (storeFull) throw storeFull;
        if (listenerError) throw listenerError;
        const result = buildResult(
          runId,
          board,
          plan.idOf,
          tracker.attempts,
          clock.now() - calledAt,
          workers?.exitOf?.bind(workers),
        );
        log.info(
          { ok: result.ok, counts: result.counts, durationMs: result.durationMs },
          "run finished",
        );
        return result;
      }
    },
  };
}

/** The caller's kept secret file (see `EngineOptions.secretFile`), saying when it was made. */
async function keptSecretFile(
  path: string,
  ports: { files: Files; entropy: Entropy },
  log: Logger,
): Promise<{ path: string; secret: Uint8Array }> {
  const { secret, created } = await keptSecret(path, { ...ports, logger: log });
  if (created)
    log.info({ secretFile: path }, "wrote a new secret, kept for the runs given this file");
  return { path, secret };
}

/**
 * The pool `workers` names: the pool given, else in-process workers of that count (or count
 * and resources), whose way out of `UNSATISFIABLE` is this option's `resources`, the user
 * having called no pool.
 */
function poolOf(workers: EngineOptions["workers"]): WorkerPool {
  if (workers !== undefined && typeof workers === "object" && "start" in workers) return workers;
  return {
    ...inProcessPool(typeof workers === "number" ? { count: workers } : workers),
    offerMore: (enough) => resourcesAdvice("createEngine's workers", enough),
  };
}

/** The attempt of a job that has not finished: where it is in the run's {@link AttemptLog}. */
interface OpenAttempt {
  at: number;
  /** Until the job's next change: how many workers it had lost when the attempt started. */
  lostBefore: number | undefined;
}

/** Follows a run's effects for timings, `job` events and periodic `progress`. */
function trackRun(
  run: Run,
  board: JobBoard,
  clock: Clock,
  startedAt: number,
  log: Logger,
  onCancelled: (reason: string) => void,
  /** The store gave the run results: only then can a job be cached. */
  reused: boolean,
) {
  /** Every attempt started, in order: a job's last is the timing of its outcome. */
  const attempts = new AttemptLog();
  /**
   * The last attempt of each job that started one and has not finished (running, storing, or
   * to run again): a handful, where a map of every job's timing took an insert into a map of
   * the whole run for each job.
   */
  const open = new Map<string, OpenAttempt>();
  /**
   * What a change says of the attempt: the one starting (`running`), the one that ended and
   * why (to run again: its error, or the worker lost under it), the last (completed or failed).
   * The effects of one event are read after it: the job may already run its next attempt.
   */
  const attemptOf = (
    change: CoordinatorEffect & { type: "job.changed" },
    record: JobRecord,
    lostBefore: number | undefined,
  ): Pick<JobEvent, "attempt" | "error" | "lostWorker" | "lostWhy"> => {
    const { attempts, error, lostWorkers } = record;
    if (change.state === "running") return { attempt: attempts };
    if (lostBefore !== undefined && (change.state === "ready" || change.state === "blocked")) {
      const attempt = record.state === "running" ? attempts - 1 : attempts;
      const lost = lostWorkers.length > lostBefore ? lostWorkers.at(-1) : undefined;
      if (lost !== undefined) return { attempt, lostWorker: lost, lostWhy: record.lostWhy.at(-1)! };
      // Blocked with no retry pending: the handler asked for jobs with `ctx.need`.
      const failed = change.state === "ready" || record.retryPending;
      return { attempt, ...(failed && error && { error }) };
    }
    if (change.state === "completed") return { attempt: attempts };
    if (change.state === "failed") {
      return { ...(attempts > 0 && { attempt: attempts }), ...(error && { error }) };
    }
    return {};
  };
  /**
   * What the run's log says of a job that failed, was skipped (the job whose failure it was
   * skipped for, and the reason naming its dependency) or was cancelled (its reason, not an
   * error), or of an attempt it will make again. A skip is logged at `info` like the failure
   * that caused it, not above it: it is its consequence, and that failure carries the error.
   * Nothing is built for a logger that drops `info` (the simulation's: 68 lines a seed, about
   * 0.3 % of its CPU).
   */
  const logChange = (
    change: CoordinatorEffect & { type: "job.changed" },
    record: JobRecord,
    about: Pick<JobEvent, "attempt" | "error" | "lostWorker">,
  ) => {
    if (!log.isLevelEnabled("info")) return;
    const { job, kind } = change;
    const at = { job, kind, ...(about.error && { err: about.error }) };
    const status = change.state === "failed" ? statusOf(record) : undefined;
    if (status === "cancelled") {
      const { attempts, cause } = record;
      log.info({ job, kind, attempts, cause, reason: about.error?.message }, "job cancelled");
    } else if (status === "skipped") {
      const failed = record.skippedFor?.job;
      const after = failed && { failedJob: failed.id, failedKind: failed.kind };
      log.info(
        { job, kind, cause: record.cause, ...after, reason: about.error?.message },
        "job skipped",
      );
    } else if (change.state === "failed") {
      log.info({ ...at, attempts: record.attempts, cause: record.cause }, "job failed");
    } else {
      log.info(
        { ...at, attempt: about.attempt, lostWorkers: record.lostWorkers },
        "attempt ended without a result; the job will run again",
      );
    }
  };
  // Counted only when some can be: a pass over every job, each record a cache miss.
  let cached = 0;
  if (reused) for (const record of board.jobs.values()) if (record.cached) cached++;
  /**
   * The jobs in the `failed` state by how they ended, as the result counts them: counted as each
   * fails (a job fails once), so `progress` needs no pass over every job.
   */
  const ended = { failed: 0, skipped: 0, cancelled: 0 };
  let ticker: unknown;
  /** The run's pool while it runs: what it waits for goes with every `progress`. */
  let pool: RunningPool | undefined;
  const progress = (): RunProgress => {
    const counts = board.counts();
    const elapsedMs = clock.now() - startedAt;
    const finished = counts.completed + counts.failed - cached;
    const poolWaitingFor = pool?.waitingFor?.();
    return {
      total: board.jobs.size,
      counts,
      cached,
      failed: ended.failed,
      skipped: ended.skipped,
      cancelled: ended.cancelled,
      elapsedMs,
      rate: elapsedMs > 0 ? (finished * 1000) / elapsedMs : 0,
      workers: board.leases.size + board.waiting.size,
      ...(poolWaitingFor !== undefined && { poolWaitingFor }),
    };
  };
  /** The run waited, at the last tick, for a worker that offers more (said once per wait). */
  let unserved = false;
  const tick = (interval: number) => {
    run.emit("progress", progress());
    const waits = waitsForOffers(board);
    if (waits && !unserved) {
      const { message, jobs, offers } = unservedWarning(board);
      log.warn({ jobs, offers }, message);
    }
    unserved = waits;
    ticker = clock.setTimeout(() => tick(interval), interval);
  };
  return {
    attempts,
    progress,
    /** Emits `progress` every `interval` ms, with what `running` (the run's pool) waits for. */
    start(interval: number, running: RunningPool) {
      pool = running;
      ticker = clock.setTimeout(() => tick(interval), interval);
    },
    /** Stops the periodic `progress`; the run emits the last one itself, without the pool's. */
    stop() {
      pool = undefined;
      clock.clearTimeout(ticker);
    },
    onEffects(effects: readonly CoordinatorEffect[]) {
      const now = clock.now();
      const emitJobs = run.listenerCount("job") > 0;
      /** The connection of the last lease granted: the job's `running` change follows it. */
      let grantedTo: string | undefined;
      for (const change of effects) {
        if (change.type === "run.cancelled") onCancelled(change.reason);
        if (change.type === "lease.granted") grantedTo = change.conn;
        if (change.type !== "job.changed") continue;
        const attempt = open.get(change.job);
        const lostBefore = attempt?.lostBefore;
        if (attempt !== undefined) attempt.lostBefore = undefined;
        const retry =
          lostBefore !== undefined && (change.state === "ready" || change.state === "blocked");
        // Most changes (a first attempt starting, completed, ready before a first attempt) are
        // neither logged nor, with no `job` listener, told: they cost no lookup in the map of
        // every job. A later attempt looks up how many workers its job had lost; a first has
        // lost none (a worker is lost only while it holds the job).
        const later = change.state === "running" && attempt !== undefined;
        const record =
          emitJobs || retry || later || change.state === "failed"
            ? board.jobs.get(change.job)
            : undefined;
        let current = attempt;
        if (change.state === "running") {
          // Read when the lease is granted: a worker lost later leaves the board's map.
          const worker = grantedTo === undefined ? undefined : board.workerOf.get(grantedTo);
          current = {
            at: attempts.start(change.job, worker, now),
            lostBefore: record?.lostWorkers.length ?? 0,
          };
          open.set(change.job, current);
        } else if (
          attempt !== undefined &&
          (change.state === "completed" || change.state === "failed")
        ) {
          // Either happens once to a job (DESIGN §4, invariant 2).
          attempts.finish(attempt.at, now);
          open.delete(change.job);
        }
        if (record === undefined) continue;
        if (change.state === "failed") ended[statusOf(record) as keyof typeof ended]++;
        const about = attemptOf(change, record, lostBefore);
        if (retry || change.state === "failed") logChange(change, record, about);
        if (emitJobs) {
          const worker =
            about.attempt === undefined || current === undefined
              ? undefined
              : attempts.workers[current.at];
          run.emit("job", {
            id: change.job,
            kind: change.kind,
            state: change.state,
            ...(change.cause !== undefined && { cause: change.cause }),
            ...about,
            ...(worker !== undefined && { worker }),
          });
        }
      }
    },
  };
}

function statusOf(record: JobRecord): JobStatus {
  if (record.state === "completed") return "completed";
  if (record.cause === "skipped") return "skipped";
  if (record.cause === "cancelled" || record.cause === "shutdown") return "cancelled";
  return "failed";
}

/**
 * A job's outcome, its optional fields set only when present, in the order the result has
 * always listed them: field by field, as spreading each optional field made throwaway
 * objects for every job of the run.
 */
function outcomeOf(id: string, record: JobRecord, status: JobStatus): JobOutcome {
  const outcome: JobOutcome = { id, kind: record.job.kind, status } as JobOutcome;
  if (record.value !== undefined) outcome.value = record.value as Json;
  if (status !== "completed" && record.error !== undefined) outcome.error = record.error;
  if (record.cause !== undefined) outcome.cause = record.cause;
  outcome.attempts = record.attempts;
  outcome.lostWorkers = record.lostWorkers;
  outcome.lostWhy = record.lostWhy;
  outcome.cached = record.cached;
  return outcome;
}

/**
 * The counts of the jobs on `board` that have ended, as a run's result has them, how many have
 * ended, and how many have not: none once the run is over (its finish ends every job), some on
 * the board of a simulated seed a broken invariant stopped. A pass that makes nothing a job.
 */
function endedCounts(board: JobBoard): {
  counts: RunResult["counts"];
  ended: number;
  unfinished: number;
} {
  const counts = { completed: 0, failed: 0, skipped: 0, cancelled: 0, cached: 0 };
  let unfinished = 0;
  for (const record of board.jobs.values()) {
    if (record.state !== "completed" && record.state !== "failed") {
      unfinished++;
      continue;
    }
    counts[statusOf(record)]++;
    if (record.cached) counts.cached++;
  }
  return { counts, ended: board.jobs.size - unfinished, unfinished };
}

/** The outcomes of the jobs on `board` that have ended, by id (less the times of their last attempt). */
function outcomesOf(board: JobBoard): Map<string, JobOutcome> {
  const jobs = new Map<string, JobOutcome>();
  for (const [id, record] of board.jobs) {
    if (record.state !== "completed" && record.state !== "failed") continue;
    jobs.set(id, outcomeOf(id, record, statusOf(record)));
  }
  return jobs;
}

/**
 * The outcomes of the jobs on `board` that have ended, by id, as a run's result has them
 * (less the times of their last attempt), their counts, and how many jobs have not ended: none
 * once the run is over (its finish ends every job), some on the board of a simulated seed a
 * broken invariant stopped.
 *
 * @example
 * ```ts
 * const { jobs, counts, unfinished } = endedOutcomes(coordinator.getSnapshot().context.board);
 * ```
 */
export function endedOutcomes(board: JobBoard): {
  jobs: Map<string, JobOutcome>;
  counts: RunResult["counts"];
  unfinished: number;
} {
  const { counts, unfinished } = endedCounts(board);
  return { jobs: outcomesOf(board), counts, unfinished };
}

/**
 * The outcomes of a finished run's jobs, each with the times of its last attempt and, where its
 * pool knows them, how its lost workers' processes ended.
 */
function finishedOutcomes(
  board: JobBoard,
  attempts: AttemptLog,
  exitOf: RunningPool["exitOf"],
): Map<string, JobOutcome> {
  const jobs = outcomesOf(board);
  // How each lost worker's process ended, which its pool knows once it has stopped (after the
  // loss released the lease): added to the outcome's copy, the board's record is the machine's.
  if (exitOf !== undefined) {
    for (const outcome of jobs.values()) {
      if (outcome.lostWorkers.length === 0) continue;
      outcome.lostWhy = outcome.lostWhy.map((close, i) => {
        const exit = exitOf(outcome.lostWorkers[i]!);
        return exit === undefined ? close : { ...close, exit };
      });
      // A job failed as poison says how its workers' processes ended, now that this is known.
      if (outcome.error !== undefined) {
        const message = poisonExits(outcome.error.message, outcome);
        if (message !== outcome.error.message) outcome.error = { ...outcome.error, message };
      }
    }
  }
  // In order, so each job's last attempt is the one its outcome keeps; the times come last
  // in the outcome, as they always did. Only the last attempt of a job has a finishedAt.
  const { workers, startedAt, finishedAt } = attempts;
  for (let i = 0; i < attempts.size; i++) {
    const outcome = jobs.get(attempts.jobs[i]!)!;
    const worker = workers[i];
    if (worker !== undefined) outcome.worker = worker;
    outcome.startedAt = startedAt[i]!;
    if (!Number.isNaN(finishedAt[i])) outcome.finishedAt = finishedAt[i];
  }
  return jobs;
}

/**
 * A finished run's result. Its counts are counted now; its outcomes (`jobs`, and through them
 * `get` and `toJSON`) are made the first time one of those is read, from the board and the
 * attempts (and the pool's `exitOf`), which the result lets go of then: a caller that reads only `ok` or `counts` does not
 * pay for a `Map` of every job's outcome (about a µs a job: an insert and a lookup in a map of
 * every job, and an object a job).
 */
function buildResult(
  runId: string,
  board: JobBoard,
  idOf: (spec: JobSpec, among: ReadonlyMap<string, unknown>) => string,
  attempts: AttemptLog,
  durationMs: number,
  exitOf: RunningPool["exitOf"],
): RunResult {
  const { counts, ended } = endedCounts(board);
  const ok = counts.completed === ended;
  let made: Map<string, JobOutcome> | undefined;
  let from: Parameters<typeof finishedOutcomes> | undefined = [board, attempts, exitOf];
  const outcomes = (): Map<string, JobOutcome> => {
    if (made === undefined) {
      made = finishedOutcomes(...from!);
      from = undefined;
    }
    return made;
  };
  return {
    run: runId,
    ok,
    get jobs() {
      return outcomes();
    },
    counts,
    durationMs,
    // idOf throws for a job that has no outcome: neither planned nor needed by a handler.
    // The value's type is the job's: what the handler of a `jobBuilder` job returns.
    get: (spec) => {
      const jobs = outcomes();
      return jobs.get(idOf(spec as JobSpec<unknown> as JobSpec, jobs)) as JobOutcome<never>;
    },
    toJSON: () => ({
      run: runId,
      ok,
      durationMs: Math.round(durationMs),
      counts,
      jobs: [...outcomes().values()].map(jobJson),
    }),
  };
}
