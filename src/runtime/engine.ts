import { availableParallelism, totalmem } from "node:os";
import pino, { type Logger } from "pino";
import { createActor, type InspectionEvent, type Observer } from "xstate";
import type { JobSpec, Json, Resources } from "../graph/job.ts";
import { planGraph } from "../graph/planGraph.ts";
import { coordinatorMachine } from "../machines/coordinator.ts";
import type { JobBoard, JobRecord } from "../machines/jobBoard.ts";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import { type ConnectionTimeouts, CoordinatorServer } from "./coordinatorServer.ts";
import { startInProcessWorkers } from "./inProcessWorkers.ts";
import { type JobModule, type LoadedJobs, loadJobs } from "./jobModule.ts";
import { memoryNet } from "./memoryNet.ts";
import { nodeClock } from "./nodeClock.ts";
import { nodeEntropy } from "./nodeEntropy.ts";
import type { Clock, Entropy, Net } from "./ports.ts";
import { type JobOutcome, type JobStatus, Run, type RunProgress, type RunResult } from "./run.ts";

/** DESIGN §8: the largest frame accepted. */
const DEFAULT_MAX_FRAME_BYTES = 64 * 2 ** 20;

export interface WorkersOption {
  /** How many workers (default: the machine's cores). */
  count?: number;
  /** What each worker offers (default: the machine's cores and memory, no gpus). */
  resources?: Resources;
}

export interface EngineOptions extends ConnectionTimeouts {
  /** The job module: kind → handler. */
  jobs: JobModule | LoadedJobs;
  /** In-process workers over the in-memory Net: a count, or a count and resources. */
  workers?: number | WorkersOption;
  /** A pino logger; silent by default. */
  logger?: Logger;
  /** An XState inspection observer; it sees the coordinator and every connection actor. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** Losses of a worker while running one job before it fails as poison (default 3). */
  maxLost?: number;
  /** Most jobs of each listed kind running at once. */
  throttle?: Readonly<Record<string, number>>;
  /** A lease without a heartbeat for this long expires (default 20 s). */
  leaseTimeoutMs?: number;
  /** Frames larger than this are refused and their connection closed with 4004 (default 64 MiB). */
  maxFrameBytes?: number;
  /** How often a run emits `progress` (default 200 ms). */
  progressIntervalMs?: number;
  /** Ports to run on; Node's by default. */
  clock?: Clock;
  entropy?: Entropy;
  net?: Net;
  /** Deliberate bugs, for proving tests catch them. Never set this in production. */
  plantedBugs?: readonly PlantedBug[];
}

/** Runs graphs. One engine can run many graphs, one after another or at once. */
export interface Engine {
  /**
   * Plans and validates the graph (throwing a `GraphError` before anything runs), then
   * starts it. Pass the jobs you want; the jobs they run after are included.
   */
  run(graph: JobSpec | readonly JobSpec[]): Run;
}

