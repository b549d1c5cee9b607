/**
 * The Slurm pool on a real Slurm: a one-node cluster (CPUs=2) started for this file by
 * test/fixtures/slurmCluster.ts and stopped by pid at the end. Workers are real `baton
 * worker` processes in real allocations. When Slurm is not installed the file is skipped
 * with a message, except in CI (`CI=true`), where it fails; a cluster that does not start
 * fails with the daemons' logs.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { basename, join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SlurmError } from "../../src/errors.ts";
import { job } from "../../src/index.ts";
import { createEngine } from "../../src/runtime/engine.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { moduleSource } from "../../src/runtime/moduleSource.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { ResultStore } from "../../src/runtime/resultStore.ts";
import { nodeSlurmCommands } from "../../src/runtime/slurmCommands.ts";
import {
  type SlurmPool,
  type SlurmPoolOptions,
  startSlurmPool,
} from "../../src/runtime/slurmPool.ts";
import type { WorkerPool } from "../../src/runtime/workerPool.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import slowStartJobs from "../fixtures/slowStart.jobs.ts";
import {
  missingSlurmPrograms,
  type SlurmCluster,
  startSlurmCluster,
} from "../fixtures/slurmCluster.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const GRAPH = resolve("test/fixtures/slurm.graph.ts");
/** A job module every Slurm worker takes 10 s to load (see the fixture). */
const SLOW_START = resolve("test/fixtures/slowStart.jobs.ts");
/** A graph of $BATON_TEST_JOBS leaves whose handlers may ignore their abort (see the fixture). */
const COUNTED = resolve("test/fixtures/counted.graph.ts");
const missing = missingSlurmPrograms();
const skip = missing.length > 0 && process.env.CI !== "true";
if (skip) {
  console.warn(
    `skipping the Slurm pool tests: Slurm is not installed (missing ${missing.join(", ")}); run scripts/system-deps.sh`,
  );
}

let cluster: SlurmCluster | undefined;
const savedConf = process.env.SLURM_CONF;
/** Every pool a test started, so afterEach can cancel what a failed test left. */
const started: SlurmPool[] = [];
/** Pools and CLI processes a test started outside this process, for the same reason. */
const namedPools: string[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  if (skip) return;
  cluster = await startSlurmCluster();
  process.env.SLURM_CONF = cluster.conf;
}, 60_000);

afterEach(() => {
  if (!cluster) return;
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGKILL");
  }
  for (const name of [...started.splice(0).map((pool) => pool.name), ...namedPools.splice(0)]) {
    execFileSync("scancel", ["-n", name], { env: cluster.env, stdio: "pipe" });
  }
});

afterAll(async () => {
  await cluster?.stop();
  if (savedConf === undefined) delete process.env.SLURM_CONF;
  else process.env.SLURM_CONF = savedConf;
}, 60_000);

/**
 * A Slurm pool whose running instance the test can watch; `watch` is called as it starts,
 * before its first poll.
 */
function watchedPool(
  options: Partial<SlurmPoolOptions>,
  watch: (pool: SlurmPool) => void = () => {},
): WorkerPool {
  const full: SlurmPoolOptions = { jobsModule: GRAPH, pollMs: 200, graceMs: 5000, ...options };
  return {
    offers: [{ cpus: 1 }],
    remote: true,
    start(context) {
      const pool = startSlurmPool(full, context);
      started.push(pool);
      watch(pool);
      return pool;
    },
  };
}

/**
 * The graph module with these sizes (workers read the same variables through sbatch's
 * environment): `markers` is the folder jobs mark as they start, `firstAttemptMs` how long a
 * job's first attempt takes instead of `delayMs`, `tailMs` how long the last wide job takes.
 */
