import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  createEngine,
  type JobEvent,
  job,
  localPool,
  type PoolError,
  type Run,
  type WorkerPool,
} from "../../src/index.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { moduleSource } from "../../src/runtime/moduleSource.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import { ResultStore } from "../../src/runtime/resultStore.ts";
import slowStartJobs from "../fixtures/slowStart.jobs.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const fixture = resolve("test/fixtures/counted.graph.ts");
/** Worker local-1 loads it at once, the others in 10 s; its `cleanUp` takes 300 ms to stop. */
const slowStart = resolve("test/fixtures/slowStart.jobs.ts");
const procs = nodeProcs();

/** Gone from the process table, or a zombie: either way it runs nothing. */
function dead(pid: number): boolean {
  const state = procs.inspect(pid)?.state;
  return state === undefined || state === "zombie" || state === "dead";
}

/** Worker processes this test process started (children whose argv says `worker`). */
function workerChildren(): number[] {
  return procs
    .list()
    .filter((p) => p.ppid === process.pid && p.state !== "zombie" && p.argv.includes("worker"))
    .map((p) => p.pid);
}

/**
 * Cancels `run` (for `reason`) as its first job starts running; then `pids` are the worker
 * processes it had and `at` when it was cancelled.
 */
function cancelAtFirstJob(run: Run, reason: string): { pids: number[]; at: number } {
  const cancelled = { pids: [] as number[], at: 0 };
  run.on("job", (event) => {
    if (event.state !== "running") return;
    cancelled.pids = workerChildren();
    cancelled.at = Date.now();
    run.cancel(reason);
  });
  return cancelled;
}

async function graphWith(leaves: number, delayMs: number, calls: string) {
  process.env.BATON_TEST_JOBS = String(leaves);
  process.env.BATON_TEST_DELAY_MS = String(delayMs);
  process.env.BATON_TEST_CALLS = calls;
  const module = await import(`${fixture}?leaves=${leaves}`);
  return {
    graph: module.default,
    handlers: module.jobs,
    jobs: loadJobs(module.jobs, moduleSource(fixture)),
  };
}

afterEach(() => {
  for (const pid of workerChildren()) procs.signal(pid, "SIGKILL");
});