/**
 * Creates an engine that runs graphs on in-process workers connected over the in-memory Net.
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
  const jobs = "codeHash" in options.jobs ? (options.jobs as LoadedJobs) : loadJobs(options.jobs);
  const workers =
    typeof options.workers === "number" ? { count: options.workers } : options.workers;
  const count = workers?.count ?? availableParallelism();
  const resources: Resources = workers?.resources ?? {
    cpus: availableParallelism(),
    gpus: 0,
    memory: Math.floor(totalmem() / 2 ** 20),
  };
  const clock = options.clock ?? nodeClock();
  const entropy = options.entropy ?? nodeEntropy();
  const net = options.net ?? memoryNet();
  const logger = options.logger ?? pino({ level: "silent" });
  return {
    run(graph) {
      const roots = Array.isArray(graph) ? (graph as readonly JobSpec[]) : [graph as JobSpec];
      const plan = planGraph(roots, { versionOf: jobs.versionOf, workers: [resources] });
      const runId = entropy.id(12);
      const secret = entropy.bytes(32);
      const log = logger.child({ run: runId });
      const coordinator = createActor(coordinatorMachine, {
        input: {
          jobs: plan.jobs.values(),
          offers: [resources],
          ...(options.maxLost !== undefined && { maxLost: options.maxLost }),
          ...(options.throttle !== undefined && { throttle: options.throttle }),
          ...(options.leaseTimeoutMs !== undefined && { leaseTimeoutMs: options.leaseTimeoutMs }),
          ...(options.plantedBugs !== undefined && { plantedBugs: options.plantedBugs }),
        },
        clock,
        ...(options.inspect !== undefined && { inspect: options.inspect }),
      });
      const board = coordinator.getSnapshot().context.board;
      const startedAt = clock.now();
      let cached = 0;
      for (const record of board.jobs.values()) if (record.cached) cached++;
      const timings = new Map<string, { startedAt?: number; finishedAt?: number }>();
      let resolveResult!: (result: RunResult) => void;
      let rejectResult!: (error: unknown) => void;
      const result = new Promise<RunResult>((resolve, reject) => {
        resolveResult = resolve;
        rejectResult = reject;
      });
      const run = new Run(runId, result, (reason) => coordinator.send({ type: "CANCEL", reason }));
      const progress = (): RunProgress => {
        const counts = board.counts();
        const elapsedMs = clock.now() - startedAt;
        const finished = counts.completed + counts.failed;
        return {
          total: board.jobs.size,
          counts,
          cached,
          elapsedMs,
          rate: elapsedMs > 0 ? (finished * 1000) / elapsedMs : 0,
        };
      };
      const interval = options.progressIntervalMs ?? 200;
      let ticker: unknown;
      const tick = () => {
        run.emit("progress", progress());
        ticker = clock.setTimeout(tick, interval);
      };
      coordinator.on("effects", ({ effects }) => {
        const now = clock.now();
        const emitJobs = run.listenerCount("job") > 0;
        for (const change of effects) {
          if (change.type !== "job.changed") continue;
          if (change.state === "running") timings.set(change.job, { startedAt: now });
          else if (change.state === "completed" || change.state === "failed") {
            const t = timings.get(change.job);
            if (t) t.finishedAt = now;
          }
          if (emitJobs) {
            run.emit("job", {
              id: change.job,
              kind: change.kind,
              state: change.state,
              ...(change.cause !== undefined && { cause: change.cause }),
            });
          }
        }
      });
      coordinator.on("run.finished", () => {
        queueMicrotask(async () => {
          try {
            clock.clearTimeout(ticker);
            await listener.close();
            await pool.stop();
            run.emit("progress", progress());
            resolveResult(buildResult(runId, board, plan.idOf, timings, clock.now() - startedAt));
            coordinator.stop();
          } catch (error) {
            rejectResult(error);
          }
        });
      });
      const address = `memory://run-${runId}`;
      let listener!: Awaited<ReturnType<Net["listen"]>>;
      let pool!: Awaited<ReturnType<typeof startInProcessWorkers>>;
      void (async () => {
        try {
          listener = await net.listen(address, {
            maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
          });
          new CoordinatorServer({
            listener,
            coordinator,
            clock,
            entropy,
            secret,
            run: runId,
            codeHash: jobs.codeHash,
            logger: log,
            ...(options.inspect !== undefined && { inspect: options.inspect }),
            ...(options.helloTimeoutMs !== undefined && { helloTimeoutMs: options.helloTimeoutMs }),
            ...(options.heartbeatMs !== undefined && { heartbeatMs: options.heartbeatMs }),
            ...(options.deadAfterMs !== undefined && { deadAfterMs: options.deadAfterMs }),
            onProgress: (frame, worker) =>
              run.emit("job.progress", {
                id: frame.job,
                worker,
                ...(frame.done !== undefined && { done: frame.done }),
                ...(frame.total !== undefined && { total: frame.total }),
                ...(frame.message !== undefined && { message: frame.message }),
              }),
          });
          log.info({ jobs: board.jobs.size, workers: count }, "run started");
          pool = startInProcessWorkers({
            count,
            net,
            address,
            jobs,
            resources,
            secret,
            logger: log,
          });
          ticker = clock.setTimeout(tick, interval);
          coordinator.start();
        } catch (error) {
          rejectResult(error);
        }
      })();
      return run;
    },
  };
}

function statusOf(record: JobRecord): JobStatus {
  if (record.state === "completed") return "completed";
  if (record.cause === "skipped") return "skipped";
  if (record.cause === "cancelled" || record.cause === "shutdown") return "cancelled";
  return "failed";
}

function buildResult(
  runId: string,
  board: JobBoard,
  idOf: (spec: JobSpec) => string,
  timings: Map<string, { startedAt?: number; finishedAt?: number }>,
  durationMs: number,
): RunResult {
  const jobs = new Map<string, JobOutcome>();
  const counts = { completed: 0, failed: 0, skipped: 0, cancelled: 0, cached: 0 };
  for (const [id, record] of board.jobs) {
    const status = statusOf(record);
    counts[status]++;
    if (record.cached) counts.cached++;
    const t = timings.get(id);
    jobs.set(id, {
      id,
      kind: record.job.kind,
      status,
      ...(record.value !== undefined && { value: record.value as Json }),
      ...(status !== "completed" && record.error !== undefined && { error: record.error }),
      ...(record.cause !== undefined && { cause: record.cause }),
      attempts: record.attempts,
      lostWorkers: record.lostWorkers,
      cached: record.cached === true,
      ...(t?.startedAt !== undefined && { startedAt: t.startedAt }),
      ...(t?.finishedAt !== undefined && { finishedAt: t.finishedAt }),
    });
  }
  return {
    run: runId,
    ok: counts.completed === jobs.size,
    jobs,
    counts,
    durationMs,
    // idOf throws for a job that is not in the planned graph; every planned job has an outcome.
    get: (spec) => jobs.get(idOf(spec))!,
  };
}