async function graph(
  wide: number,
  chain: number,
  delayMs: number,
  {
    markers = "",
    firstAttemptMs,
    tailMs,
  }: { markers?: string; firstAttemptMs?: number; tailMs?: number } = {},
) {
  process.env.BATON_TEST_WIDE = String(wide);
  process.env.BATON_TEST_CHAIN = String(chain);
  process.env.BATON_TEST_DELAY_MS = String(delayMs);
  process.env.BATON_TEST_FIRST_ATTEMPT_MS =
    firstAttemptMs === undefined ? "" : String(firstAttemptMs);
  process.env.BATON_TEST_TAIL_MS = tailMs === undefined ? "" : String(tailMs);
  process.env.BATON_TEST_MARKERS = markers;
  const module = await import(`${GRAPH}?wide=${wide}&chain=${chain}&delay=${delayMs}`);
  return { roots: module.default, jobs: loadJobs(module.jobs, moduleSource(GRAPH)) };
}

function slurm(command: string, args: string[]): string {
  return execFileSync(command, args, { env: cluster!.env, encoding: "utf8", stdio: "pipe" });
}

/** Allocations of a pool that squeue shows in an active state. */
function activeInQueue(name: string): string[] {
  return slurm("squeue", ["-h", "-r", "-n", name, "-o", "%i"])
    .split("\n")
    .filter((line) => line.trim() !== "");
}

/** The allocation's state as `scontrol show job` says it (`CANCELLED`, `RUNNING`, …). */
function jobState(id: string): string | undefined {
  return /\bJobState=(\S+)/.exec(slurm("scontrol", ["show", "job", "-o", id]))?.[1];
}

/** Whether Slurm ever gave the allocation a node (it ran). */
function everRan(id: string): boolean {
  const out = slurm("scontrol", ["show", "job", "-o", id]);
  return /\bNodeList=\S+/.test(out) && !/\bNodeList=\(null\)/.test(out);
}