describe("runs over real sockets with worker processes", () => {
  it("runs a graph on 4 worker processes, logging at the level asked, and leaves none behind", async () => {
    const dir = tempDir();
    const calls = join(dir, "calls");
    mkdirSync(calls);
    const { graph, handlers } = await graphWith(40, 0, calls);
    const store = await ResultStore.open(join(dir, "store"), nodeFiles());
    const joined: string[] = [];
    const logger = pino(
      { level: "info" },
      new Writable({
        write(chunk, _, done) {
          for (const text of String(chunk).split("\n")) {
            const line = text ? (JSON.parse(text) as { msg: string; worker?: string }) : undefined;
            if (line?.msg === "worker joined" && line.worker) joined.push(line.worker);
          }
          done();
        },
      }),
    );
    // As the README embeds it: the handlers themselves; the code hash comes from the pool's file.
    const engine = createEngine({
      jobs: handlers,
      workers: localPool({ jobsModule: fixture, count: 4, logLevel: "info" }),
      store,
      logger,
    });
    const run = engine.run(graph);
    const seen = new Set<number>();
    const poll = setInterval(() => {
      for (const pid of workerChildren()) seen.add(pid);
    }, 50);
    const result = await run;
    clearInterval(poll);
    expect(result.ok).toBe(true);
    expect(result.counts.completed).toBe(45);
    expect(seen.size).toBe(4);
    expect(store.writes).toBe(45);
    expect(readdirSync(calls)).toHaveLength(45);
    expect(workerChildren()).toEqual([]);
    // At info, the log of each worker that joined says whom it connected to (at the default
    // warn, nothing); one still starting when the run ended was stopped before it connected.
    // The run's worker logs are in a folder of its own, named after its start and id.
    const folders = readdirSync(join(dir, "store", "logs"));
    expect(folders).toEqual([expect.stringMatching(new RegExp(`^\\d{4}-.*Z-${result.run}$`))]);
    expect(joined.length).toBeGreaterThan(0);
    for (const worker of joined) {
      const n = worker.slice("local-".length);
      const log = readFileSync(join(dir, "store", "logs", folders[0]!, `worker-${n}.log`), "utf8");
      expect(log).toContain('"msg":"worker connecting"');
    }
  });

  it.each([false, true])(
    "completes a 500-job run while worker processes are killed with SIGKILL (handlers on a thread of their own: %s)",
    async (handlerThread) => {
      const dir = tempDir();
      const calls = join(dir, "calls");
      mkdirSync(calls);
      const { graph, jobs } = await graphWith(500, 4, calls);
      const store = await ResultStore.open(join(dir, "store"), nodeFiles());
      const engine = createEngine({
        jobs,
        workers: localPool({ jobsModule: fixture, count: 4, maxRestarts: 50, handlerThread }),
        store,
      });
      const run = engine.run(graph);
      let kills = 0;
      let finished = false;
      const killer = (async () => {
        while (!finished && kills < 10) {
          await new Promise((r) => setTimeout(r, 150 + Math.random() * 250));
          const pids = workerChildren();
          const victim = pids[Math.floor(Math.random() * pids.length)];
          if (!finished && victim !== undefined && procs.signal(victim, "SIGKILL") === "ok")
            kills++;
        }
      })();
      const result = await run;
      finished = true;
      await killer;
      expect(kills).toBeGreaterThan(3);
      expect(result.ok).toBe(true);
      expect(result.counts.completed).toBe(551);
      // Each result is stored exactly once, even for jobs whose worker died around them.
      expect(store.writes).toBe(551);
      const stored = readdirSync(join(dir, "store", "results")).flatMap((shard) =>
        readdirSync(join(dir, "store", "results", shard)),
      );
      expect(new Set(stored).size).toBe(551);
      expect(workerChildren()).toEqual([]);
    },
    120_000,
  );

  it("does not count a worker stopped on purpose (SIGTERM, as a preemption) towards poison", async () => {
    const dir = tempDir();
    const calls = join(dir, "calls");
    mkdirSync(calls);
    const { graph, handlers } = await graphWith(1, 1_500, calls);
    const engine = createEngine({
      jobs: handlers,
      workers: localPool({ jobsModule: fixture, count: 1 }),
      // One worker lost otherwise would fail the job as poison.
      maxLost: 1,
      batonDir: dir,
    });
    const run = engine.run(graph);
    const events: JobEvent[] = [];
    run.on("job", (event) => {
      if (event.kind !== "leaf") return;
      events.push(event);
      // The worker holds the job: stop it, three times, as a scheduler preempting it would.
      if (event.state === "running" && event.attempt! <= 3) {
        for (const pid of workerChildren()) procs.signal(pid, "SIGTERM");
      }
    });

    const result = await run;

    expect(result.ok).toBe(true);
    const leaf = [...result.jobs.values()].find((outcome) => outcome.kind === "leaf")!;
    expect(leaf).toMatchObject({ status: "completed", attempts: 4 });
    expect(leaf.lostWorkers).toEqual(["local-1", "local-1.2", "local-1.3"]);
    expect(events.filter((e) => e.lostWorker !== undefined)).toHaveLength(3);
  }, 60_000);

  it("starts workers whose resources give a field as undefined, as if left out", async () => {
    const dir = tempDir();
    const calls = join(dir, "calls");
    mkdirSync(calls);
    const { graph, jobs } = await graphWith(2, 0, calls);
    const engine = createEngine({
      jobs,
      // Given as undefined, gpus and memory were passed on as `--gpus undefined`, which
      // `baton worker` refuses: the run failed with WORKER_CANNOT_START.
      workers: localPool({
        jobsModule: fixture,
        count: 1,
        resources: { cpus: 1, gpus: undefined, memory: undefined },
      }),
      batonDir: dir,
    });
    const result = await engine.run(graph);
    expect(result.ok).toBe(true);
    expect(workerChildren()).toEqual([]);
  }, 60_000);

  it("fails the run at the first worker's exit 2, naming its log, when its workers cannot start", async () => {
    const dir = tempDir();
    const { graph, jobs } = await graphWith(5, 0, join(dir, "unused"));
    const engine = createEngine({
      jobs,
      workers: localPool({ jobsModule: join(dir, "missing.jobs.ts"), count: 1 }),
      store: join(dir, "store"),
    });
    const error = (await engine.run(graph).catch((e: unknown) => e)) as PoolError;
    // Not replaced: a new worker would not load the module either (it used to be, 5 times).
    expect(error).toMatchObject({ code: "WORKER_CANNOT_START", worker: "local-1" });
    expect(error.message).toMatch(
      /^worker local-1 \(pid \d+\) exited with code 2, which a new worker would too \(bad usage, a job module that does not load, or a setup the coordinator refused: .*\), so the local pool does not replace it\. Its log .*worker-1\.log says why\. .*missing\.jobs\.ts does not exist/s,
    );
    expect(workerChildren()).toEqual([]);
  }, 60_000);

  it("fails the run at once when the coordinator refuses its workers' job module (4006, exit 4), instead of replacing them for 20 s", async () => {
    const dir = tempDir();
    const { graph, handlers } = await graphWith(5, 0, join(dir, "unused"));
    // The engine hashed another file than the one its workers load: as if it was edited since.
    const engine = createEngine({
      jobs: loadJobs(handlers, moduleSource(resolve("test/fixtures/failing.graph.ts"))),
      workers: localPool({ jobsModule: fixture, count: 1 }),
    });
    const started = Date.now();
    const error = (await engine.run(graph).catch((e: unknown) => e)) as PoolError;
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(error).toMatchObject({ code: "WORKER_CANNOT_START", worker: "local-1" });
    expect(error.message).toMatch(
      /^worker local-1 \(pid \d+\) exited with code 4, which a new worker would too .*closed with code 4006/s,
    );
    expect(workerChildren()).toEqual([]);
  }, 60_000);

  it("names createEngine's jobs among what a refused job module may be, when they define kinds the pool's jobsModule does not", async () => {
    // jobs and jobsModule disagree: the coordinator hashes jobs' kinds, the workers the file's.
    const engine = createEngine({
      jobs: { other: () => 1 },
      workers: localPool({ jobsModule: fixture, count: 1 }),
    });
    const error = (await engine.run([job("other", null)]).catch((e: unknown) => e)) as PoolError;
    expect(error).toMatchObject({ code: "WORKER_CANNOT_START", worker: "local-1" });
    expect(error.message).toContain(
      "a job module other than the one it hashed, changed on disk since, or defining other kinds or versions than createEngine's jobs?",
    );
    expect(workerChildren()).toEqual([]);
  }, 60_000);

  it("a cancel right after the pool started its workers returns within 2 s, every worker gone, instead of waiting 5 s for those still starting", async () => {
    const dir = tempDir();
    const inner = localPool({ jobsModule: slowStart, count: 2 });
    let pids: number[] = [];
    let cancelledAt = 0;
    // Cancelled as soon as the workers are started: none has loaded its job module yet.
    const pool: WorkerPool = {
      ...inner,
      start(context) {
        const running = inner.start(context);
        pids = workerChildren();
        cancelledAt = Date.now();
        run.cancel("the caller went away");
        return running;
      },
    };
    const engine = createEngine({ jobs: slowStartJobs, workers: pool, batonDir: dir });
    const run = engine.run([job("cleanUp", null)]);

    const result = await run;

    expect(Date.now() - cancelledAt).toBeLessThan(2_000);
    expect(result.counts).toMatchObject({ cancelled: 1, completed: 0 });
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(dead(pid)).toBe(true);
  }, 30_000);

  it("a cancel whose grace runs out on a handler that ignores its AbortSignal settles about cancelGraceMs after it, its worker stopped, not the pool's 5 s later", async () => {
    const dir = tempDir();
    const { graph, handlers } = await graphWith(1, 60_000, join(dir, "unused"));
    // The leaf sleeps its minute through the cancel; its worker inherits this at its start.
    process.env.BATON_TEST_IGNORE_ABORT = "1";
    const warnings: string[] = [];
    const logger = pino(
      { level: "warn" },
      { write: (line: string) => warnings.push((JSON.parse(line) as { msg: string }).msg) },
    );
    try {
      const engine = createEngine({
        jobs: handlers,
        workers: localPool({ jobsModule: fixture, count: 1 }),
        batonDir: dir,
        logsDir: join(dir, "logs"),
        logger,
        cancelGraceMs: 1_000,
      });
      const run = engine.run(graph);
      const cancelled = cancelAtFirstJob(run, "the caller went away");

      const result = await run;

      // 1 s of grace, and the worker stopped at once; it was 6 s (the pool's own 5 s after).
      expect(Date.now() - cancelled.at).toBeLessThan(4_000);
      // The leaf, its group's total and the graph's.
      expect(result.counts).toMatchObject({ cancelled: 3, completed: 0 });
      expect(cancelled.pids).toHaveLength(1);
      for (const pid of cancelled.pids) expect(dead(pid)).toBe(true);
      // Its log ends saying why it stopped, and so does the run's.
      const leaf = [...result.jobs.values()].find((outcome) => outcome.kind === "leaf")!;
      const why = `local-1 (pid ${cancelled.pids[0]}) killed with SIGKILL: the handler of job ${leaf.id} (leaf) ignored its abort through the cancel's grace (1000 ms), and a SIGTERM would have it wait for that handler again`;
      const lines = readFileSync(join(dir, "logs", "worker-1.log"), "utf8")
        .trimEnd()
        .split("\n");
      expect(lines.at(-1)).toMatch(/^\[baton pool \S+\] /);
      expect(lines.at(-1)).toContain(`] ${why}`);
      expect(warnings).toContain(`worker ${why}`);
    } finally {
      delete process.env.BATON_TEST_IGNORE_ABORT;
    }
  }, 60_000);

  it("a cancel stops the workers still starting at once, and lets the one that joined finish its job's clean-up", async () => {
    const dir = tempDir();
    process.env.BATON_TEST_MARKERS = dir;
    const engine = createEngine({
      jobs: slowStartJobs,
      // A grace for its clean-up, which its worker is left to finish after the run ends (the
      // cancel's grace alone would have its worker stopped at once).
      workers: localPool({ jobsModule: slowStart, count: 2, abortGraceMs: 2_000 }),
      batonDir: dir,
      logsDir: join(dir, "logs"),
      // The run ends before the handler has cleaned up.
      cancelGraceMs: 100,
    });
    const run = engine.run([job("cleanUp", null)]);
    const cancelled = cancelAtFirstJob(run, "the test cancelled");

    const result = await run;

    expect(Date.now() - cancelled.at).toBeLessThan(2_000);
    expect(result.counts).toMatchObject({ cancelled: 1 });
    expect(cancelled.pids).toHaveLength(2);
    for (const pid of cancelled.pids) expect(dead(pid)).toBe(true);
    expect(existsSync(join(dir, "cleaned"))).toBe(true);
    expect(readFileSync(join(dir, "logs", "worker-1.log"), "utf8")).not.toContain("SIGTERM");
  }, 60_000);
});
