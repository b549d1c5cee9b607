/**
 * The embedding API end to end: createEngine → engine.run(graph) → Run, with in-process
 * workers over the in-memory Net. Every run here is real: coordinator and connection
 * machines, frames, the worker loop and the handlers.
 */
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { type AddressInfo, connect } from "node:net";
import { availableParallelism, hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createWebSocketInspector } from "@statelyai/inspect";
import pino from "pino";
import { describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import type { InspectionEvent } from "xstate";
import { workerExitLines } from "../../src/cli/workerExitLines.ts";
import { workerLossLines } from "../../src/cli/workerLossLines.ts";
import {
  ConfigError,
  createEngine,
  type Engine,
  GraphError,
  inProcessPool,
  type JobContext,
  type JobEvent,
  type JobSpec,
  type Json,
  job,
  ListenerError,
  localPool,
  memoryNet,
  type Net,
  NonRetryableError,
  PoolError,
  type RunProgress,
  type RunResult,
  type WorkerPool,
  wsNet,
} from "../../src/index.ts";
import type { JobBoard } from "../../src/machines/jobBoard.ts";
import { MAX_HANDSHAKE_BYTES } from "../../src/runtime/coordinatorServer.ts";
import { freePort } from "../../src/runtime/freePort.ts";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { ResultStore } from "../../src/runtime/resultStore.ts";
import type { JobProgressEvent, ListeningEvent, StoreFullEvent } from "../../src/runtime/run.ts";
import { STORE_FORMAT } from "../../src/runtime/storeFormat.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { untilAborted } from "../fixtures/untilAborted.ts";
import workerJobs from "../fixtures/worker.jobs.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs one job per kind on 2 in-process workers, each throwing its value, with no retry. */
async function runThrowing(thrown: Record<string, unknown>) {
  const engine = createEngine({
    jobs: Object.fromEntries(
      Object.entries(thrown).map(([kind, value]) => [
        kind,
        () => {
          throw value;
        },
      ]),
    ),
    workers: 2,
  });
  const specs = Object.keys(thrown).map((kind) => job(kind, null, { retries: 0 }));
  return { specs, result: await engine.run(specs) };
}

/** Polls until `check` holds, failing after `ms`. */
async function until(check: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The GraphError `engine.run` throws for a bad graph (it throws before anything runs). */
function graphErrorOf(engine: Engine, graph: JobSpec[]): GraphError {
  try {
    engine.run(graph);
  } catch (error) {
    expect(error).toBeInstanceOf(GraphError);
    return error as GraphError;
  }
  throw new Error("engine.run accepted a bad graph");
}

/** Outcomes of a kind, for jobs discovered while running (they have no spec to `get` by). */
const outcomesOf = (result: RunResult, kind: string) =>
  [...result.jobs.values()].filter((outcome) => outcome.kind === kind);

describe("engine: running graphs", { timeout: 10_000 }, () => {
  it("runs a fan-out/fan-in graph to the right values, with attempts and timings", async () => {
    const engine = createEngine({
      jobs: {
        square: (n: number) => n * n,
        sum: (_: null, ctx: JobContext) => (ctx.results as number[]).reduce((a, b) => a + b, 0),
      },
      workers: 4,
    });
    const squares = Array.from({ length: 10 }, (_, i) => job("square", i + 1));
    const total = job("sum", null, { after: squares });

    const result = await engine.run([total]);

    expect(result.ok).toBe(true);
    expect(result.counts).toEqual({
      completed: 11,
      failed: 0,
      skipped: 0,
      cancelled: 0,
      cached: 0,
    });
    expect(result.get(total).value).toBe(385);
    expect(squares.map((square) => result.get(square).value)).toEqual([
      1, 4, 9, 16, 25, 36, 49, 64, 81, 100,
    ]);
    expect(result.durationMs).toBeGreaterThan(0);
    for (const outcome of result.jobs.values()) {
      expect(outcome).toMatchObject({ status: "completed", attempts: 1, cached: false });
      expect(outcome.id).toMatch(/^[0-9a-f]{16}$/);
      expect(outcome.error).toBeUndefined();
      expect(outcome.finishedAt).toBeGreaterThanOrEqual(outcome.startedAt!);
    }
    const lastSquare = Math.max(...squares.map((square) => result.get(square).finishedAt!));
    expect(result.get(total).startedAt).toBeGreaterThanOrEqual(lastSquare);
  });

  it("runs on more than ten in-process workers without Node warning of a listener leak", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      const engine = createEngine({ jobs: { one: (n: number) => n }, workers: 12 });
      const jobs = Array.from({ length: 24 }, (_, i) => job("one", i));
      expect((await engine.run(jobs)).ok).toBe(true);
      // Node emits its warnings on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.filter((w) => w.includes("MaxListeners"))).toEqual([]);
  });

  it("is JSON.stringify'd as baton run --json prints it: jobs as an array, not a Map's {}", async () => {
    const engine = createEngine({
      jobs: { one: (n: number) => n, fail: () => Promise.reject(new NonRetryableError("no")) },
      workers: 1,
    });
    const result = await engine.run([job("one", 7), job("fail")]);
    const json = JSON.parse(JSON.stringify(result));
    expect(json).toEqual({
      run: result.run,
      ok: false,
      durationMs: Math.round(result.durationMs),
      counts: { completed: 1, failed: 1, skipped: 0, cancelled: 0, cached: 0 },
      jobs: [
        expect.objectContaining({ kind: "one", status: "completed", attempts: 1, value: 7 }),
        expect.objectContaining({ kind: "fail", status: "failed", cause: "error" }),
      ],
    });
    expect(json.jobs[1].error).toMatchObject({ message: "no", retryable: false });
    expect(Number.isInteger(json.jobs[0].startedAt)).toBe(true);
  });

  it("makes a result's outcomes when they are first read, once: ok and counts read none", async () => {
    let board: JobBoard | undefined;
    const engine = createEngine({
      jobs: { one: (n: number) => n, fail: () => Promise.reject(new NonRetryableError("no")) },
      workers: 2,
      onCoordinator: (coordinator) => {
        board = coordinator.getSnapshot().context.board;
      },
    });
    const result = await engine.run([job("one", 7), job("fail")]);
    // Passes over the board's jobs from here on: its outcomes are not made yet.
    let passes = 0;
    const jobs = board!.jobs;
    const entries = jobs[Symbol.iterator].bind(jobs);
    jobs[Symbol.iterator] = () => {
      passes++;
      return entries();
    };
    expect(result.ok).toBe(false);
    expect(result.counts).toEqual({ completed: 1, failed: 1, skipped: 0, cancelled: 0, cached: 0 });
    expect(passes).toBe(0);
    expect(result.get(job("one", 7))).toMatchObject({ status: "completed", value: 7 });
    expect(passes).toBe(1);
    expect([...result.jobs.values()].map((outcome) => outcome.status)).toEqual([
      "completed",
      "failed",
    ]);
    expect(result.jobs).toBe(result.jobs);
    expect(JSON.parse(JSON.stringify(result)).jobs).toHaveLength(2);
    expect(passes).toBe(1);
  });

  it("times a job by its last attempt, through a store's storing, and a job that never ran not at all", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-timings-"));
    try {
      let firstFailedAt = 0;
      const engine = createEngine({
        jobs: {
          flaky: async (_: number, ctx: JobContext) => {
            if (ctx.job.attempt > 1) return "second";
            await sleep(30);
            firstFailedAt = Date.now();
            throw new Error("first attempt fails");
          },
          broken: () => {
            throw new NonRetryableError("never works");
          },
          after: () => "unreachable",
        },
        workers: 2,
        store: dir,
      });
      const flaky = job("flaky", 1, { backoff: { initialMs: 0 } });
      const broken = job("broken", 2);
      const skipped = job("after", 3, { after: [broken] });
      const result = await engine.run([flaky, skipped]);

      const retried = result.get(flaky);
      expect(retried).toMatchObject({ status: "completed", attempts: 2, value: "second" });
      expect(retried.startedAt).toBeGreaterThanOrEqual(firstFailedAt);
      expect(retried.finishedAt).toBeGreaterThanOrEqual(retried.startedAt!);
      const failed = result.get(broken);
      expect(failed).toMatchObject({ status: "failed", attempts: 1 });
      expect(failed.finishedAt).toBeGreaterThanOrEqual(failed.startedAt!);
      const never = result.get(skipped);
      expect(never.status).toBe("skipped");
      expect(never).not.toHaveProperty("startedAt");
      expect(never).not.toHaveProperty("finishedAt");
      // The times come last, as the result has always listed them.
      expect(Object.keys(retried).slice(-2)).toEqual(["startedAt", "finishedAt"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("hands dependency results to a handler in the order of after, and by id", async () => {
    const engine = createEngine({
      jobs: {
        letter: (s: string) => s.toUpperCase(),
        collect: (_: null, ctx: JobContext) => ({ results: ctx.results, deps: ctx.deps }),
      },
      workers: 2,
    });
    const [a, b, c] = ["a", "b", "c"].map((s) => job("letter", s)) as [JobSpec, JobSpec, JobSpec];
    const collect = job("collect", null, { after: [c, a, b] });

    const result = await engine.run([collect]);

    expect(result.get(collect).value).toEqual({
      results: ["C", "A", "B"],
      deps: { [result.get(a).id]: "A", [result.get(b).id]: "B", [result.get(c).id]: "C" },
    });
  });

  it("hands a job stopped by ctx.need its after results first, then the needed jobs' and theirs, dependencies first", async () => {
    const engine = createEngine({
      jobs: {
        letter: (s: string) => s.toUpperCase(),
        twice: (_: null, ctx: JobContext) =>
          `${ctx.results[0] as string}${ctx.results[0] as string}`,
        top: (_: null, ctx: JobContext) => {
          const [needed] = ctx.need(job("twice", null, { after: [job("letter", "z")] }));
          return { needed, results: ctx.results };
        },
      },
      workers: 2,
    });
    const top = job("top", null, { after: [job("letter", "a")] });

    const result = await engine.run([top]);

    expect(result.get(top).value).toEqual({ needed: "ZZ", results: ["A", "Z", "ZZ"] });
  });

  it("retries a job that fails once, which then completes on attempt 2", async () => {
    const engine = createEngine({
      jobs: {
        flaky: (_: null, ctx: JobContext) => {
          if (ctx.job.attempt === 1) throw new Error("transient");
          return `ok on attempt ${ctx.job.attempt}`;
        },
      },
      workers: 2,
    });
    const flaky = job("flaky");

    const result = await engine.run([flaky]);

    expect(result.ok).toBe(true);
    expect(result.get(flaky)).toMatchObject({
      status: "completed",
      attempts: 2,
      value: "ok on attempt 2",
    });
    expect(result.get(flaky).error).toBeUndefined();
  });

  it("stops an attempt past its timeoutMs through its AbortSignal, then retries the job", async () => {
    const reasons: string[] = [];
    const engine = createEngine({
      jobs: {
        slowAtFirst: async (_: null, ctx: JobContext) => {
          if (ctx.job.attempt > 1) return `done on attempt ${ctx.job.attempt}`;
          try {
            return await untilAborted(ctx.signal);
          } catch (reason) {
            reasons.push(String((reason as Error).message ?? reason));
            throw reason;
          }
        },
      },
      workers: 1,
    });
    const slow = job("slowAtFirst", null, { timeoutMs: 200 });

    const result = await engine.run([slow]);

    expect(result.get(slow)).toMatchObject({
      status: "completed",
      attempts: 2,
      value: "done on attempt 2",
    });
    expect(reasons).toEqual([
      expect.stringContaining(`ran longer than its timeout of 200 ms (attempt 1)`),
    ]);
  });

  it("applies a kind's default timeoutMs from its definition in the job module", async () => {
    const engine = createEngine({
      jobs: {
        slow: { run: (_: null, ctx: JobContext) => untilAborted(ctx.signal), timeoutMs: 100 },
      },
      workers: 1,
    });
    const slow = job("slow", null, { retries: 0 });

    const result = await engine.run([slow]);

    expect(result.get(slow)).toMatchObject({ status: "failed", attempts: 1 });
    expect(result.get(slow).error?.message).toContain("ran longer than its timeout of 100 ms");
  });

  it("takes the worker back from a handler that ignores its timeout, and fails the job as JobTimeout", async () => {
    const engine = createEngine({
      jobs: { stuck: () => sleep(2_500), quick: () => "quick" },
      workers: 2,
      leaseTimeoutMs: 300,
      heartbeatMs: 50,
    });
    const stuck = job("stuck", null, { timeoutMs: 100, retries: 0 });
    const after = job("quick", 1, { after: [stuck] });
    const other = job("quick", 2);
    const started = Date.now();

    const result = await engine.run([after, other]);

    expect(Date.now() - started).toBeLessThan(2_000);
    expect(result.get(stuck)).toMatchObject({ status: "failed", attempts: 1 });
    expect(result.get(stuck).error).toMatchObject({ name: "JobTimeout" });
    expect(result.get(after)).toMatchObject({ status: "skipped", cause: "skipped" });
    expect(result.get(other)).toMatchObject({ status: "completed", value: "quick" });
  });

  it("rejects with a PoolError, not a hang, once the in-process workers' replacements are spent", async () => {
    const engine = createEngine({
      // Ignores its AbortSignal past its lease, then returns: its worker rejoins only then. Well
      // past the lease, even when a loaded machine delays its sweep: a completed result that
      // beats the lease's expiry counts (at 400 ms, one CI under a load of 20 saw the run pass).
      jobs: { stuck: () => sleep(1_500), quick: () => "quick" },
      workers: inProcessPool({ count: 1, resources: {}, restartBudget: 2 }),
      leaseTimeoutMs: 200,
      // The worker gives up on a coordinator silent for 4 pings (400 ms): well after the
      // lease, even when a loaded machine stalls the process (at 50 ms, 4009 came first).
      heartbeatMs: 100,
    });
    const stuck = job("stuck", null, { timeoutMs: 50, retries: 5 });
    const started = Date.now();

    let settled = false;
    // A Run has a promise's catch and finally.
    const refused = await engine
      .run([stuck, job("quick", 1, { after: [stuck] })])
      .finally(() => {
        settled = true;
      })
      .catch((error: unknown) => error);
    expect(settled).toBe(true);

    // Three attempts of 1.5 s each, one a worker, then the refusal: seconds, not a hang.
    expect(Date.now() - started).toBeLessThan(12_000);
    expect(refused).toBeInstanceOf(PoolError);
    expect(refused).toMatchObject({ code: "WORKER_CRASH_LOOP", worker: "inproc-1" });
    expect((refused as PoolError).message).toContain("in-process worker inproc-1 ended with 4005");
    expect((refused as PoolError).message).toContain("its 2 replacements are spent");
  });

  it("a pool of 1 whose handler ignores its AbortSignal never runs two attempts at once: the worker rejoins once it returned", async () => {
    let running = 0;
    let most = 0;
    const engine = createEngine({
      jobs: {
        deaf: async (_: null, ctx: JobContext) => {
          running++;
          most = Math.max(most, running);
          // Attempt 1 ignores its abort past its lease (the coordinator closes with 4005).
          if (ctx.job.attempt === 1) await sleep(1_500);
          running--;
          return ctx.job.attempt;
        },
      },
      workers: inProcessPool({ count: 1, resources: {} }),
      leaseTimeoutMs: 200,
      heartbeatMs: 100,
    });
    const deaf = job("deaf", null, { timeoutMs: 50, retries: 1 });

    const result = await engine.run(deaf);

    expect(result.get(deaf)).toMatchObject({ status: "completed", value: 2, attempts: 2 });
    expect(most).toBe(1);
  });

  it("says when a worker has waited its abortGraceMs for an aborted handler that does not return, and a cancel ends the run without waiting for it", async () => {
    const waits: { msg: string; worker?: string; waitedMs?: number; job?: string }[] = [];
    let said = () => {};
    const logger = pino(
      { level: "warn" },
      {
        write: (line: string) => {
          const entry = JSON.parse(line);
          if (/^the handler of .* this worker was running has not returned/.test(entry.msg)) {
            waits.push(entry);
            said();
          }
        },
      },
    );
    const never: (() => void)[] = [];
    const engine = createEngine({
      jobs: { stuck: () => new Promise<void>((resolve) => never.push(resolve)) },
      workers: inProcessPool({ count: 1, resources: {}, abortGraceMs: 2_000 }),
      leaseTimeoutMs: 200,
      heartbeatMs: 100,
      cancelGraceMs: 100,
      logger,
    });
    const stuck = job("stuck", null, { timeoutMs: 50 });
    try {
      const run = engine.run(stuck);
      const started = Date.now();
      said = () => run.cancel("stop");

      const result = await run;

      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
      const id = result.get(stuck).id;
      expect(waits).toEqual([
        expect.objectContaining({ worker: "inproc-1", waitedMs: 2_000, job: id, kind: "stuck" }),
      ]);
      // It names the job and what to do, where it said only "the job this worker was running".
      expect(waits[0]?.msg).toMatch(
        new RegExp(
          `^the handler of job ${id} \\(stuck\\) this worker was running has not returned 2000 ms after its abort \\(it does not stop on ctx\\.signal\\);.* make it return \\(or throw\\) once ctx\\.signal aborts, or run the jobs in worker processes with a handler thread`,
        ),
      );
      expect(result.get(stuck)).toMatchObject({ status: "cancelled" });
      // Its worker never took attempt 2 beside the handler that does not return.
      expect(never).toHaveLength(1);
    } finally {
      for (const resolve of never) resolve();
    }
  }, 40_000);

  it("resolves a run whose pool fails as it stops, after every job ended (a worker exiting with an error as the listener closes on it)", async () => {
    const inner = inProcessPool({ count: 1 });
    const workers: WorkerPool = {
      ...inner,
      start(context) {
        const running = inner.start(context);
        let fail!: (error: Error) => void;
        return {
          failed: new Promise<Error>((resolve) => {
            fail = resolve;
          }),
          stop() {
            fail(new PoolError("WORKER_SPAWN", "worker mine-1 exited with code 3", "mine-1"));
            return running.stop();
          },
        };
      },
    };
    const one = job("one", 1);
    const result = await createEngine({ jobs: { one: (n: number) => n }, workers }).run(one);
    expect(result.ok).toBe(true);
    expect(result.get(one).value).toBe(1);
  });

  it("does not retry a NonRetryableError, a duck-typed retryable: false or ctx.need of a bad job", async () => {
    const engine = createEngine({
      jobs: {
        refuse: () => {
          throw new NonRetryableError("the input names no file; fix the input");
        },
        refuseLikeThat: () => {
          throw Object.assign(new Error("quota refused for good"), { retryable: false });
        },
        needsNothing: (_: null, ctx: JobContext) => ctx.need(job("noSuchKind", 1)),
        flaky: () => {
          throw new Error("try again");
        },
      },
      workers: 2,
    });
    const refuse = job("refuse", null, { retries: 3 });
    const refuseLikeThat = job("refuseLikeThat", null, { retries: 3 });
    const needsNothing = job("needsNothing", null, { retries: 3 });
    const flaky = job("flaky", null, { retries: 1 });

    const result = await engine.run([refuse, refuseLikeThat, needsNothing, flaky]);

    for (const spec of [refuse, refuseLikeThat, needsNothing]) {
      expect(result.get(spec)).toMatchObject({
        status: "failed",
        cause: "error",
        attempts: 1,
        error: { retryable: false },
      });
    }
    expect(result.get(refuse).error).toMatchObject({
      name: "NonRetryableError",
      message: "the input names no file; fix the input",
    });
    expect(result.get(needsNothing).error?.message).toContain("noSuchKind");
    expect(result.get(flaky)).toMatchObject({ status: "failed", attempts: 2 });
    expect(result.get(flaky).error?.retryable).toBeUndefined();
  });

  it("fails a job whose retries are exhausted and skips its dependents, naming it", async () => {
    const engine = createEngine({
      jobs: {
        broken: () => {
          throw new Error("disk on fire");
        },
        use: (n: number) => n,
      },
      workers: 2,
    });
    const broken = job("broken", null, { retries: 2 });
    const child = job("use", 1, { after: [broken] });
    const grandchild = job("use", 2, { after: [child] });
    const bystander = job("use", 3);

    const result = await engine.run([grandchild, bystander]);

    expect(result.ok).toBe(false);
    expect(result.counts).toMatchObject({ completed: 1, failed: 1, skipped: 2 });
    const failed = result.get(broken);
    expect(failed).toMatchObject({ status: "failed", cause: "error", attempts: 3 });
    expect(failed.error?.message).toBe("disk on fire");
    expect(failed.error?.stack).toMatch(/disk on fire\n\s+at /);
    for (const dependent of [child, grandchild]) {
      const skipped = result.get(dependent);
      expect(skipped).toMatchObject({ status: "skipped", cause: "skipped", attempts: 0 });
      expect(skipped.error?.message).toContain(`${failed.id} (broken) failed: disk on fire`);
    }
    expect(result.get(grandchild).error?.message).toBe(
      `skipped because dependency ${result.get(child).id} (use) was skipped, after job ${failed.id} (broken) failed: disk on fire`,
    );
    expect(result.get(bystander)).toMatchObject({ status: "completed", value: 3 });
  });

  it("runs jobs found by ctx.need, then reruns the needing handler with their values", async () => {
    const attempts: number[] = [];
    const engine = createEngine({
      jobs: {
        square: (n: number) => n * n,
        sumOfSquares: (ns: number[], ctx: JobContext) => {
          attempts.push(ctx.job.attempt);
          const squares = ctx.need(...ns.map((n) => job("square", n))) as number[];
          return squares.reduce((a, b) => a + b, 0);
        },
      },
      workers: 2,
    });
    const sum = job("sumOfSquares", [1, 2, 3]);

    const result = await engine.run([sum]);

    expect(result.ok).toBe(true);
    expect(result.get(sum)).toMatchObject({ status: "completed", value: 14, attempts: 2 });
    expect(attempts).toEqual([1, 2]);
    expect(outcomesOf(result, "square").map((o) => o.value)).toEqual(
      expect.arrayContaining([1, 4, 9]),
    );
    expect(result.jobs.size).toBe(4);
    // A needed job's outcome, by the job as the handler wrote it.
    expect(result.get(job("square", 3))).toMatchObject({ status: "completed", value: 9 });
    expect(() => result.get(job("square", 4))).toThrow(
      "Job square 4 is not part of this run: it is neither in its graph nor a job that a handler needed.",
    );
    // What JavaScript may pass for a job: named as what it is, not as "Job undefined".
    // @ts-expect-error: result.get takes a job
    expect(() => result.get("square")).toThrow(
      'result.get\'s job is "square", not a job; make jobs with job(kind, input, options).',
    );
  });

  it("runs the needed jobs even for a handler that catches ctx.need's stop by mistake, and tells it what it caught", async () => {
    const caught: string[] = [];
    const engine = createEngine({
      jobs: {
        square: (n: number) => n * n,
        swallows: (_: null, ctx: JobContext) => {
          try {
            return ctx.need(job("square", 2), job("square", 3));
          } catch (error) {
            caught.push(String(error));
            return "no squares";
          }
        },
        wraps: (_: null, ctx: JobContext) => {
          try {
            return ctx.need(job("square", 4));
          } catch (error) {
            throw new Error("squaring failed", { cause: error });
          }
        },
      },
      workers: 1,
    });
    const swallows = job("swallows");
    const wraps = job("wraps", null, { retries: 0 });

    const result = await engine.run([swallows, wraps]);

    // What the catch returned or threw instead was disregarded: the attempt ended blocked, the
    // needed jobs ran, and the handler ran again with their values. (Before, the needed jobs
    // never joined the run, and the catch's value or error was the job's outcome.)
    expect(result.jobs.size).toBe(5);
    expect(result.get(swallows)).toMatchObject({ status: "completed", value: [4, 9], attempts: 2 });
    expect(result.get(wraps)).toMatchObject({ status: "completed", value: [16], attempts: 2 });
    expect(caught).toHaveLength(1);
    expect(caught[0]).toMatch(
      /^NeedJobs: ctx\.need stops this handler until job [0-9a-f]{16} \(square\) and 1 more has completed, then runs it again; let this error through: what a catch around ctx\.need returns or throws instead is disregarded$/,
    );
  });

  it("blocks on what every ctx.need of an attempt lacked, when a handler caught one and needed more", async () => {
    const engine = createEngine({
      jobs: {
        square: (n: number) => n * n,
        twice: (_: null, ctx: JobContext) => {
          let first: number[] = [];
          try {
            first = ctx.need(job("square", 5)) as number[];
          } catch {
            // Caught by mistake; the next need throws through.
          }
          return [...first, ...(ctx.need(job("square", 6)) as number[])];
        },
      },
      workers: 1,
    });
    const twice = job("twice");
    const result = await engine.run([twice]);
    expect(result.get(twice)).toMatchObject({ status: "completed", value: [25, 36], attempts: 2 });
  });

  it("takes a needed job's stored result on a rerun instead of running it again", async () => {
    const store = mkdtempSync(join(tmpdir(), "baton-need-store-"));
    try {
      const squared: number[] = [];
      const engineFor = (failAfterNeeds: boolean) =>
        createEngine({
          jobs: {
            square: (n: number) => {
              squared.push(n);
              return n * n;
            },
            sumOfSquares: (ns: number[], ctx: JobContext) => {
              const squares = ctx.need(...ns.map((n) => job("square", n))) as number[];
              if (failAfterNeeds) throw new Error("the disk filled up");
              return squares.reduce((a, b) => a + b, 0);
            },
          },
          workers: 2,
          store,
        });
      const sum = job("sumOfSquares", [1, 2, 3], { retries: 0 });

      const first = await engineFor(true).run([sum]);
      expect(first.get(sum)).toMatchObject({ status: "failed", attempts: 2 });
      expect(squared.sort()).toEqual([1, 2, 3]);

      const rerun = await engineFor(false).run([sum]);

      expect(rerun.get(sum)).toMatchObject({ status: "completed", value: 14 });
      expect(squared).toHaveLength(3);
      const squares = outcomesOf(rerun, "square");
      expect(squares.map((o) => [o.value, o.cached])).toEqual(
        expect.arrayContaining([
          [1, true],
          [4, true],
          [9, true],
        ]),
      );
      expect(rerun.counts.cached).toBe(3);
    } finally {
      rmSync(store, { recursive: true, force: true });
    }
  });

  it("fails a job that needs a job depending on itself with cause cycle, without hanging", async () => {
    const engine = createEngine({
      jobs: {
        loop: (n: number, ctx: JobContext) =>
          ctx.need(job("helper", n, { after: [job("loop", n)] })),
        helper: (n: number) => n,
      },
      workers: 2,
    });
    const loop = job("loop", 7);

    const result = await engine.run([loop]);

    const failed = result.get(loop);
    expect(failed).toMatchObject({ status: "failed", cause: "cycle", attempts: 1 });
    const [helper] = outcomesOf(result, "helper");
    expect(helper).toMatchObject({ status: "skipped", attempts: 0 });
    expect(failed.error?.message).toContain(
      `job ${failed.id} (loop) needs jobs that depend on it: loop(${failed.id}) → helper(${helper!.id}) → loop(${failed.id}).`,
    );
  });

  it("names the argument of ctx.need that is not a job: nothing, or an array not spread", async () => {
    const engine = createEngine({
      jobs: {
        square: (n: number) => n * n,
        needsNothing: (_: null, ctx: JobContext) => ctx.need(job("square", 2), undefined as never),
        needsArray: (_: null, ctx: JobContext) => ctx.need([job("square", 3)] as never),
      },
      workers: 2,
    });
    const nothing = job("needsNothing", null, { retries: 0 });
    const array = job("needsArray", null, { retries: 0 });

    const result = await engine.run([nothing, array]);

    expect(result.get(nothing).error?.message).toBe(
      "argument 2 of ctx.need is undefined, not a job; make jobs with job(kind, input, options).",
    );
    expect(result.get(array).error?.message).toBe(
      "argument 1 of ctx.need is an array, not a job; give the jobs themselves (spread it: ...jobs).",
    );
  });
});

describe("engine: results written to a store", { timeout: 10_000 }, () => {
  it("holds each job storing until its result is durable; its dependent starts only then", async () => {
    const store = tempDir("baton-storing-");
    const engine = createEngine({
      jobs: { a: (n: number) => n, b: (n: number) => n },
      workers: 2,
      store,
    });
    const a = job("a", 1);
    const b = job("b", 2, { after: [a] });
    const run = engine.run([b]);
    const events: string[] = [];
    run.on("job", (e) => events.push(`${e.kind} ${e.state}`));
    const result = await run;
    expect(result.ok).toBe(true);
    // The starting state (a ready, b blocked) is not a change, so it is not an event.
    expect(events).toEqual([
      "a running",
      "a storing",
      "a completed",
      "b ready",
      "b running",
      "b storing",
      "b completed",
    ]);
    expect(readdirSync(join(store, "results")).length).toBeGreaterThan(0);
  });

  it("a store it cannot write to (a read-only mount) is refused before any job runs, saying how to reuse what it holds; one a newer baton wrote is refused untouched", async () => {
    const store = tempDir("baton-read-only-");
    const ran: number[] = [];
    const jobs = { step: (n: number) => ran.push(n) };
    const graph = [1, 2].map((n) => job("step", n));
    expect((await createEngine({ jobs, workers: 1, store }).run(graph)).ok).toBe(true);
    ran.length = 0;
    const real = nodeFiles();
    const readOnly = (code: string, syscall: string) => (path: string) => {
      throw Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, syscall, path });
    };
    const mounted = {
      ...real,
      createExclusive: readOnly("EROFS", "open"),
      writeAtomic: readOnly("EROFS", "open"),
      remove: readOnly("EROFS", "unlink"),
    };
    const refused = createEngine({ jobs, workers: 1, store, files: mounted }).run([
      ...graph,
      job("step", 3),
    ]);
    await expect(refused).rejects.toMatchObject({
      name: "StoreError",
      code: "STORE_NOT_WRITABLE",
      message: expect.stringMatching(
        new RegExp(
          `^the result store ${store} cannot be written: cannot open ${join(store, "results")}/\\.writable-\\d+: the file system is read-only; a run does not start on a store it cannot write to, even to reuse the results it holds \\(what the run computed would be lost\\): to reuse them, copy them to a folder you can write to and give that \\(mkdir -p COPY && cp -r ${join(store, "results")} COPY/, then --store COPY\\), or reuse them without storing what the run computes \\(--store-read-only\\), or keep no results \\(--no-store\\)$`,
        ),
      ),
    });
    expect(ran).toEqual([]);
    // Or, asked for, it reuses them as they are, writes nothing there, and runs the new job.
    const elsewhere = join(tempDir("baton-elsewhere-"), "files");
    const reused = await createEngine({
      jobs,
      workers: 1,
      store,
      storeReadOnly: true,
      batonDir: elsewhere,
      files: mounted,
    }).run([...graph, job("step", 3)]);
    expect(reused.counts).toMatchObject({ completed: 3, cached: 2 });
    expect(ran).toEqual([3]);
    ran.length = 0;
    // What it says to do: the copy reuses both results and runs the new job only.
    const copy = join(store, "copy");
    cpSync(join(store, "results"), join(copy, "results"), { recursive: true });
    const again = await createEngine({ jobs, workers: 1, store: copy }).run([
      ...graph,
      job("step", 3),
    ]);
    expect(again.counts).toMatchObject({ completed: 3, cached: 2 });
    expect(ran).toEqual([3]);

    writeFileSync(join(copy, "format.json"), `{"format":${STORE_FORMAT + 1}}`);
    const newer = createEngine({ jobs, workers: 1, store: copy }).run([job("step", 4)]);
    await expect(newer).rejects.toMatchObject({ code: "STORE_NEWER_FORMAT" });
    expect(ran).toEqual([3]);
  });

  /** Node's files, except that a result is refused for want of room (ENOSPC) while `full()`. */
  const filesFilling = (full: () => boolean) => {
    const real = nodeFiles();
    return {
      ...real,
      writeAtomic: async (path: string, data: string | Uint8Array, mode?: number) => {
        if (full() && path.includes("/results/")) {
          const error = new Error(`ENOSPC: no space left on device, open '${path}'`);
          throw Object.assign(error, { code: "ENOSPC", syscall: "open", path });
        }
        return real.writeAtomic(path, data, mode);
      },
    };
  };

  it("a disk that fills up spends no attempt: the results wait for room, the run says so, and goes on", async () => {
    const store = tempDir("baton-full-");
    let full = true;
    const ran: number[] = [];
    const engine = createEngine({
      jobs: { step: (n: number) => ran.push(n) },
      workers: 2,
      store,
      files: filesFilling(() => full),
    });
    const run = engine.run([1, 2, 3].map((n) => job("step", n, { retries: 0 })));
    const said: string[] = [];
    run.on("store.full", (event) => {
      said.push(event.message);
      // Room comes once the run has said it has none: the next try, a second later, writes.
      full = false;
    });
    const result = await run;
    expect(result.ok).toBe(true);
    expect(ran.sort()).toEqual([1, 2, 3]);
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(
      new RegExp(
        `^the result store ${store} has no room: no space left on its disk \\(.* free\\)\\. No job's attempt is spent on it`,
      ),
    );
    expect(said[1]).toMatch(new RegExp(`^the result store ${store} has room again after `));
    expect(readdirSync(join(store, "results")).length).toBeGreaterThan(0);
  });

  it("a cancel while the store has no room says, after cancelGraceMs, that the held results could not be stored, not that a job did not stop", async () => {
    const store = tempDir("baton-full-");
    const held = job("step", 1);
    const waiting = job("step", 2, { after: [held] });
    const run = createEngine({
      jobs: { step: (n: number) => n },
      workers: 1,
      store,
      files: filesFilling(() => true),
      cancelGraceMs: 200,
    }).run([waiting]);
    run.on("store.full", () => run.cancel("terminated (SIGTERM)"));
    const result = await run;
    expect(result.get(held)).toMatchObject({ status: "cancelled", attempts: 1 });
    expect(result.get(held).error?.message).toBe(
      "terminated (SIGTERM); its result could not be stored within 200 ms of the cancel: the result store has no room",
    );
    expect(result.get(waiting)).toMatchObject({ status: "cancelled", attempts: 0 });
  });

  it("a store that stays full stops the run with STORE_FULL, keeping what was stored for the rerun", async () => {
    const store = tempDir("baton-full-");
    let full = false;
    const ran: string[] = [];
    const jobs = {
      a: (n: number) => {
        ran.push("a");
        return n;
      },
      b: (n: number) => {
        ran.push("b");
        // The disk fills up while b runs, after a's result was stored.
        full = true;
        return n;
      },
    };
    const a = job("a", 1);
    const graph = [job("b", 2, { after: [a] })];
    const stopped = createEngine({
      jobs,
      workers: 1,
      store,
      files: filesFilling(() => full),
      storeFullWaitMs: 1_500,
    }).run(graph);
    const said: StoreFullEvent[] = [];
    stopped.on("store.full", (event) => said.push(event));
    const message = `the result store ${store} had no room for 1.5 s, so the run stopped: the 1 result it could not write and the jobs running then are not kept; the results stored before (1 during this run) are. Free some space on that disk, or give --store a directory on another disk, and baton run again resumes from them`;
    await expect(stopped).rejects.toMatchObject({
      name: "StoreError",
      code: "STORE_FULL",
      dir: store,
      message,
    });
    // The stop is said as it begins, so a caller knows why the run ends before it has ended.
    expect(said.map(({ full, stopping }) => ({ full, stopping }))).toEqual([
      { full: true, stopping: undefined },
      { full: true, stopping: true },
    ]);
    expect(said[1]).toEqual({ dir: store, full: true, stopping: true, message });
    expect(ran).toEqual(["a", "b"]);
    const rerun = await createEngine({ jobs, workers: 1, store }).run(graph);
    expect(rerun.counts).toMatchObject({ completed: 2, cached: 1 });
    expect(ran).toEqual(["a", "b", "b"]);
  });

  it("a rerun reports reading the stored results before any job runs", async () => {
    const store = tempDir("baton-storing-");
    const engine = createEngine({ jobs: { step: (n: number) => n }, workers: 2, store });
    const graph = Array.from({ length: 1_200 }, (_, i) => job("step", i));
    expect((await engine.run(graph)).ok).toBe(true);
    const rerun = engine.run([...graph, job("step", -1)]);
    const seen: string[] = [];
    rerun.on("store.reading", ({ done, total }) => seen.push(`read ${done}/${total}`));
    rerun.on("job", (e) => seen.push(`job ${e.state}`));
    const result = await rerun;
    expect(result.counts).toMatchObject({ completed: 1_201, cached: 1_200 });
    // Every 500 entries and at the end; the one new job starts only after that.
    expect(seen.slice(0, 4)).toEqual([
      "read 500/1200",
      "read 1000/1200",
      "read 1200/1200",
      "job running",
    ]);
  });

  it("says where workers join before any job runs, and says nothing when the store held every result", async () => {
    const store = tempDir("baton-listening-");
    const engine = createEngine({ jobs: { step: (n: number) => n }, workers: 2, store });
    const graph = [1, 2, 3].map((n) => job("step", n));
    const first = engine.run(graph);
    const seen: string[] = [];
    first.on("listening", (listening) => seen.push(`listening ${JSON.stringify(listening)}`));
    first.on("job", (e) => seen.push(`job ${e.state}`));
    expect((await first).ok).toBe(true);
    // In-process workers join over the in-memory Net and need no secret file.
    expect(seen[0]).toMatch(
      /^listening \{"address":"(memory:\/\/run-[\w-]+)","listenAddress":"\1"\}$/,
    );
    expect(seen.filter((line) => line.startsWith("listening"))).toHaveLength(1);

    const rerun = engine.run(graph);
    let listened = false;
    rerun.on("listening", () => {
      listened = true;
    });
    expect((await rerun).counts).toMatchObject({ completed: 3, cached: 3 });
    expect(listened).toBe(false);
  });

  it("says workers elsewhere join at this machine's name when it listens on every interface, and where it listens", async () => {
    // Over the in-memory Net, which listens at the address as given: no socket on 0.0.0.0.
    const engine = createEngine({
      jobs: { step: (n: number) => n },
      workers: 1,
      listen: "ws://0.0.0.0:7000",
      net: memoryNet(),
    });
    const run = engine.run([job("step", 1)]);
    const listening = new Promise<ListeningEvent>((resolve) => run.on("listening", resolve));
    expect((await run).ok).toBe(true);
    expect(await listening).toEqual({
      address: `ws://${hostname()}:7000`,
      listenAddress: "ws://0.0.0.0:7000",
    });
  });

  it("refuses a second run at once at a fixed listen address, naming the run that holds it, and takes the next once that run ended", async () => {
    const port = await freePort();
    const listen = `127.0.0.1:${port}`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const engine = createEngine({
      jobs: { hold: () => held, step: (n: number) => n },
      workers: 1,
      listen,
    });
    const first = engine.run([job("hold", null)]);
    await new Promise((resolve) => first.on("listening", resolve));
    const second = engine.run([job("step", 2)]);
    await expect(second).rejects.toThrow(ConfigError);
    await expect(second).rejects.toThrow(
      `createEngine's listen ${listen} is held by run ${first.id} of this engine until it ends, and a fixed address takes one run at a time: await that run before starting the next, or listen on port 0 (a free port for each run) when no worker needs the address in advance`,
    );
    release();
    expect((await first).ok).toBe(true);
    // Released once the run ended: the next run listens there.
    expect((await engine.run([job("step", 3)])).ok).toBe(true);
  });

  it("keeps keepLogs runs' log folders of one engine's runs, not every folder written in the last day", async () => {
    const store = tempDir("baton-logs-");
    // In-process workers that join over WebSockets, as worker processes do, and write their
    // logs where the run says.
    const inner = inProcessPool({ count: 1, resources: { cpus: 1 } });
    const pool: WorkerPool = {
      ...inner,
      remote: true,
      start(context) {
        mkdirSync(context.logsDir, { recursive: true });
        writeFileSync(join(context.logsDir, "worker-1.log"), "{}\n");
        return inner.start(context);
      },
    };
    const engine = createEngine({
      jobs: { step: (n: number) => n },
      workers: pool,
      store,
      keepLogs: 2,
    });

    for (const n of [1, 2, 3, 4]) expect((await engine.run([job("step", n)])).ok).toBe(true);

    const folders = readdirSync(join(store, "logs"));
    expect(folders).toHaveLength(2);
    for (const folder of folders) {
      expect(readdirSync(join(store, "logs", folder)).sort()).toEqual(["ended", "worker-1.log"]);
    }
  });

  it("counts the time reading the store in the run's duration", async () => {
    const dir = tempDir("baton-storing-");
    const store = await ResultStore.open(dir, nodeFiles());
    const a = job("step", 1);
    const engine = createEngine({ jobs: { step: (n: number) => n }, workers: 1, store });
    expect((await engine.run([a])).get(a).cached).toBe(false);
    // Reading the stored results takes a minute of the clock the engine reads.
    const real = nodeClock();
    let skipped = 0;
    const loadAll = store.loadAll.bind(store);
    store.loadAll = async (ids, onRead) => {
      skipped += 60_000;
      return loadAll(ids, onRead);
    };
    const rerun = createEngine({
      jobs: { step: (n: number) => n },
      workers: 1,
      store,
      clock: {
        now: () => real.now() + skipped,
        setTimeout: (fn, ms) => real.setTimeout(fn, ms),
        clearTimeout: (handle) => real.clearTimeout(handle),
      },
    });
    const result = await rerun.run([a]);
    expect(result.get(a).cached).toBe(true);
    expect(result.durationMs).toBeGreaterThanOrEqual(60_000);
  });

  it("says in each progress how many jobs the store gave the run: none on the first run, those reused on the rerun", async () => {
    const dir = tempDir("baton-cached-");
    const engine = createEngine({ jobs: { step: (n: number) => n }, workers: 1, store: dir });
    const cachedOf = async (graph: JobSpec[]) => {
      const run = engine.run(graph);
      const cached: number[] = [];
      run.on("progress", (progress) => cached.push(progress.cached));
      await run;
      return cached;
    };
    expect(await cachedOf([job("step", 1), job("step", 2)])).toEqual([0]);
    expect(await cachedOf([job("step", 1), job("step", 2), job("step", 3)])).toEqual([2]);
  });

  it("a result the store cannot write fails that attempt, and the job runs again", async () => {
    const dir = tempDir("baton-storing-");
    const store = await ResultStore.open(dir, nodeFiles());
    const put = store.put.bind(store);
    let writes = 0;
    store.put = (id, kind, value) =>
      ++writes === 1 ? Promise.reject(new Error("EIO: i/o error")) : put(id, kind, value);
    const engine = createEngine({ jobs: { step: (n: number) => n }, workers: 1, store });
    const a = job("step", 1);
    const result = await engine.run([a]);
    expect(result.ok).toBe(true);
    expect(result.get(a)).toMatchObject({ status: "completed", value: 1, attempts: 2 });
    expect(writes).toBe(2);
  });
});

describe("engine: a dry run (plan)", { timeout: 10_000 }, () => {
  /** An engine on a store in a fresh directory, counting handler calls. */
  function withStore(options: { force?: boolean } = {}) {
    const root = tempDir("baton-plan-");
    const store = join(root, "store");
    const calls: string[] = [];
    const engine = createEngine({
      jobs: {
        step: (n: number) => {
          calls.push(`step ${n}`);
          return n;
        },
      },
      workers: 2,
      store,
      ...options,
    });
    return { engine, store, calls };
  }

  const a = job("step", 1);
  const b = job("step", 2, { after: [a] });
  const c = job("step", 3, { after: [b] });

  it("says which jobs a run would take from the store and which it would start, running none", async () => {
    const { engine, store, calls } = withStore();
    await engine.run([b]);
    calls.length = 0;

    const plan = await engine.plan([c]);

    expect(plan.counts).toEqual({ jobs: 3, stored: 2, toRun: 1, corrupt: 0 });
    expect(plan.jobs.map((j) => [j.kind, j.stored])).toEqual([
      ["step", true],
      ["step", true],
      ["step", false],
    ]);
    expect(plan.jobs[2]!.deps).toEqual([plan.jobs[1]!.id]);
    expect(calls).toEqual([]);
    expect(readdirSync(store).sort()).toEqual(["format.json", "logs", "quarantine", "results"]);
  });

  it("creates nothing where there is no store yet, and uses none with force", async () => {
    const fresh = withStore();
    expect((await fresh.engine.plan([c])).counts).toEqual({
      jobs: 3,
      stored: 0,
      toRun: 3,
      corrupt: 0,
    });
    expect(existsSync(fresh.store)).toBe(false);

    const forced = withStore({ force: true });
    await forced.engine.run([c]);
    expect((await forced.engine.plan([c])).counts).toMatchObject({ stored: 0, toRun: 3 });
  });

  it("counts a corrupt stored result among the jobs to run and leaves the file where it is", async () => {
    const { engine, store } = withStore();
    const result = await engine.run([a]);
    const id = result.get(a).id;
    const entry = join(store, "results", id.slice(0, 2), `${id}.json`);
    writeFileSync(entry, '{"torn":');

    const plan = await engine.plan([a]);

    expect(plan.counts).toEqual({ jobs: 1, stored: 0, toRun: 1, corrupt: 1 });
    expect(readFileSync(entry, "utf8")).toBe('{"torn":');
    expect(readdirSync(join(store, "quarantine"))).toEqual([]);
  });

  it("refuses a bad graph with the same GraphError as run", async () => {
    const { engine } = withStore();
    await expect(engine.plan([job("nowhere")])).rejects.toMatchObject({
      name: "GraphError",
      code: "UNKNOWN_KIND",
    });
  });
});

describe("engine: bad input is a clear error, never a hang or a crash", { timeout: 10_000 }, () => {
  const handlers = { value: (x: unknown) => x };
  it("fails a job added by ctx.need that no worker can take with the up-front refusal's words, naming the pool's way out", async () => {
    const workers: WorkerPool = {
      ...inProcessPool({ count: 1, resources: { cpus: 1 } }),
      offerMore: (enough) => `give the pool gpus=${enough.gpus}`,
    };
    const engine = createEngine({
      jobs: {
        gpu: () => 1,
        needsGpu: (_: null, ctx: JobContext) => ctx.need(job("gpu", 1, { requires: { gpus: 2 } })),
      },
      workers,
    });
    const needsGpu = job("needsGpu", null);
    const result = await engine.run(needsGpu);
    const gpu = [...result.jobs.values()].find((o) => o.kind === "gpu")!;
    expect(gpu).toMatchObject({ status: "failed", cause: "unsatisfiable" });
    expect(gpu.error!.message).toMatch(
      /^No configured worker can take this job:\n {2}job [0-9a-f]{16} \(gpu 1\) requires gpus 2\nThe workers offer:\n {2}cpus 1, gpus 0, memory 0 MiB\nLower what the job requires, or give the pool gpus=2 \(/,
    );
    expect(result.get(needsGpu)).toMatchObject({ status: "skipped", cause: "skipped" });
  });

  it("rejects a cycle, an unknown kind, an unsatisfiable job and non-JSON input up front", async () => {
    const engine = createEngine({ jobs: handlers });

    const a = job("value", "a");
    const b = job("value", "b", { after: [a] });
    (a.after as JobSpec[]).push(b);
    const cycle = graphErrorOf(engine, [b]);
    expect(cycle.code).toBe("GRAPH_CYCLE");
    expect(cycle.message).toContain('value "b" → value "a" → value "b"');

    const unknown = graphErrorOf(engine, [job("value", 1), job("nope", 2)]);
    expect(unknown.code).toBe("UNKNOWN_KIND");
    expect(unknown.message).toContain('Unknown job kind "nope" (1 job)');
    expect(unknown.message).toContain('The job module defines "value".');
    expect(graphErrorOf(engine, [job("valeu", 1)]).message).toContain(
      'The job module defines "value"; did you mean "value"?',
    );
    expect(unknown.jobs).toEqual(["nope"]);

    const unsatisfiable = graphErrorOf(engine, [job("value", "gpu", { requires: { gpus: 1 } })]);
    expect(unsatisfiable.code).toBe("UNSATISFIABLE");
    expect(unsatisfiable.message).toMatch(/job [0-9a-f]{16} \(value "gpu"\) requires gpus 1\n/);
    expect(unsatisfiable.message).toMatch(
      new RegExp(`The workers offer:\\n  cpus ${availableParallelism()}, gpus 0, memory \\d+ MiB`),
    );

    const fn = graphErrorOf(engine, [job("value", { fn: () => 1 })]);
    expect(fn.code).toBe("NOT_JSON");
    expect(fn.message).toContain('The input of job "value" is not JSON: input.fn is a function');
    const bigint = graphErrorOf(engine, [job("value", [10n])]);
    expect(bigint.code).toBe("NOT_JSON");
    expect(bigint.message).toContain('The input of job "value" is not JSON: input[0] is a BigInt');

    const fine = job("value", "still works");
    expect((await engine.run([fine])).get(fine).value).toBe("still works");
  });

  it("names the resources of the pool the user gave, or of createEngine's workers, as the way out of a job no worker can take", () => {
    const gpu = [job("value", "gpu", { requires: { gpus: 1 } })];
    const cpus = availableParallelism();
    const wayOut = (workers: Parameters<typeof createEngine>[0]["workers"]) =>
      graphErrorOf(createEngine({ jobs: handlers, workers }), gpu)
        .message.split("\n")
        .at(-1);
    expect(wayOut(inProcessPool({ count: 1 }))).toMatch(
      new RegExp(
        `^Lower what the job requires, or give inProcessPool resources that offer enough, such as \\{ cpus: ${cpus}, gpus: 1, memory: \\d+ \\} \\(`,
      ),
    );
    expect(wayOut(inProcessPool({ count: 1, resources: { cpus: 1, memory: 512 } }))).toBe(
      "Lower what the job requires, or give inProcessPool resources that offer enough, such as { cpus: 1, gpus: 1, memory: 512 } (a resource a worker does not declare counts as 0).",
    );
    const jobsModule = fileURLToPath(new URL("../fixtures/plain.jobs.ts", import.meta.url));
    expect(wayOut(localPool({ jobsModule, count: 1, resources: { cpus: 2 } }))).toContain(
      "or give localPool resources that offer enough, such as { cpus: 2, gpus: 1 } (",
    );
    // The user called no pool: the way out is createEngine's own option.
    for (const workers of [undefined, 1, { count: 1, resources: { cpus: 1 } }]) {
      expect(wayOut(workers)).toContain(
        "or give createEngine's workers resources that offer enough, such as { cpus: ",
      );
    }
  });

  it("names what is not a job by where the caller put it: engine.run's graph, or its index in the array", async () => {
    const engine = createEngine({ jobs: handlers });
    expect(() => engine.run("value" as never)).toThrow(
      'engine.run\'s graph is "value", not a job; make jobs with job(kind, input, options).',
    );
    expect(() => engine.run({ kind: "value" } as never)).toThrow(
      'The job at engine.run\'s graph (kind "value") has no after and no requires: it was not made by job()',
    );
    await expect(engine.plan(null as never)).rejects.toThrow(
      "engine.plan's graph is null, not a job;",
    );
    expect(graphErrorOf(engine, [job("value", 1), undefined as never]).message).toBe(
      "graph[1] is undefined, not a job; make jobs with job(kind, input, options).",
    );
  });

  it("refuses an input nested past 1,000 levels up front, and runs one of 1,000 levels", async () => {
    const nested = (levels: number) => {
      let value: unknown = 0;
      for (let i = 0; i < levels; i++) value = [value];
      return value as Json;
    };
    const engine = createEngine({ jobs: handlers });
    // It used to be a RangeError (stack overflow) from the middle of planning.
    const deep = graphErrorOf(engine, [job("value", nested(20_000))]);
    expect(deep.code).toBe("NOT_JSON");
    expect(deep.message).toBe(
      'The input of job "value" nests arrays and objects deeper than 1000 levels (at input[0][0][0]…), which baton does not take: every step that reads it recurses. Flatten it, or pass the data by reference, such as the path of a file that holds it.',
    );
    const deepest = job("value", nested(1_000));
    const result = await engine.run([deepest]);
    expect(result.get(deepest).status).toBe("completed");
    expect(result.get(deepest).value).toEqual(nested(1_000));
  });

  it("closes its listener however the run fails: a secret that cannot be written, a listening or last progress listener that throws", async () => {
    const sockets = wsNet();
    const opened: string[] = [];
    const closed: string[] = [];
    const net: Net = {
      connect: (address, options) => sockets.connect(address, options),
      async listen(address, options) {
        const listener = await sockets.listen(address, options);
        opened.push(listener.address);
        return {
          address: listener.address,
          onConnection: (handler) => listener.onConnection(handler),
          close: async () => {
            closed.push(listener.address);
            await listener.close();
          },
        };
      },
    };
    const refusedAt = (address: string) =>
      new Promise<boolean>((resolve) => {
        const url = new URL(address);
        const probe = connect(Number(url.port), url.hostname);
        probe.once("connect", () => {
          probe.destroy();
          resolve(false);
        });
        probe.once("error", () => resolve(true));
      });
    const dir = tempDir("baton-engine-");
    const notADirectory = join(dir, "file");
    writeFileSync(notADirectory, "");
    const worker = fileURLToPath(new URL("../fixtures/worker.jobs.ts", import.meta.url));
    const unwritable = createEngine({
      jobs: { double: (n: number) => n * 2 },
      workers: localPool({ jobsModule: worker, count: 1 }),
      batonDir: notADirectory,
      net,
    });
    await expect(unwritable.run([job("double", 1)])).rejects.toThrow(/ENOTDIR/);

    const throwing = createEngine({
      jobs: { double: (n: number) => n * 2 },
      workers: 1,
      net,
      listen: "127.0.0.1:0",
      progressIntervalMs: 60_000,
    });
    const run = throwing.run([job("double", 2)]);
    run.on("listening", () => {
      throw new Error("the listener threw");
    });
    await expect(run).rejects.toThrow("the listener threw");

    // Only the last progress comes within a minute: it is emitted after the run closed.
    const lastProgress = throwing.run([job("double", 3)]);
    lastProgress.on("progress", () => {
      throw new Error("the progress listener threw");
    });
    await expect(lastProgress).rejects.toThrow("the progress listener threw");

    expect(opened).toHaveLength(3);
    expect(closed).toEqual(opened);
    for (const address of opened) expect(await refusedAt(address)).toBe(true);
  });

  it("closes a stranger that sends more than 64 KiB before its hello with 4004; its own workers send more", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const engine = createEngine({
      jobs: {
        big: async (n: number) => {
          await released;
          return "x".repeat(n);
        },
      },
      workers: 1,
      listen: "127.0.0.1:0",
    });
    const big = job("big", 4 * MAX_HANDSHAKE_BYTES);
    const run = engine.run([big]);
    try {
      const { address } = await new Promise<ListeningEvent>((resolve) =>
        run.on("listening", resolve),
      );
      const stranger = new WebSocket(address, { perMessageDeflate: false });
      const closed = new Promise<[number, string]>((resolve) => {
        stranger.once("close", (code, reason) => resolve([code, String(reason)]));
      });
      stranger.once("open", () => stranger.send("x".repeat(4 * MAX_HANDSHAKE_BYTES)));
      await expect(closed).resolves.toEqual([
        4004,
        `more than ${MAX_HANDSHAKE_BYTES} bytes before the handshake finished`,
      ]);
    } finally {
      release();
    }
    const result = await run;
    expect(result.get(big)).toMatchObject({ status: "completed", attempts: 1 });
    expect(result.get(big).value).toHaveLength(4 * MAX_HANDSHAKE_BYTES);
  });

  it("turns a thrown non-Error into a failed result with a message and a stack naming the kind", async () => {
    const engine = createEngine({
      jobs: {
        throwsString: () => {
          throw "boom";
        },
        throwsObject: () => {
          throw { code: 42 };
        },
        throwsUndefined: () => {
          throw undefined;
        },
      },
      workers: 2,
    });
    const thrown = {
      throwsString: "boom",
      throwsObject: '{"code":42}',
      throwsUndefined: "undefined",
    };
    const specs = Object.keys(thrown).map((kind) => job(kind, null, { retries: 0 }));

    const result = await engine.run(specs);

    for (const spec of specs) {
      const outcome = result.get(spec);
      expect(outcome).toMatchObject({ status: "failed", cause: "error", attempts: 1 });
      expect(outcome.error?.message).toBe(
        `the handler for "${spec.kind}" threw a non-Error value: ${thrown[spec.kind as keyof typeof thrown]}`,
      );
      expect(outcome.error?.stack).toContain(`at handler "${spec.kind}" (job ${outcome.id}`);
    }
  });

  it("keeps what a thrown error carries: its causes, an AggregateError's errors, a cyclic object; cuts a huge message", async () => {
    const cyclic: { code: number; self?: unknown } = { code: 7 };
    cyclic.self = cyclic;
    const looping = new Error("loops", { cause: new Error("middle") });
    (looping.cause as Error).cause = looping;
    const thrown: Record<string, unknown> = {
      caused: new Error("fetch failed", {
        cause: new Error("connect ECONNREFUSED", { cause: "the port is closed" }),
      }),
      looping,
      aggregate: new AggregateError(
        [
          new Error("a broke"),
          "b broke",
          ...Array.from({ length: 6 }, (_, i) => new Error(`${i}`)),
        ],
        "8 parts failed",
      ),
      cyclic,
      huge: new Error("x".repeat(1_000_000)),
    };
    const { specs, result } = await runThrowing(thrown);

    const error = (kind: string) => result.get(specs.find((spec) => spec.kind === kind)!).error!;
    expect(error("caused").message).toBe(
      "fetch failed; caused by: connect ECONNREFUSED; caused by: the port is closed",
    );
    expect(error("caused").stack).toMatch(
      /fetch failed\n {4}at [\s\S]*\[cause\]: Error: connect ECONNREFUSED/,
    );
    expect(error("looping").message).toBe("loops; caused by: middle");
    expect(error("aggregate").message).toBe(
      "8 parts failed (errors: a broke; b broke; 0; 1; 2; and 3 more)",
    );
    expect(error("aggregate").stack).toContain("[errors]: [");
    expect(error("cyclic").message).toBe(
      'the handler for "cyclic" threw a non-Error value: <ref *1> { code: 7, self: [Circular *1] }',
    );
    expect(error("huge").message).toBe(`${"x".repeat(10_000)}… (990000 more characters)`);
    expect(error("huge").stack!.length).toBeLessThan(100_100);
  });

  it("fails a job whose thrown value cannot be read (throwing getters and traps, a name or message that is not text) without crashing the host", async () => {
    const unreadable = new Error("hidden");
    for (const field of ["stack", "message"]) {
      Object.defineProperty(unreadable, field, {
        get() {
          throw new Error(`the ${field} getter threw`);
        },
      });
    }
    const odd = Object.assign(new Error("odd"), { name: 42, message: { big: 1n }, stack: 7 });
    const trap = () => {
      throw new Error("a trap threw");
    };
    const hostile = new Proxy({}, { get: trap, ownKeys: trap, getPrototypeOf: trap });
    const thrown: Record<string, unknown> = { unreadable, odd, hostile };
    const { specs, result } = await runThrowing(thrown);

    const errors = specs.map((spec) => {
      const outcome = result.get(spec);
      expect(outcome).toMatchObject({ status: "failed", cause: "error", attempts: 1 });
      expect(outcome.error?.stack).toEqual(expect.any(String));
      return [outcome.error?.name, outcome.error?.message];
    });
    expect(errors).toEqual([
      ["Error", "Error without a message"],
      ["Error", "Error without a message"],
      [
        "NonErrorThrown",
        'the handler for "hostile" threw a non-Error value: a value that cannot be shown (typeof object)',
      ],
    ]);
  });

  it("fails a job whose handler returns a function, a BigInt or a cyclic object, naming it", async () => {
    const cyclic: { self?: unknown } = {};
    cyclic.self = cyclic;
    const engine = createEngine({
      jobs: {
        returnsFunction: () => () => 1,
        returnsBigInt: async () => 10n,
        returnsCyclic: () => cyclic,
      },
      workers: 2,
    });
    const problems = {
      returnsFunction: "the result is a function",
      returnsBigInt: "the result is a BigInt (10n)",
      returnsCyclic: "result.self is a cyclic reference to the result",
    };
    // Every attempt would return the same: none is retried, whatever `retries` says.
    const specs = Object.keys(problems).map((kind) => job(kind, null, { retries: 3 }));

    const result = await engine.run(specs);

    for (const spec of specs) {
      const outcome = result.get(spec);
      expect(outcome).toMatchObject({ status: "failed", cause: "error", attempts: 1 });
      expect(outcome.error?.retryable).toBe(false);
      expect(outcome.error?.message).toContain(
        `The result of job ${outcome.id} (${spec.kind}) is not JSON: ${problems[spec.kind as keyof typeof problems]}`,
      );
    }
  });
});

describe("engine: cancelling and watching a run", { timeout: 10_000 }, () => {
  it("cancel() aborts running handlers, cancels the rest, and the run resolves", async () => {
    const aborts: unknown[] = [];
    const engine = createEngine({
      jobs: {
        wait: async (_: number, ctx: JobContext) => {
          try {
            return await untilAborted(ctx.signal);
          } finally {
            aborts.push(ctx.signal.reason);
          }
        },
      },
      workers: 2,
    });
    const waits = [1, 2, 3, 4].map((n) => job("wait", n));
    const dependent = job("wait", 5, { after: [waits[0]!] });
    const run = engine.run([...waits, dependent]);
    let running = 0;
    run.on("job", (event) => {
      if (event.state === "running" && ++running === 2) run.cancel("the test cancelled");
    });

    const result = await run;

    expect(aborts).toHaveLength(2);
    for (const reason of aborts) expect(reason).toBeInstanceOf(Error);
    expect(result.ok).toBe(false);
    expect(result.counts).toMatchObject({ completed: 0, cancelled: 5 });
    for (const outcome of result.jobs.values()) {
      expect(outcome).toMatchObject({ status: "cancelled", cause: "cancelled" });
      expect(outcome.error?.message).toBe("the test cancelled");
    }
    expect(waits.filter((w) => result.get(w).attempts === 1)).toHaveLength(2);
  });

  it("cancel() takes an Error as AbortController.abort does: its message is the jobs', not the Error object", async () => {
    const engine = createEngine({
      jobs: { wait: (_: number, ctx: JobContext) => untilAborted(ctx.signal) },
      workers: 1,
    });
    const run = engine.run([job("wait", 1), job("wait", 2)]);
    run.on("job", (event) => event.state === "running" && run.cancel(new Error("user left")));
    const messages = [...(await run).jobs.values()].map((outcome) => outcome.error?.message);
    expect(messages).toEqual(["user left", "user left"]);
    const plain = engine.run([job("wait", 3)]);
    plain.on("job", () => plain.cancel());
    expect([...(await plain).jobs.values()][0]?.error?.message).toBe("the run was cancelled");
    // Any other object as text a person can read, as JSON, not "[object Object]".
    const other = engine.run([job("wait", 4)]);
    other.on("job", () => other.cancel({ by: "the scheduler" }));
    expect([...(await other).jobs.values()][0]?.error?.message).toBe('{"by":"the scheduler"}');
  });

  it("a job listener that throws cancels the run, which rejects with a ListenerError; the next run reuses what was stored", async () => {
    const dir = tempDir("baton-engine-");
    const aborts: unknown[] = [];
    const calls: string[] = [];
    const engine = createEngine({
      jobs: {
        first: (n: number) => {
          calls.push("first");
          return n;
        },
        second: async (_: number, ctx: JobContext) => {
          calls.push("second");
          try {
            return await untilAborted(ctx.signal);
          } finally {
            aborts.push(ctx.signal.reason);
          }
        },
      },
      workers: 2,
      store: dir,
    });
    const first = job("first", 1);
    const graph = [first, job("second", 2, { after: [first] })];
    const run = engine.run(graph);
    const thrown = new Error("the job listener threw");
    run.on("job", (event) => {
      if (event.kind === "second" && event.state === "running") throw thrown;
    });

    const error = await run.then(
      () => undefined,
      (rejected: unknown) => rejected,
    );

    expect(error).toBeInstanceOf(ListenerError);
    expect(error).toMatchObject({ code: "LISTENER_THREW", event: "job", cause: thrown });
    expect((error as Error).message).toMatch(
      /^A "job" listener on the run threw: the job listener threw\. The run was cancelled/,
    );
    expect(aborts).toHaveLength(1);
    expect(calls).toEqual(["first", "second"]);

    const quiet = createEngine({
      jobs: { first: (n: number) => n, second: (n: number) => n },
      workers: 2,
      store: dir,
    });
    const rerun = await quiet.run(graph);
    expect(rerun.ok).toBe(true);
    expect(rerun.get(first).cached).toBe(true);
  });

  it("a store.reading listener that throws ends the run before any job starts", async () => {
    const dir = tempDir("baton-engine-");
    let ran = 0;
    const engine = createEngine({ jobs: { one: () => ++ran }, workers: 1, store: dir });
    expect((await engine.run([job("one", 1)])).ok).toBe(true);
    const run = engine.run([job("one", 1), job("one", 2)]);
    run.on("store.reading", () => {
      throw "not an Error";
    });
    await expect(run).rejects.toMatchObject({
      code: "LISTENER_THREW",
      event: "store.reading",
      message: expect.stringContaining("listener on the run threw: not an Error."),
    });
    expect(ran).toBe(1);
  });

  it("cancel() after the run ended sets no timer and sends nothing", async () => {
    let timers = 0;
    const real = nodeClock();
    const engine = createEngine({
      jobs: { one: (n: number) => n },
      workers: 1,
      cancelGraceMs: 10,
      clock: {
        now: () => real.now(),
        setTimeout: (fn, ms) => {
          timers++;
          return real.setTimeout(fn, ms);
        },
        clearTimeout: (handle) => real.clearTimeout(handle),
      },
    });
    const run = engine.run([job("one", 1)]);
    expect((await run).ok).toBe(true);
    const before = timers;
    run.cancel("too late");
    expect(timers).toBe(before);
  });

  it("leaves the embedding process's event loop free: progress comes during the run, a timer's cancel() takes", async () => {
    const engine = createEngine({
      jobs: { step: (n: number) => n },
      workers: 2,
      progressIntervalMs: 20,
    });
    const run = engine.run(Array.from({ length: 20_000 }, (_, i) => job("step", i)));
    const completedAtProgress: number[] = [];
    run.on("progress", (p) => completedAtProgress.push(p.counts.completed));
    setTimeout(() => run.cancel("enough"), 150);
    const result = await run;
    expect(result.counts.cancelled).toBeGreaterThan(0);
    expect(completedAtProgress.filter((completed) => completed < 20_000).length).toBeGreaterThan(1);
  });

  it("fails a handler whose ctx.progress is bad at once, naming the field, and keeps its worker", async () => {
    // What a JavaScript handler may pass: a fraction, a string or nothing is no object of
    // done, total and message, and a field of the frame's own (job) is not the handler's.
    const bad: Record<string, unknown> = {
      nan: { done: Number.NaN },
      negative: { total: -1 },
      text: { message: { not: "a string" } },
      extra: { done: 1, percent: 50 },
      fraction: 0.5,
      percentText: "50%",
      nothing: undefined,
      list: [1, 10],
      frameField: { done: 1, job: "another job's id" },
    };
    const engine = createEngine({
      jobs: {
        report: (name: string, ctx: JobContext) => {
          ctx.progress(bad[name] as Parameters<JobContext["progress"]>[0]);
          return name;
        },
      },
      workers: 1,
    });
    const specs = Object.keys(bad).map((name) => job("report", name, { retries: 1 }));
    const result = await engine.run(specs);
    for (const spec of specs) {
      const outcome = result.get(spec);
      // Another attempt would report the same: the first is the last.
      expect(outcome).toMatchObject({ status: "failed", attempts: 1 });
      expect(outcome.error?.retryable).toBe(false);
      expect(outcome.error?.name).toBe("ConfigError");
      expect(outcome.error?.message).toMatch(/^ctx\.progress cannot send /);
    }
    const message = (name: string) =>
      result.get(specs[Object.keys(bad).indexOf(name)]!).error?.message;
    expect(message("nan")).toContain('field "done" must be a finite non-negative number');
    expect(message("extra")).toBe(
      'ctx.progress cannot send that: unknown field "percent"; it takes done, total and message',
    );
    expect(message("fraction")).toBe(
      "ctx.progress cannot send 0.5: it takes an object, { done, total, message } (each optional), such as ctx.progress({ done: 3, total: 10 })",
    );
    expect(message("percentText")).toMatch(/^ctx\.progress cannot send "50%": it takes an object/);
    expect(message("nothing")).toMatch(/^ctx\.progress cannot send undefined: it takes an object/);
    expect(message("list")).toMatch(/^ctx\.progress cannot send \[1,10\]: it takes an object/);
    expect(message("frameField")).toBe(
      'ctx.progress cannot send that: unknown field "job"; it takes done, total and message',
    );
    // Failed attempts, not lost workers: the one worker ran all four.
    expect([...result.jobs.values()].every((o) => o.cause === "error")).toBe(true);
  });

  it("cuts a ctx.progress message at 1,000 characters, so a long one costs neither the frame limit nor the worker", async () => {
    const engine = createEngine({
      jobs: {
        chatty: (_: null, ctx: JobContext) => {
          ctx.progress({ done: 1, message: "p".repeat(100_000) });
          return "done";
        },
      },
      workers: 1,
      maxFrameBytes: 20_000,
    });
    const chatty = job("chatty", null, { retries: 0 });
    const run = engine.run([chatty]);
    const messages: (string | undefined)[] = [];
    run.on("job.progress", (e) => messages.push(e.message));
    const result = await run;
    expect(result.get(chatty)).toMatchObject({ status: "completed", value: "done", attempts: 1 });
    expect(messages).toEqual([`${"p".repeat(1_000)}…`]);
  });

  it("cancel() before the workers start starts none: every job not stored ends cancelled", async () => {
    const dir = tempDir("baton-engine-");
    const inner = inProcessPool({ count: 1, resources: { cpus: 1 } });
    let starts = 0;
    const pool: WorkerPool = {
      ...inner,
      start(context) {
        starts++;
        return inner.start(context);
      },
    };
    const engine = createEngine({ jobs: { one: (n: number) => n }, workers: pool, store: dir });

    expect((await engine.run([job("one", 1)])).ok).toBe(true);
    expect(starts).toBe(1);

    const cancelledAtOnce = engine.run([job("one", 2)]);
    cancelledAtOnce.cancel("the caller went away");
    const cancelledReading = engine.run([job("one", 1), job("one", 3)]);
    cancelledReading.on("store.reading", () => cancelledReading.cancel("not needed after all"));

    expect((await cancelledAtOnce).counts).toMatchObject({ cancelled: 1, completed: 0 });
    expect((await cancelledReading).counts).toMatchObject({
      cancelled: 1,
      completed: 1,
      cached: 1,
    });
    expect(starts).toBe(1);
  });

  it("a handler still stuck after its run ended keeps nothing of the run alive: neither its coordinator nor its job board", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    // Handlers that wait for something that never comes within the run (a socket, a queue):
    // the engine abandons them after cancelGraceMs.
    const stuck: (() => void)[] = [];
    const jobs = {
      big: (n: number) => `${n}`.repeat(100_000),
      stuck: () => new Promise<void>((resolve) => stuck.push(resolve)),
    };
    const refs: WeakRef<object>[] = [];
    // The run and its listener are let go of when this returns: only the stuck handler holds on.
    const runOnce = async () => {
      const engine = createEngine({
        jobs,
        workers: 2,
        cancelGraceMs: 10,
        onCoordinator: (coordinator) => {
          refs.push(new WeakRef(coordinator), new WeakRef(coordinator.getSnapshot().context.board));
        },
      });
      const run = engine.run([job("big", 1), job("stuck", 2)]);
      run.on("job", (event) => {
        if (event.kind === "stuck" && event.state === "running") run.cancel("stop");
      });
      expect((await run).counts).toMatchObject({ cancelled: 1 });
    };
    await runOnce();
    expect(stuck).toHaveLength(1);

    // deref() keeps its target alive until the current job ends: collect in a later one.
    for (let i = 0; i < 20; i++) {
      await sleep(10);
      gc();
      if (refs.every((ref) => ref.deref() === undefined)) break;
    }
    const kept = refs.map((ref) => ref.deref()?.constructor.name);
    for (const resolve of stuck) resolve();
    expect(kept).toEqual([undefined, undefined]);
  });

  it("cancel() ends the run within cancelGraceMs even when a handler ignores its AbortSignal", async () => {
    const engine = createEngine({
      jobs: { forever: () => new Promise(() => {}), quick: (n: number) => n },
      workers: 1,
      cancelGraceMs: 200,
    });
    const forever = job("forever", 1);
    const run = engine.run([forever, job("quick", 3)]);
    setTimeout(() => run.cancel("stop"), 50);
    const started = Date.now();

    const result = await run;

    expect(Date.now() - started).toBeLessThan(2_000);
    expect(result.get(forever)).toMatchObject({ status: "cancelled" });
    expect(result.get(forever).error?.message).toBe(
      `stop; job ${result.get(forever).id} (forever) did not stop within 200 ms of the cancel`,
    );
  });

  it("a cancel's grace that runs out on several jobs says how many did not stop and names the first five", async () => {
    const engine = createEngine({
      jobs: { forever: () => new Promise(() => {}) },
      workers: 7,
      cancelGraceMs: 200,
    });
    const graph = [1, 2, 3, 4, 5, 6, 7].map((n) => job("forever", n));
    const run = engine.run(graph);
    let running = 0;
    run.on("job", (event) => {
      if (event.state === "running" && ++running === graph.length) run.cancel("stop");
    });

    const result = await run;

    const named =
      /^stop; 7 jobs did not stop \(((?:[0-9a-f]{16} \(forever\)(?:, )?){5}) and 2 more\) within 200 ms of the cancel$/;
    const message = result.get(graph[0]!).error?.message ?? "";
    expect(message).toMatch(named);
    const ids = [...(message.match(named)?.[1] ?? "").matchAll(/[0-9a-f]{16}/g)].map(([id]) => id);
    expect(new Set(ids).size).toBe(5);
    expect(graph.map((spec) => result.get(spec).id)).toEqual(expect.arrayContaining(ids));
    for (const spec of graph) expect(result.get(spec).error?.message).toBe(message);
  });

  it("failFast: the first job that fails for good skips its dependents and cancels the rest, within cancelGraceMs of a handler that ignores its signal", async () => {
    const engine = createEngine({
      jobs: {
        broken: () => {
          throw new Error("no input file");
        },
        forever: () => new Promise(() => {}),
        wait: (_: number, ctx: JobContext) => untilAborted(ctx.signal),
        quick: (n: number) => n,
      },
      workers: 3,
      failFast: true,
      cancelGraceMs: 200,
    });
    const forever = job("forever", 1);
    const wait = job("wait", 2);
    const broken = job("broken", 3, { retries: 0 });
    const after = job("quick", 4, { after: [broken] });
    const unstarted = [5, 6, 7].map((n) => job("quick", n, { after: [wait] }));
    const started = Date.now();

    const result = await engine.run([forever, wait, broken, after, ...unstarted]);

    expect(Date.now() - started).toBeLessThan(2_000);
    const reason =
      /^the run stopped at its first failure \(failFast, --fail-fast\): job [0-9a-f]{16} \(broken\) failed/;
    expect(result.ok).toBe(false);
    expect(result.get(broken)).toMatchObject({ status: "failed", cause: "error" });
    expect(result.get(after)).toMatchObject({ status: "skipped" });
    expect(result.get(wait)).toMatchObject({ status: "cancelled" });
    for (const j of unstarted) {
      expect(result.get(j)).toMatchObject({ status: "cancelled", attempts: 0 });
      expect(result.get(j).error?.message).toMatch(reason);
    }
    // The handler that ignored its signal was given up on after the grace.
    expect(result.get(forever)).toMatchObject({ status: "cancelled" });
    expect(result.get(forever).error?.message).toMatch(
      new RegExp(
        `; job ${result.get(forever).id} \\(forever\\) did not stop within 200 ms of the cancel$`,
      ),
    );
  });

  it("fails a job whose result is over the frame limit as ResultTooLarge, without retrying it, keeping its worker", async () => {
    const engine = createEngine({
      jobs: { big: (n: number) => "x".repeat(n) },
      workers: 1,
      maxFrameBytes: 2_000,
    });
    const big = job("big", 5_000, { retries: 1 });
    const small = job("big", 10);
    const result = await engine.run([big, small]);
    expect(result.get(small)).toMatchObject({ status: "completed", value: "x".repeat(10) });
    // The same input makes the same result, over the same limit: retries would only repeat it.
    expect(result.get(big)).toMatchObject({ status: "failed", cause: "error", attempts: 1 });
    expect(result.get(big).error).toMatchObject({ name: "ResultTooLarge", retryable: false });
    expect(result.get(big).error?.message).toMatch(
      /^the completed result of job [0-9a-f]{16} is a frame of 50\d\d bytes, over the coordinator's limit of 2000 bytes \(maxFrameBytes\)/,
    );
    expect(result.get(big).lostWorkers ?? []).toEqual([]);
  });

  it("refuses a listener of an event a run never emits, naming the ones it does; Node's helpers still work", async () => {
    const engine = createEngine({ jobs: { one: (n: number) => n }, workers: 1 });
    const run = engine.run([job("one", 1)]);
    // @ts-expect-error: a typo of "progress" does not compile either
    expect(() => run.on("progres", () => {})).toThrow(
      'a run emits no "progres" event; it emits "listening", "job", "progress", "job.progress", "store.reading", "store.full"; did you mean "progress"?',
    );
    // @ts-expect-error
    expect(() => run.once("done", () => {})).toThrow(ConfigError);
    // @ts-expect-error
    expect(() => run.prependListener("finished", () => {})).toThrow(ConfigError);
    // A listener that is no function, as JavaScript may pass, is refused as baton's own error,
    // not Node's TypeError.
    // @ts-expect-error: the listener must be a function
    expect(() => run.on("job", "log")).toThrow(
      'a run\'s "job" listener must be a function, such as (event) => console.log(event), not "log"',
    );
    // @ts-expect-error
    expect(() => run.once("progress", undefined)).toThrow(ConfigError);
    const [event] = (await once(run, "job")) as [JobEvent];
    expect(event.state).toBe("running");
    expect((await run).ok).toBe(true);
  });

  it("counts the jobs in the failed state by how they ended with each progress, as the result does", async () => {
    const engine = createEngine({
      jobs: {
        broken: () => {
          throw new NonRetryableError("never works");
        },
        after: () => "unreachable",
        wait: (_: number, ctx: JobContext) => untilAborted(ctx.signal),
      },
      workers: 2,
      progressIntervalMs: 10,
    });
    const broken = job("broken", 1);
    const skipped = job("after", 2, { after: [broken] });
    const run = engine.run([job("after", 3, { after: [skipped] }), job("wait", 4)]);
    const progress: RunProgress[] = [];
    // No `job` listener, as `baton run`'s bar has none: the counts come from the run's tracker.
    run.on("progress", (p) => {
      progress.push(p);
      if (p.counts.failed === 3 && p.counts.running === 1) run.cancel("the test cancelled");
    });

    const result = await run;

    expect(result.counts).toMatchObject({ failed: 1, skipped: 2, cancelled: 1 });
    expect(progress.at(-1)).toMatchObject({
      counts: { failed: 4 },
      failed: 1,
      skipped: 2,
      cancelled: 1,
    });
    // Before the cancel, the failure and its skips only.
    expect(progress.find((p) => p.counts.failed === 3)).toMatchObject({
      failed: 1,
      skipped: 2,
      cancelled: 0,
    });
  });

  it("emits progress, job state changes and handler progress", async () => {
    const engine = createEngine({
      jobs: {
        step: async (n: number, ctx: JobContext) => {
          ctx.progress({ done: 0, total: 2, message: `step ${n}` });
          await sleep(30);
          ctx.progress({ done: 2, total: 2 });
          return n;
        },
      },
      workers: 2,
      progressIntervalMs: 10,
    });
    const steps = [1, 2, 3, 4].map((n) => job("step", n));
    const last = job("step", 5, { after: steps });
    const run = engine.run([last]);
    const progress: RunProgress[] = [];
    const jobEvents: JobEvent[] = [];
    const jobProgress: JobProgressEvent[] = [];
    run.on("progress", (p) => progress.push(p));
    run.on("job", (e) => jobEvents.push(e));
    run.on("job.progress", (e) => jobProgress.push(e));

    const result = await run;

    expect(progress.length).toBeGreaterThan(2);
    expect(progress.at(-1)).toMatchObject({
      total: 5,
      counts: { blocked: 0, ready: 0, running: 0, storing: 0, completed: 5, failed: 0 },
    });
    const completedCounts = progress.map((p) => p.counts.completed);
    expect(completedCounts).toEqual([...completedCounts].sort((x, y) => x - y));
    // The two in-process workers, each holding or asking for a job; never more.
    expect(Math.max(...progress.map((p) => p.workers))).toBe(2);

    for (const outcome of result.jobs.values()) {
      const states = jobEvents.filter((e) => e.id === outcome.id).map((e) => e.state);
      expect(states.indexOf("running")).toBeGreaterThanOrEqual(0);
      expect(states.at(-1)).toBe("completed");
      expect(jobEvents.find((e) => e.id === outcome.id)?.kind).toBe("step");
    }

    for (const spec of [...steps, last]) {
      const { id } = result.get(spec);
      const updates = jobProgress.filter((e) => e.id === id);
      expect(updates).toEqual([
        {
          id,
          kind: "step",
          worker: expect.stringMatching(/^inproc-\d+$/),
          done: 0,
          total: 2,
          message: `step ${spec.input}`,
        },
        { id, kind: "step", worker: updates[0]!.worker, done: 2, total: 2 },
      ]);
    }
  });
});

describe("engine: what a job event says of the attempt", { timeout: 20_000 }, () => {
  /** A kind's events, less what the tests of attempts do not pin (`worker` has its own). */
  const eventsOf = (events: JobEvent[], kind: string) =>
    events.filter((e) => e.kind === kind).map(({ id: _, kind: __, worker: ___, ...rest }) => rest);

  it("names the worker of each attempt: in its events, its outcome, and --json", async () => {
    const engine = createEngine({
      jobs: {
        flaky: (n: number, ctx: JobContext) => {
          if (ctx.job.attempt === 1) throw new Error(`first try of ${n} fails`);
          return n;
        },
      },
      workers: 2,
    });
    const flaky = job("flaky", 1, { retries: 1 });
    const run = engine.run([flaky, job("flaky", 2, { retries: 0 })]);
    const events: JobEvent[] = [];
    run.on("job", (event) => events.push(event));
    const result = await run;

    const names = new Set(["inproc-1", "inproc-2"]);
    const retried = events.filter((e) => e.id === result.get(flaky).id);
    expect(retried.map((e) => e.state)).toEqual(["running", "ready", "running", "completed"]);
    // The attempt an event is about names its worker; the one that ended, the failed attempt's.
    for (const e of retried) expect(names).toContain(e.worker);
    expect(retried[1]!.worker).toBe(retried[0]!.worker);
    expect(retried[3]!.worker).toBe(retried[2]!.worker);
    const outcome = result.get(flaky);
    expect(outcome.worker).toBe(retried[2]!.worker);
    const failed = result.get(job("flaky", 2, { retries: 0 }));
    expect(failed.status).toBe("failed");
    expect(names).toContain(failed.worker);
    expect(JSON.parse(JSON.stringify(result)).jobs).toContainEqual(
      expect.objectContaining({ id: outcome.id, worker: outcome.worker }),
    );
  });

  it("logs a later attempt's error apart from the worker an earlier attempt lost, with no job listener", async () => {
    // Without a `job` listener the run looks a job up only for what it logs: a first attempt
    // has lost no worker, a later one must know how many its job had lost when it started.
    const lines: { msg: string; attempt?: number; err?: { message: string } }[] = [];
    const logger = pino(
      { level: "info" },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    );
    const inner = memoryNet();
    const links: Awaited<ReturnType<Net["connect"]>>[] = [];
    const net: Net = {
      listen: (address, options) => inner.listen(address, options),
      async connect(address, options) {
        const link = await inner.connect(address, options);
        links.push(link);
        return link;
      },
    };
    const engine = createEngine({
      jobs: {
        shaky: (n: number, ctx: JobContext) => {
          // The first attempt's worker drops its connection: a worker lost under the job.
          if (ctx.job.attempt === 1) links.at(-1)!.close(1011, "dropped");
          if (ctx.job.attempt === 2) throw new Error("the second attempt fails");
          return n;
        },
      },
      workers: 1,
      net,
      logger,
    });
    const shaky = job("shaky", 7, { backoff: { initialMs: 1 } });

    const result = await engine.run([shaky]);

    expect(result.get(shaky)).toMatchObject({ status: "completed", attempts: 3, value: 7 });
    const ended = lines.filter(
      (line) => line.msg === "attempt ended without a result; the job will run again",
    );
    expect(ended).toEqual([
      expect.objectContaining({ attempt: 1, lostWorkers: ["inproc-1"] }),
      expect.objectContaining({
        attempt: 2,
        lostWorkers: ["inproc-1"],
        err: expect.objectContaining({ message: "the second attempt fails" }),
      }),
    ]);
    expect(ended[0]).not.toHaveProperty("err");
  });

  it("runs with a caller's logger that has the methods baton calls and no more (not pino's bindings)", async () => {
    const messages: string[] = [];
    const write = (_: object, message?: string) => void messages.push(message ?? "");
    const logger = { debug: write, info: write, warn: write, error: write, child: () => logger };
    const engine = createEngine({
      jobs: { double: (n: number) => n * 2 },
      workers: 1,
      logger: logger as unknown as pino.Logger,
    });
    const result = await engine.run([job("double", 21)]);
    expect(result.get(job("double", 21)).value).toBe(42);
    expect(messages).toContain("welcomed");
  });

  it("names the in-process worker in the lines it writes to the caller's logger, its handlers' ctx.log among them", async () => {
    const lines: { msg: string; n?: number; worker?: string }[] = [];
    const twice: string[] = [];
    const logger = pino(
      { level: "debug" },
      {
        write: (line: string) => {
          // JSON.parse keeps the last of a key given twice; some log pipelines refuse the line.
          if (line.split('"run":').length > 2) twice.push(line);
          lines.push(JSON.parse(line));
        },
      },
    );
    const engine = createEngine({
      jobs: {
        hello: (n: number, ctx: JobContext) => {
          ctx.log.info({ n }, "hello from the handler");
          return n;
        },
      },
      workers: 2,
      logger,
    });
    const result = await engine.run([job("hello", 1), job("hello", 2)]);
    const said = lines.filter((line) => line.msg === "hello from the handler");
    expect(said.map((line) => [line.n, line.worker]).sort()).toEqual(
      [1, 2].map((n) => [n, result.get(job("hello", n)).worker]),
    );
    const welcomed = lines.filter((line) => line.msg === "welcomed");
    expect(welcomed.map((line) => line.worker).sort()).toEqual(["inproc-1", "inproc-2"]);
    expect(twice).toEqual([]);
  });

  it("names the attempt, the error an attempt ended with, a backoff, and no error for ctx.need", async () => {
    let flaky = 0;
    let later = 0;
    const engine = createEngine({
      jobs: {
        flaky: () => {
          if (++flaky === 1) throw new Error("first try fails");
          return 1;
        },
        later: () => {
          if (++later === 1) throw new Error("wait and see");
          return 2;
        },
        needs: (n: number, ctx: JobContext) => ctx.need(job("flaky", n))[0],
        broken: () => {
          throw new Error("always");
        },
      },
      workers: 1,
    });
    const run = engine.run([
      job("flaky", 1),
      job("later", 1, { backoff: { initialMs: 20 } }),
      job("needs", 2),
      job("broken", 1, { retries: 0 }),
    ]);
    const events: JobEvent[] = [];
    run.on("job", (event) => events.push(event));
    await run;

    expect(eventsOf(events, "flaky").slice(0, 3)).toEqual([
      { state: "running", attempt: 1 },
      {
        state: "ready",
        attempt: 1,
        error: expect.objectContaining({ message: "first try fails" }),
      },
      { state: "running", attempt: 2 },
    ]);
    expect(eventsOf(events, "flaky")).toContainEqual({ state: "completed", attempt: 2 });
    expect(eventsOf(events, "later")).toEqual([
      { state: "running", attempt: 1 },
      { state: "blocked", attempt: 1, error: expect.objectContaining({ message: "wait and see" }) },
      { state: "ready" },
      { state: "running", attempt: 2 },
      { state: "completed", attempt: 2 },
    ]);
    expect(eventsOf(events, "needs")).toEqual([
      { state: "running", attempt: 1 },
      { state: "blocked", attempt: 1 },
      { state: "ready" },
      { state: "running", attempt: 2 },
      { state: "completed", attempt: 2 },
    ]);
    expect(eventsOf(events, "broken")).toEqual([
      { state: "running", attempt: 1 },
      {
        state: "failed",
        cause: "error",
        attempt: 1,
        error: expect.objectContaining({ message: "always" }),
      },
    ]);
  });

  it("names the worker lost under an attempt, and the poison error at the end", async () => {
    const worker = fileURLToPath(new URL("../fixtures/worker.jobs.ts", import.meta.url));
    const dir = tempDir("baton-engine-");
    const engine = createEngine({
      jobs: workerJobs,
      workers: localPool({ jobsModule: worker, count: 1 }),
      maxLost: 2,
      batonDir: dir,
    });
    const run = engine.run([job("throwLater", "the worker dies")]);
    const events: JobEvent[] = [];
    run.on("job", (event) => events.push(event));
    const result = await run;

    expect(
      events.filter((e) => e.kind === "throwLater").map(({ id: _, kind: __, ...rest }) => rest),
    ).toEqual([
      { state: "running", attempt: 1, worker: "local-1" },
      {
        state: "ready",
        attempt: 1,
        lostWorker: "local-1",
        // Its process died: the link broke without a close frame.
        lostWhy: { code: 1006, reason: "" },
        worker: "local-1",
      },
      { state: "running", attempt: 2, worker: "local-1.2" },
      {
        state: "failed",
        cause: "poison",
        attempt: 2,
        error: expect.objectContaining({ name: "PoisonJob" }),
        worker: "local-1.2",
      },
    ]);
    const outcome = result.get(job("throwLater", "the worker dies"));
    expect(outcome.worker).toBe("local-1.2");
    expect(outcome.lostWorkers).toEqual(["local-1", "local-1.2"]);
    // The pool saw each process end (an error thrown in a timer exits 1): the result says so,
    // where the event of the loss, which comes as the link breaks, cannot.
    const threw = { code: 1006, reason: "", exit: { code: 1, signal: null } };
    expect(outcome.lostWhy).toEqual([threw, threw]);
    // Each worker named once, with how its process ended.
    expect(outcome.error?.message).toContain(
      "was running on 2 workers that were lost; it is failed as poison so it cannot take down more workers. How their processes ended: local-1 exited with code 1, local-1.2 exited with code 1.",
    );
    expect(workerLossLines(result.jobs.values())).toEqual([]);
    expect(workerExitLines(result.jobs.values())).toEqual([
      `throwLater ${outcome.id}: 2 of its workers exited with code 1: did the job's handler call process.exit(1), or throw where nothing catches it (a timer, an event handler)?`,
    ]);
  });
});

describe("engine: inspection", { timeout: 15_000 }, () => {
  const jobs = { value: (x: unknown) => x };
  const graph = () => {
    const a = job("value", "a");
    return [job("value", "b", { after: [a] }), job("value", "c", { after: [a] })];
  };

  it("finishes the run when the inspect observer throws, and throws its error again on a later tick", () => {
    // In a process of its own: what the observer throws comes back as an uncaught exception.
    const script = `const { createEngine, job } = await import(${JSON.stringify(
      new URL("../../src/index.ts", import.meta.url).pathname,
    )});
const uncaught = new Set();
process.on("uncaughtException", (error) => uncaught.add(error.message));
let armed = false;
const inspect = (event) => {
  if (armed && event.type === "@xstate.event") throw new Error("the observer threw");
};
const first = job("value", 1);
const run = createEngine({ jobs: { value: (x) => x }, workers: 1, inspect }).run([
  job("value", 2, { after: [first] }),
]);
run.on("job", (change) => {
  if (change.state === "running") armed = true;
});
const result = await run;
await new Promise((resolve) => setTimeout(resolve, 10));
console.log(JSON.stringify({ counts: result.counts, uncaught: [...uncaught] }));`;
    const child = spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      // tsx compiling baton's sources takes seconds on a loaded machine (10 s were too few).
      { encoding: "utf8", timeout: 40_000, killSignal: "SIGKILL" },
    );
    expect(child.signal).toBe(null);
    expect(child.stderr).toBe("");
    expect(JSON.parse(child.stdout)).toEqual({
      counts: { completed: 2, failed: 0, skipped: 0, cancelled: 0, cached: 0 },
      uncaught: ["the observer threw"],
    });
  });

  it("hands the inspect observer the coordinator and one connection actor per worker", async () => {
    const events: InspectionEvent[] = [];
    const engine = createEngine({ jobs, workers: 3, inspect: (event) => events.push(event) });

    expect((await engine.run(graph())).ok).toBe(true);

    const machines = events
      .filter((event) => event.type === "@xstate.actor")
      .map((event) => (event.actorRef as { logic?: { id?: string } }).logic?.id);
    expect(machines.filter((id) => id === "coordinator")).toHaveLength(1);
    expect(machines.filter((id) => id === "connection")).toHaveLength(3);
    const eventTypes = new Set(
      events.flatMap((event) => (event.type === "@xstate.event" ? [event.event.type] : [])),
    );
    for (const type of ["LEASE", "RESULT", "HELLO", "GRANT"])
      expect(eventTypes.has(type)).toBe(true);
  });

  it("streams both machines to a @statelyai/inspect WebSocket inspector, never the secret", async () => {
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(server, "listening");
    const messages: string[] = [];
    server.on("connection", (socket) => {
      socket.on("message", (data) => messages.push(data.toString()));
    });
    const connected = once(server, "connection");
    const { port } = server.address() as AddressInfo;
    const inspector = createWebSocketInspector({ url: `ws://127.0.0.1:${port}` });
    try {
      await connected;
      const engine = createEngine({ jobs, workers: 2, inspect: inspector.inspect });

      expect((await engine.run(graph())).ok).toBe(true);

      const actorNames = () =>
        new Set(
          messages
            .map((text) => JSON.parse(text) as { type: string; name?: string })
            .filter((message) => message.type === "@xstate.actor")
            .map((message) => message.name),
        );
      await until(
        () =>
          actorNames().has("coordinator") &&
          [...actorNames()].some((name) => name?.startsWith("connection:")),
        "the inspector to report both machines",
      );
      // A field named secret, also inside the JSON-encoded machine definitions (\"secret\":).
      expect(messages.filter((text) => /\\*"secret\\*"\s*:/.test(text))).toEqual([]);
    } finally {
      inspector.stop();
      for (const client of server.clients) client.terminate();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