async function until(check: () => boolean, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(skip)("the Slurm pool on a real one-node Slurm (CPUs=2)", () => {
  for (const maxWorkers of [2, 3]) {
    for (const array of [true, false]) {
      it(`runs a 28-job graph with max workers ${maxWorkers}, ${array ? "with" : "without"} arrays, scaling to demand and back`, async () => {
        const dir = tempDir();
        // 20 jobs ready at once, more than max workers, then a chain of 8 that keeps demand at 1
        // for several of the pool's polls (every 200 ms).
        const { roots, jobs } = await graph(20, 8, 100);
        const store = await ResultStore.open(join(dir, "store"), nodeFiles());
        const held: number[] = [];
        const demands: number[] = [];
        const submitted: string[][] = [];
        const scaleDowns: string[] = [];
        const workers = watchedPool({ maxWorkers, array }, (pool) => {
          pool.on("poll", ({ demand, allocations }) => {
            demands.push(demand);
            held.push(allocations.length);
          });
          pool.on("submitted", (ids) => submitted.push(ids));
          pool.on("cancelled", ({ ids, scaleDown }) => {
            if (scaleDown) scaleDowns.push(...ids);
          });
        });
        const run = createEngine({ jobs, workers, store }).run(roots);
        const poolWaits = new Set<string>();
        run.on("progress", ({ poolWaitingFor }) => {
          if (poolWaitingFor !== undefined) poolWaits.add(poolWaitingFor);
        });
        const result = await run;
        const pool = started[0]!;

        expect(result.ok).toBe(true);
        expect(result.counts.completed).toBe(28);
        // Up to demand (20 jobs ready > max) and never past max.
        expect(Math.max(...held)).toBe(maxWorkers);
        expect(Math.max(...demands)).toBeGreaterThanOrEqual(maxWorkers);
        const ids = submitted.flat();
        expect(ids.length).toBeGreaterThanOrEqual(maxWorkers);
        if (array) expect(ids.every((id) => /^\d+_\d+$/.test(id))).toBe(true);
        else expect(ids.every((id) => /^\d+$/.test(id))).toBe(true);
        // Two CPUs: with max 3 the third allocation waits, and is cancelled when the chain
        // brings demand down to 1. Scale-down never touched an allocation that ran.
        // The run's progress says so while it waits.
        if (maxWorkers === 3) {
          expect(scaleDowns.length).toBeGreaterThan(0);
          expect([...poolWaits].some((w) => w.startsWith("Slurm: 1 allocation pending"))).toBe(
            true,
          );
        }
        expect(everRan(ids[0]!)).toBe(true);
        for (const id of scaleDowns) expect(everRan(id)).toBe(false);
        // ... and back: nothing of the pool is left in the queue, and its logs are in the store.
        expect(activeInQueue(pool.name)).toEqual([]);
        const logs = readdirSync(runLogsOf(join(dir, "store"))).filter((f) =>
          f.startsWith("slurm-"),
        );
        expect(logs.length).toBeGreaterThanOrEqual(2);
      });
    }
  }

  it("ends a run whose array tasks never started: Slurm lists them under the array's id once cancelled", async () => {
    // Four allocations on two CPUs: two tasks stay pending in the array's own record, and the
    // one scancel that ends them both leaves Slurm naming only the array (`squeue` lists `N`,
    // `scontrol show job N_2` says "not found").
    const dir = tempDir();
    const { roots, jobs } = await graph(4, 0, 300);
    const cancelled: string[] = [];
    const workers = watchedPool({ maxWorkers: 4, stopTimeoutMs: 15_000 }, (pool) => {
      pool.on("cancelled", ({ ids }) => cancelled.push(...ids));
    });
    const result = await createEngine({ jobs, workers, batonDir: dir }).run(roots);
    expect(result.ok).toBe(true);
    expect(cancelled.length).toBeGreaterThanOrEqual(2);
    expect(activeInQueue(started[0]!.name)).toEqual([]);
  });

  it("lists the cluster's partitions, its default marked", async () => {
    expect(await nodeSlurmCommands().partitions()).toEqual(["debug*"]);
  });

  it("cancels exactly the pending array tasks it names, even when their array's other tasks are pending too", async () => {
    const dir = tempDir();
    const script = join(dir, "sleep.sh");
    writeFileSync(script, "#!/bin/sh\nsleep 30\n", { mode: 0o700 });
    const commands = nodeSlurmCommands();
    const name = `baton-probe-${process.pid}`;
    namedPools.push(name);
    const ids = await commands.submit({
      script,
      name,
      count: 4,
      array: true,
      logsDir: dir,
      options: ["--cpus-per-task=1"],
    });
    const states = async () =>
      Object.fromEntries((await commands.queue(name)).map((entry) => [entry.id, entry.state]));
    await until(() => activeInQueue(name).length === 4, "four tasks");
    let seen: Record<string, string> = {};
    const deadline = Date.now() + 30_000;
    while (Object.values(seen).filter((state) => state === "RUNNING").length < 2) {
      if (Date.now() > deadline) throw new Error(`two tasks never ran: ${JSON.stringify(seen)}`);
      seen = await states();
    }
    // Two run on the two CPUs; 2 and 3 wait in the array's record. Cancel only 3, and a
    // running one, as when it starts between the poll and the cancel.
    const running = Object.keys(seen).find((id) => seen[id] === "RUNNING")!;
    await commands.cancel([ids[3]!, running], { pendingOnly: true });
    const after = new Map((await commands.queue(name)).map((entry) => [entry.id, entry]));
    expect(after.get(ids[3]!)?.state).toBe("CANCELLED");
    expect(after.get(ids[2]!)?.state).toBe("PENDING");
    // The running one runs on, not left held (a held allocation never starts again if requeued).
    expect(after.get(running)).toMatchObject({ state: "RUNNING" });
    expect(after.get(running)?.reason).not.toMatch(/Held/);
  });

  it("runs from the CLI with --slurm --max-workers --partition --slurm-opt", async () => {
    const dir = tempDir();
    const store = join(dir, "store");
    const out = execFileSync(
      process.execPath,
      [
        "bin/baton.js",
        "run",
        GRAPH,
        "--slurm",
        "--max-workers",
        "2",
        "--partition",
        "debug",
        "--slurm-opt=--time=10",
        "--store",
        store,
        "--json",
      ],
      {
        env: {
          ...cluster!.env,
          BATON_TEST_WIDE: "6",
          BATON_TEST_CHAIN: "2",
          BATON_TEST_DELAY_MS: "50",
        },
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const result = JSON.parse(out) as { ok: boolean; counts: { completed: number } };
    expect(result).toMatchObject({ ok: true, counts: { completed: 8 } });
    const logs = readdirSync(runLogsOf(store)).filter((f) => /^slurm-\d+_\d+\.log$/.test(f));
    expect(logs.length).toBeGreaterThanOrEqual(1);
    // The batch script is gone with the run; no allocation of any pool is left.
    expect(readdirSync(join(store, "run")).filter((f) => f.endsWith(".sbatch"))).toEqual([]);
    expect(slurm("squeue", ["-h", "-o", "%i"]).trim()).toBe("");
  });

  it("a rerun cancels the allocations of a coordinator killed with SIGKILL, and removes its files", async () => {
    const dir = tempDir();
    const store = join(dir, "store");
    const cli = (wide: number, delayMs: number) => {
      const child = spawn(
        process.execPath,
        ["bin/baton.js", "run", GRAPH, "--slurm", "--max-workers", "3", "--store", store, "--json"],
        {
          env: {
            ...cluster!.env,
            BATON_TEST_WIDE: String(wide),
            BATON_TEST_CHAIN: "0",
            BATON_TEST_DELAY_MS: String(delayMs),
          },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      children.push(child);
      let stdout = "";
      child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
      });
      child.stderr!.resume();
      return {
        child,
        exit: new Promise<{ code: number | null; stdout: string }>((done) =>
          child.on("close", (code) => done({ code, stdout })),
        ),
      };
    };
    const queue = () =>
      slurm("squeue", ["-h", "-r", "-o", "%j %i %T"])
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => line.split(" ") as [string, string, string]);

    // Two CPUs and three allocations: two run, one waits.
    const first = cli(40, 2000);
    let allocations: [string, string, string][] = [];
    await until(() => {
      allocations = queue();
      const states = allocations.map(([, , state]) => state);
      return states.filter((s) => s === "RUNNING").length === 2 && states.includes("PENDING");
    }, "two running allocations and one pending");
    const [oldPool] = allocations[0]!;
    namedPools.push(oldPool);
    const idsIn = (state: string) =>
      allocations.filter(([, , now]) => now === state).map(([, id]) => id);
    const [pending] = idsIn("PENDING") as [string];
    const running = idsIn("RUNNING");
    expect(readdirSync(join(store, "run"))).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`\\.${oldPool}\\.sbatch$`))]),
    );
    // The dead run's allocations stay as it leaves them until the rerun comes, however long
    // a loaded machine takes to start it: the running ones' workers, which cannot reach the
    // dead coordinator, would end them once out of restarts, and the waiting one would then
    // start. Frozen, each ends CANCELLED only if the rerun cancels it. The waiting one is held
    // first: suspended, the running ones could leave it their CPUs before it was held.
    slurm("scontrol", ["hold", pending]);
    slurm("scontrol", ["suspend", running.join(",")]);
    first.child.kill("SIGKILL");
    await first.exit;

    const rerun = cli(2, 50);
    const { code, stdout } = await rerun.exit;
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ ok: true });
    // The dead run's waiting allocation was cancelled before it ever started a worker, and
    // its running ones were cancelled (Slurm ends them as their processes go).
    expect(jobState(pending)).toBe("CANCELLED");
    expect(everRan(pending)).toBe(false);
    await until(() => activeInQueue(oldPool).length === 0, "the dead run's allocations to end");
    expect(running.map(jobState)).toEqual(running.map(() => "CANCELLED"));
    // Its secret and batch script went with the rerun, which removed its own.
    expect(readdirSync(join(store, "run"))).toEqual([]);
  }, 180_000);

  it("baton reap cancels the allocations of a killed run's pool, and leaves a live run's", async () => {
    const run = join(tempDir(), "run");
    mkdirSync(run);
    const host = hostname().replace(/[^A-Za-z0-9._-]/g, "_");
    const deadRun = `run-aa11-${await deadPid()}@${host}`;
    writeFileSync(join(run, `${deadRun}.secret`), "x", { mode: 0o600 });
    writeFileSync(join(run, `${deadRun}.baton-0000dead.sbatch`), "x", { mode: 0o700 });
    const live = join(run, `run-bb22-${process.pid}@${host}.baton-1111a11e.sbatch`);
    writeFileSync(live, "x", { mode: 0o700 });
    namedPools.push("baton-0000dead", "baton-1111a11e");
    // Held: pending for as long as the test needs, whatever the node runs.
    const submit = (name: string) =>
      slurm("sbatch", [
        "--parsable",
        "-H",
        `--job-name=${name}`,
        "-o",
        "/dev/null",
        "--wrap",
        "sleep 60",
      ])
        .trim()
        .split(";")[0]!;
    const abandoned = [submit("baton-0000dead"), submit("baton-0000dead")];
    const kept = submit("baton-1111a11e");

    const reap = spawn(process.execPath, ["bin/baton.js", "reap", "--state-dir", run, "--json"], {
      env: cluster!.env,
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(reap);
    let stdout = "";
    reap.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    const code = await new Promise((done) => reap.on("close", done));
    expect(code).toBe(0);
    // In squeue's order.
    const { cancelled, failed } = JSON.parse(stdout).slurm;
    expect(failed).toEqual([]);
    expect(cancelled).toEqual([
      { pool: "baton-0000dead", run: deadRun, allocations: expect.any(Array) },
    ]);
    expect(cancelled[0].allocations.sort()).toEqual(abandoned.sort());
    expect(activeInQueue("baton-0000dead")).toEqual([]);
    expect(activeInQueue("baton-1111a11e")).toEqual([kept]);
    expect(readdirSync(run)).toEqual([basename(live)]);
  }, 60_000);

  it("fails the run naming an allocation cancelled from outside, and leaves none", async () => {
    const dir = tempDir();
    const markers = join(dir, "markers");
    mkdirSync(markers);
    const { roots, jobs } = await graph(40, 0, 300, { markers });
    const store = await ResultStore.open(join(dir, "store"), nodeFiles());
    const engine = createEngine({ jobs, workers: watchedPool({ maxWorkers: 2 }), store });
    const run = engine.run(roots);
    await until(() => started.length === 1 && readdirSync(markers).length > 0, "a job to run");
    const pool = started[0]!;
    const victim = pool.allocations().find((a) => a.state === "running")!.id;
    slurm("scancel", [victim]);

    const error = await run.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SlurmError);
    expect((error as SlurmError).code).toBe("ALLOCATION_FAILED");
    expect((error as SlurmError).allocations).toEqual([victim]);
    expect((error as SlurmError).message).toContain(`allocation ${victim}`);
    expect((error as SlurmError).message).toContain("CANCELLED");
    expect((error as SlurmError).message).toContain(
      join(runLogsOf(join(dir, "store")), `slurm-${victim}.log`),
    );
    expect(activeInQueue(pool.name)).toEqual([]);
  });

  it("a cancel right after an allocation started ends the run within 2 s, cancelling it at once instead of waiting 5 s for its worker", async () => {
    const dir = tempDir();
    const jobs = loadJobs(slowStartJobs, moduleSource(SLOW_START));
    const cancelled: string[] = [];
    let cancelledAt = 0;
    let pool: SlurmPool | undefined;
    // Cancelled at the first poll that sees an allocation running: its worker takes 10 s to
    // load the job module, so it has not joined.
    const workers = watchedPool({ jobsModule: SLOW_START, maxWorkers: 2 }, (started) => {
      pool = started;
      started.on("poll", ({ allocations }) => {
        if (cancelledAt > 0 || !allocations.some((a) => a.state === "running")) return;
        cancelledAt = Date.now();
        run.cancel("the caller went away");
      });
      started.on("cancelled", ({ ids }) => cancelled.push(...ids));
    });
    const run = createEngine({ jobs, workers, batonDir: dir }).run([job("cleanUp", null)]);

    const result = await run;

    expect(cancelledAt).toBeGreaterThan(0);
    expect(Date.now() - cancelledAt).toBeLessThan(2_000);
    expect(result.counts).toMatchObject({ cancelled: 1, completed: 0 });
    expect(cancelled.length).toBeGreaterThan(0);
    expect(activeInQueue(pool!.name)).toEqual([]);
  });

  it("a cancel whose grace runs out on a handler that ignores its abort ends that allocation then (SIGKILL to its batch step), not the pool's 5 s later", async () => {
    const dir = tempDir();
    // One leaf that sleeps its minute through the cancel (its workers read these through
    // sbatch's environment).
    process.env.BATON_TEST_JOBS = "1";
    process.env.BATON_TEST_DELAY_MS = "60000";
    process.env.BATON_TEST_CALLS = dir;
    process.env.BATON_TEST_IGNORE_ABORT = "1";
    try {
      const module = await import(`${COUNTED}?ignoring`);
      const jobs = loadJobs(module.jobs, moduleSource(COUNTED));
      const workers = watchedPool({ jobsModule: COUNTED, maxWorkers: 1 });
      const engine = createEngine({ jobs, workers, batonDir: dir, cancelGraceMs: 1_000 });
      const run = engine.run(module.default);
      let cancelledAt = 0;
      run.on("job", (event) => {
        if (event.state !== "running" || cancelledAt > 0) return;
        cancelledAt = Date.now();
        run.cancel("the caller went away");
      });

      const result = await run;

      // 1 s of grace, then the kill and the queue's word; it was the pool's 5 s grace, then
      // scancel's SIGTERM, which the worker waited its abort grace on, and Slurm's KillWait.
      expect(Date.now() - cancelledAt).toBeLessThan(4_000);
      expect(result.counts).toMatchObject({ cancelled: 3, completed: 0 });
      const pool = started[0]!;
      const [allocation] = slurm("squeue", ["-h", "-r", "-t", "all", "-n", pool.name, "-o", "%i"])
        .split("\n")
        .filter((line) => line.trim() !== "");
      expect(jobState(allocation!)).toBe("FAILED");
      expect(activeInQueue(pool.name)).toEqual([]);
    } finally {
      for (const name of ["JOBS", "DELAY_MS", "CALLS", "IGNORE_ABORT"]) {
        delete process.env[`BATON_TEST_${name}`];
      }
    }
  });

  it("replaces allocations that reach their --time mid-job and completes the run, retrying their jobs", async () => {
    // Two jobs on two allocations of ten minutes. Once both run, each allocation's limit is
    // lowered to 0, below the time it has run (`TimeLimit=0:01` would round up to a minute),
    // so Slurm ends both TIMEOUT at its next check of limits (every 30 s). The jobs' first
    // attempts outlast that check; they go back to the run and their retries complete at once
    // in the replacements.
    const dir = tempDir();
    const markers = join(dir, "markers");
    mkdirSync(markers);
    const { roots, jobs } = await graph(2, 0, 100, { markers, firstAttemptMs: 600_000 });
    const store = await ResultStore.open(join(dir, "store"), nodeFiles());
    const submitted: string[] = [];
    const workers = watchedPool({ maxWorkers: 2, sbatchOptions: ["--time=10"] }, (pool) =>
      pool.on("submitted", (ids) => submitted.push(...ids)),
    );
    const run = createEngine({ jobs, workers, store }).run(roots);
    const running = () => started[0]?.allocations().filter((a) => a.state === "running") ?? [];
    await until(
      () => readdirSync(markers).length === 2 && running().length === 2,
      "both jobs to run, one in each allocation",
    );
    const limited = running().map((a) => a.id);
    for (const id of limited) slurm("scontrol", ["update", `JobId=${id}`, "TimeLimit=0"]);
    const result = await run;

    expect(result.ok).toBe(true);
    expect(result.counts.completed).toBe(2);
    const retried = [...result.jobs.values()].filter((o) => o.lostWorkers.length > 0);
    expect(retried.length).toBeGreaterThan(0);
    for (const outcome of retried) {
      expect(outcome.attempts).toBe(outcome.lostWorkers.length + 1);
      const allocation = outcome.lostWorkers[0]!.slice("slurm-".length);
      expect(slurm("scontrol", ["show", "job", "-o", allocation])).toMatch(/\bJobState=TIMEOUT\b/);
    }
    // Each job was lost with the allocation it ran in.
    const lost = retried.flatMap((o) => o.lostWorkers.map((w) => w.slice("slurm-".length)));
    expect(lost.sort()).toEqual([...limited].sort());
    expect(submitted.length).toBeGreaterThan(2);
    expect(activeInQueue(started[0]!.name)).toEqual([]);
  }, 120_000);

  it("ends the allocation of a worker idle through a long tail, and completes the run", async () => {
    // Two jobs on two allocations, one of them 5 s long: the worker done with the short one
    // has no job for the idle exit's 1 s, leaves, and its allocation ends COMPLETED while
    // the long job runs on in the other.
    const dir = tempDir();
    const { roots, jobs } = await graph(2, 0, 100, { tailMs: 5_000 });
    const store = await ResultStore.open(join(dir, "store"), nodeFiles());
    const submitted: string[] = [];
    let gone: string | undefined;
    const workers = watchedPool({ maxWorkers: 2, idleExitMs: 1_000 }, (pool) => {
      pool.on("submitted", (ids) => submitted.push(...ids));
      pool.on("poll", ({ demand, allocations }) => {
        if (gone !== undefined || demand === 0 || submitted.length < 2) return;
        gone = submitted.find((id) => !allocations.some((a) => a.id === id));
      });
    });
    const result = await createEngine({ jobs, workers, store }).run(roots);

    expect(result.ok).toBe(true);
    expect(result.counts.completed).toBe(2);
    expect(gone).toBeDefined();
    expect(slurm("scontrol", ["show", "job", "-o", gone!])).toMatch(/\bJobState=COMPLETED\b/);
    const log = readFileSync(join(runLogsOf(join(dir, "store")), `slurm-${gone}.log`), "utf8");
    expect(log).toMatch(
      /baton worker: left the run at \S+ after \d jobs? finished here: no job for 1000ms \(--idle-exit\)/,
    );
    // Demand (the long job) never outgrew the allocation left: none was submitted again.
    expect(submitted).toHaveLength(2);
    expect(activeInQueue(started[0]!.name)).toEqual([]);
  });

  it("requeues the job of a worker killed inside its allocation and completes the run", async () => {
    const dir = tempDir();
    const markers = join(dir, "markers");
    mkdirSync(markers);
    const { roots, jobs } = await graph(8, 0, 1000, { markers });
    const store = await ResultStore.open(join(dir, "store"), nodeFiles());
    const engine = createEngine({ jobs, workers: watchedPool({ maxWorkers: 2 }), store });
    const run = engine.run(roots);
    await until(() => readdirSync(markers).length > 0, "a job to run");
    const pool = started[0]!;
    const [marker] = readdirSync(markers);
    const [name, pid] = marker!.split(".") as [string, string];
    // The worker process running that job, inside its allocation.
    process.kill(Number(pid), "SIGKILL");

    const result = await run;
    expect(result.ok).toBe(true);
    expect(result.counts.completed).toBe(8);
    const killed = [...result.jobs.values()].find(
      (o) => o.kind === "wide" && `wide-${o.value}` === name,
    )!;
    expect(killed.lostWorkers).toHaveLength(1);
    expect(killed.lostWorkers[0]).toMatch(/^slurm-\d+_\d+$/);
    expect(killed.attempts).toBe(2);
    const allocation = killed.lostWorkers[0]!.slice("slurm-".length);
    const log = readFileSync(
      join(runLogsOf(join(dir, "store")), `slurm-${allocation}.log`),
      "utf8",
    );
    expect(log).toContain(`worker slurm-${allocation} exited with code 137`);
    expect(log).toContain(`starting worker slurm-${allocation}.2`);
    expect(activeInQueue(pool.name)).toEqual([]);
  });
});

/** The log folder of the one run a test made in `store`: each run writes its own in logs/. */
function runLogsOf(store: string): string {
  const folders = readdirSync(join(store, "logs"));
  expect(folders).toHaveLength(1);
  return join(store, "logs", folders[0]!);
}
