/**
 * The Slurm pool against the in-memory Slurm (test/fixtures/fakeSlurm.ts): scaling to
 * demand, the scale-down rule, failed states, "no information" from a failing squeue, and
 * stop. The real Slurm is exercised in test/integration/slurmPool.test.ts.
 */
import { spawnSync } from "node:child_process";
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { slurmResourcesFlag } from "../../src/cli/slurmResourcesFlag.ts";
import { SlurmError } from "../../src/errors.ts";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import type { Clock } from "../../src/runtime/ports.ts";
import { nodeSlurmCommands, type QueueEntry } from "../../src/runtime/slurmCommands.ts";
import {
  type SlurmPool,
  type SlurmPoolOptions,
  slurmPool,
  startSlurmPool,
} from "../../src/runtime/slurmPool.ts";
import type { PoolStart } from "../../src/runtime/workerPool.ts";
import { FakeSlurm } from "../fixtures/fakeSlurm.ts";
import { poolStart } from "../fixtures/poolStart.ts";

const SECRET_HEX = "ab".repeat(32);
const dirs: string[] = [];
const pools: SlurmPool[] = [];

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.stop().catch(() => {})));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function start(
  slurm: FakeSlurm,
  demand: { value: number },
  options: Partial<SlurmPoolOptions> = {},
  extra: Partial<PoolStart> = {},
): SlurmPool {
  const dir = mkdtempSync(join(tmpdir(), "baton-slurm-unit-"));
  dirs.push(dir);
  const secretFile = join(dir, "run.secret");
  writeFileSync(secretFile, `${SECRET_HEX}\n`, { mode: 0o600 });
  const context = poolStart(dir, {
    address: "ws://10.0.0.5:7000",
    demand: () => demand.value,
    ...extra,
  });
  const pool = startSlurmPool(
    {
      jobsModule: "/shared/jobs.ts",
      maxWorkers: 3,
      pollMs: 5,
      graceMs: 50,
      stopTimeoutMs: 2000,
      commands: slurm,
      ...options,
    },
    context,
  );
  pools.push(pool);
  return pool;
}

async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Resolves after the pool has polled `n` more times. */
function polls(pool: SlurmPool, n: number): Promise<void> {
  return new Promise((resolve) => {
    let left = n;
    const on = () => {
      if (--left === 0) {
        pool.off("poll", on);
        resolve();
      }
    };
    pool.on("poll", on);
  });
}

/** Real timers, and a `now()` the test moves forward: minutes pass without waiting. */
function steppedClock() {
  const real = nodeClock();
  const clock = { ...real, skipped: 0, now: () => real.now() + clock.skipped };
  return clock;
}

/**
 * A clock that stands at `at` until the test moves it, whose timers run only when the test
 * says (`runDue`), whatever their delay.
 */
function heldClock() {
  const timers = new Set<() => void>();
  const clock = {
    at: 0,
    now: () => clock.at,
    setTimeout: (fn: () => void) => {
      timers.add(fn);
      return fn;
    },
    clearTimeout: (handle: unknown) => {
      timers.delete(handle as () => void);
    },
    /** Runs the timers set so far. */
    runDue: () => {
      const due = [...timers];
      timers.clear();
      for (const fn of due) fn();
    },
  };
  return clock;
}

/** A logger whose warnings' messages land in `warnings`. */
function capturing(warnings: string[]) {
  return pino({ level: "warn" }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
}

describe("slurmPool", () => {
  it("offers its resources and needs worker processes", () => {
    const pool = slurmPool({ jobsModule: "/jobs.ts", resources: { cpus: 2, memory: 512 } });
    expect(pool.offers).toEqual([{ cpus: 2, memory: 512 }]);
    expect(pool.remote).toBe(true);
  });

  it("names its resources as the way out for a job it cannot take", () => {
    const pool = slurmPool({ jobsModule: "/jobs.ts" });
    expect(pool.offers).toEqual([{ cpus: 1 }]);
    expect(pool.offerMore?.({ cpus: 4, gpus: 0, memory: 8192 })).toBe(
      "give slurmPool resources that offer enough, such as { cpus: 4, memory: 8192 }",
    );
  });

  it("refuses, when it is made, values its workers or Slurm could never take", () => {
    const made = (options: Partial<SlurmPoolOptions>) => () =>
      slurmPool({ jobsModule: "/jobs.ts", ...options });
    expect(made({ logLevel: "verbose" as "info" })).toThrow(
      /^slurmPool: logLevel must be one of trace, debug, info, warn, error, fatal, silent, not "verbose"/,
    );
    expect(made({ handlerThread: "yes" as unknown as boolean })).toThrow(
      /^slurmPool: handlerThread must be true or false, not "yes"/,
    );
    expect(made({ resources: { cpus: -1 } })).toThrow(/^slurmPool: resources.cpus must be/);
    expect(made({ maxWorkers: -1 })).toThrow(
      /^slurmPool: maxWorkers must be a whole number of 1 or more, not -1/,
    );
    for (const idleExitMs of [0, -1, 1.5, Number.NaN]) {
      expect(made({ idleExitMs })).toThrow(
        `slurmPool: idleExitMs must be a whole number of ms of 1 or more, such as 300000 for 5 min (Infinity: workers never leave before the run ends), not ${idleExitMs}`,
      );
    }
    expect(made({ maxWorkers: 1e12 })).toThrow(
      /^slurmPool: maxWorkers 1000000000000 is more workers than this coordinator can hold connections to: at most \d+, since each holds a connection to this coordinator, an open file, and /,
    );
  });
});

describe("startSlurmPool against the in-memory Slurm", () => {
  it("writes a private batch script that names the secret file, never the secret", () => {
    const pool = start(new FakeSlurm(), { value: 0 });
    const script = readFileSync(pool.script, "utf8");
    expect(statSync(pool.script).mode & 0o777).toBe(0o700);
    expect(script).toContain("'--secret-file'");
    expect(script).toContain("run.secret");
    expect(script).not.toContain(SECRET_HEX);
    expect(script).toContain("'--connect' 'ws://10.0.0.5:7000'");
    const named = start(
      new FakeSlurm(),
      { value: 0 },
      { connect: "login1:7000" },
      {
        address: "ws://0.0.0.0:7000",
      },
    );
    expect(readFileSync(named.script, "utf8")).toContain("'--connect' 'login1:7000'");
    // No node reaches a wildcard: without connect, the nodes are given this machine's name.
    const wildcard = start(new FakeSlurm(), { value: 0 }, {}, { address: "ws://0.0.0.0:7000" });
    expect(readFileSync(wildcard.script, "utf8")).toContain(
      `'--connect' 'ws://${hostname()}:7000'`,
    );
    expect(script).not.toContain("--handler-thread");
    expect(script).toContain("'--idle-exit' '300000ms'");
    const stays = start(new FakeSlurm(), { value: 0 }, { idleExitMs: Number.POSITIVE_INFINITY });
    expect(readFileSync(stays.script, "utf8")).not.toContain("--idle-exit");
    const brief = start(new FakeSlurm(), { value: 0 }, { idleExitMs: 1_500 });
    expect(readFileSync(brief.script, "utf8")).toContain("'--idle-exit' '1500ms'");
    const threaded = start(new FakeSlurm(), { value: 0 }, { handlerThread: true });
    expect(readFileSync(threaded.script, "utf8")).toMatch(
      /'--memory' '\d+' '--handler-thread' '--idle-exit'/,
    );
    expect(script).not.toContain("--abort-grace");
    const patient = start(new FakeSlurm(), { value: 0 }, { abortGraceMs: 30_000 });
    expect(readFileSync(patient.script, "utf8")).toContain("'--abort-grace' '30000ms'");
  });

  it("does not restart a worker that exits 2: a job module that does not load fails the same way again", async () => {
    const pool = start(new FakeSlurm(), { value: 0 }, { jobsModule: "/nonexistent/jobs.ts" });
    const ran = spawnSync("/bin/sh", [pool.script], {
      env: { ...process.env, SLURM_JOB_ID: "77" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(ran.status).toBe(2);
    expect(ran.stdout.match(/starting worker/g)).toHaveLength(1);
    expect(ran.stdout).toContain("worker slurm-77 exited with code 2");
    expect(ran.stderr).toContain("/nonexistent/jobs.ts does not exist");
  });

  it("cancels what is left of the pools whose batch scripts a dead coordinator left", async () => {
    const slurm = new FakeSlurm(1);
    const request = { script: "x", count: 2, array: true, logsDir: "/tmp", options: [] };
    const [running, pending] = await slurm.submit({ ...request, name: "baton-0123abcd" });
    slurm.startPending();
    const [ended] = await slurm.submit({ ...request, name: "baton-4567cdef", count: 1 });
    slurm.finish(ended!, "COMPLETED");
    const [bystander] = await slurm.submit({ ...request, name: "baton-89abcdef", count: 1 });
    const warnings: string[] = [];
    start(
      slurm,
      { value: 0 },
      {},
      {
        logger: capturing(warnings),
        abandonedRunFiles: [
          "run-aa11-4242@login1.secret",
          "run-aa11-4242@login1.baton-0123abcd.sbatch",
          "run-bb22-4343@login1.baton-4567cdef.sbatch",
        ],
      },
    );
    await until(() => slurm.cancels.length > 0, "the abandoned pool's cancel");
    expect(slurm.cancels).toEqual([
      { ids: [running, pending], pendingOnly: false, states: ["RUNNING", "PENDING"] },
    ]);
    expect(slurm.inState("CANCELLED").sort()).toEqual([running, pending].sort());
    expect(slurm.active()).toEqual([bystander]);
    // Said where baton run shows it (a warning): the user learns what became of them.
    await until(() => warnings.length > 0, "the warning");
    expect(warnings).toEqual([
      `cancelled the Slurm allocations ${running}, ${pending} of pool baton-0123abcd, left in the queue by a baton run on this host that was killed: their workers could only fail to reach it`,
    ]);
  });

  it("asks sbatch for what baton run --slurm-resources offers, and has each worker offer it", async () => {
    const slurm = new FakeSlurm(2);
    const resources = slurmResourcesFlag("cpus=3.5,memory=16384,gpus=2");
    const pool = start(slurm, { value: 1 }, { resources });
    await until(() => slurm.submissions.length === 1, "a submission");
    const options = slurm.submissions[0]!.options;
    expect(options.slice(0, 3)).toEqual(["--cpus-per-task=4", "--mem=16384M", "--gres=gpu:2"]);
    expect(readFileSync(pool.script, "utf8")).toContain(
      "'--cpus' '3.5' '--gpus' '2' '--memory' '16384'",
    );
    const onlyMemory = start(
      new FakeSlurm(2),
      { value: 1 },
      {
        resources: slurmResourcesFlag("memory=512"),
      },
    );
    expect(readFileSync(onlyMemory.script, "utf8")).toContain(
      "'--cpus' '1' '--gpus' '0' '--memory' '512'",
    );
  });

  it("submits one array for min(demand, maxWorkers) and nothing more while demand holds", async () => {
    const slurm = new FakeSlurm(2);
    const pool = start(slurm, { value: 10 });
    await until(() => slurm.submissions.length === 1, "a submission");
    await polls(pool, 5);
    expect(slurm.submissions).toHaveLength(1);
    expect(slurm.submissions[0]).toMatchObject({ count: 3, array: true, name: pool.name });
    expect(slurm.submissions[0]!.options).toContain("--cpus-per-task=1");
    expect(pool.allocations().map((a) => [a.id, a.state])).toEqual([
      ["100_0", "running"],
      ["100_1", "running"],
      ["100_2", "pending"],
    ]);
  });

  it("submits separate allocations without arrays", async () => {
    const slurm = new FakeSlurm(2);
    start(slurm, { value: 2 }, { array: false });
    await until(() => slurm.allocations.size === 2, "two allocations");
    expect(slurm.submissions[0]).toMatchObject({ count: 2, array: false });
    expect([...slurm.allocations.keys()]).toEqual(["100", "101"]);
  });

  it("counts running jobs as demand: busy workers are not spare capacity", async () => {
    const slurm = new FakeSlurm(4);
    const demand = { value: 2 };
    const pool = start(slurm, demand);
    await until(() => pool.allocations().filter((a) => a.state === "running").length === 2, "2");
    // Demand stays 2 (two jobs running, none ready): no more, no fewer.
    await polls(pool, 5);
    expect(slurm.active()).toHaveLength(2);
    demand.value = 3;
    await until(() => slurm.active().length === 3, "a third allocation");
  });

  it("scales down by cancelling only the newest pending allocations, pending-only", async () => {
    const slurm = new FakeSlurm(1);
    const demand = { value: 3 };
    const pool = start(slurm, demand);
    await until(() => pool.allocations().length === 3, "three allocations");
    await polls(pool, 2);
    demand.value = 2;
    await until(() => slurm.inState("CANCELLED").length === 1, "one cancelled");
    expect(slurm.inState("CANCELLED")).toEqual(["100_2"]);
    demand.value = 0;
    await until(() => slurm.inState("CANCELLED").length === 2, "two cancelled");
    await polls(pool, 5);
    // The running one is never asked for, and every scale-down cancel is pending-only.
    expect(slurm.inState("RUNNING")).toEqual(["100_0"]);
    expect(
      slurm.cancels.every((c) => c.pendingOnly && c.states.every((s) => s === "PENDING")),
    ).toBe(true);
    expect(slurm.cancelledWhileRunning()).toEqual([]);
  });

  it("takes an allocation whose idle worker left as gone, not failed, and submits again when demand rises", async () => {
    const slurm = new FakeSlurm(2);
    const demand = { value: 2 };
    const pool = start(slurm, demand, {}, { joined: () => true });
    await until(() => slurm.inState("RUNNING").length === 2, "two running");
    // The tail: one job runs on, and the other allocation's worker, idle, left the run.
    demand.value = 1;
    slurm.finish("100_1", "COMPLETED");
    await until(() => pool.allocations().length === 1, "the completed allocation dropped");
    const failed = await Promise.race([pool.failed, polls(pool, 5).then(() => "not failed")]);
    expect(failed).toBe("not failed");
    expect(slurm.submissions).toHaveLength(1);
    expect(slurm.cancels).toEqual([]);
    demand.value = 3;
    await until(() => slurm.submissions.length === 2, "a new submission");
    expect(slurm.submissions[1]!.count).toBe(2);
    expect(pool.allocations().map((a) => a.id)).toEqual(["100_0", "101_0", "101_1"]);
  });

  for (const state of ["TIMEOUT", "NODE_FAIL", "PREEMPTED"]) {
    it(`replaces an allocation Slurm ends ${state} after its worker joined, and goes on`, async () => {
      const slurm = new FakeSlurm(2);
      const pool = start(slurm, { value: 2 }, {}, { joined: (worker) => worker === "slurm-100_1" });
      await until(() => slurm.inState("RUNNING").length === 2, "two running");
      slurm.finish("100_1", state, "TimeLimit");
      await until(() => slurm.submissions.length === 2, "a replacement");
      expect(slurm.submissions[1]!.count).toBe(1);
      expect(pool.allocations().map((a) => a.id)).toEqual(["100_0", "101_0"]);
      const failed = await Promise.race([pool.failed, polls(pool, 3).then(() => "not failed")]);
      expect(failed).toBe("not failed");
    });
  }

  it("fails the pool when an allocation reaches its time limit before its worker joined", async () => {
    const slurm = new FakeSlurm(2);
    const pool = start(slurm, { value: 2 }, {}, { joined: () => false });
    await until(() => slurm.inState("RUNNING").length === 2, "two running");
    slurm.finish("100_1", "TIMEOUT", "TimeLimit");
    const error = await pool.failed;
    expect(error.code).toBe("ALLOCATION_FAILED");
    expect(error.message).toContain(
      `Slurm allocation 100_1 of pool ${pool.name} ended TIMEOUT (reason: TimeLimit) before its worker joined the run: its time limit leaves a worker no time to start (raise --time in --slurm-opt`,
    );
    expect(slurm.submissions).toHaveLength(1);
  });

  for (const state of ["FAILED", "CANCELLED", "OUT_OF_MEMORY", "BOOT_FAIL"]) {
    it(`fails the pool naming an allocation that ends ${state}, and its log`, async () => {
      const slurm = new FakeSlurm(2);
      const pool = start(slurm, { value: 2 });
      await until(() => slurm.inState("RUNNING").length === 2, "two running");
      slurm.finish("100_1", state, "NonZeroExitCode");
      const error = await pool.failed;
      expect(error).toBeInstanceOf(SlurmError);
      expect(error.code).toBe("ALLOCATION_FAILED");
      expect(error.allocations).toEqual(["100_1"]);
      expect(error.logFile).toMatch(/logs\/slurm-100_1\.log$/);
      expect(error.message).toContain(`Slurm allocation 100_1 of pool ${pool.name} ended ${state}`);
      expect(error.message).toContain(error.logFile);
      // A failed pool submits nothing more.
      const submitted = slurm.submissions.length;
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(slurm.submissions).toHaveLength(submitted);
    });
  }

  it("warns that workers told a loopback address reach the run from this machine only, and says so again when an allocation fails", async () => {
    const slurm = new FakeSlurm(2);
    const warnings: string[] = [];
    // No listen: the run listens on 127.0.0.1, and the workers are told that.
    const pool = start(
      slurm,
      { value: 1 },
      {},
      { logger: capturing(warnings), address: "ws://127.0.0.1:7000" },
    );
    const advice =
      "its workers are told to connect to ws://127.0.0.1:7000, a loopback address, where only an allocation on this machine reaches the run: a worker on another node finds nothing there and exits 3. Give baton run --listen an address the nodes reach, such as --listen 0.0.0.0:7000 (createEngine's listen)";
    expect(warnings).toEqual([`the Slurm pool ${pool.name}: ${advice}`]);
    await until(() => slurm.inState("RUNNING").length === 1, "one running");
    slurm.finish("100_0", "FAILED", "NonZeroExitCode");
    const error = await pool.failed;
    expect(error.message).toContain(
      `ended FAILED (reason: NonZeroExitCode), so the run stops. If its worker could not connect: ${advice}. Its log `,
    );
  });

  it("says nothing of loopback when the workers are told an address the nodes reach", async () => {
    const slurm = new FakeSlurm(2);
    const warnings: string[] = [];
    const pool = start(
      slurm,
      { value: 1 },
      {},
      { logger: capturing(warnings), address: "ws://0.0.0.0:7000" },
    );
    await until(() => slurm.inState("RUNNING").length === 1, "one running");
    slurm.finish("100_0", "FAILED", "NonZeroExitCode");
    expect((await pool.failed).message).not.toContain("loopback");
    expect(warnings).toEqual([]);
    expect(readFileSync(pool.script, "utf8")).toContain(`'--connect' 'ws://${hostname()}:7000'`);
  });

  it("fails the pool when Slurm keeps an allocation pending for a reason it will never start it for", async () => {
    const slurm = new FakeSlurm(2);
    slurm.startsOnQueue = false;
    const pool = start(slurm, { value: 2 });
    await until(() => slurm.allocations.size === 2, "two allocations");
    for (const id of ["100_0", "100_1"]) slurm.allocations.get(id)!.reason = "PartitionConfig";
    const error = await pool.failed;
    expect(error.code).toBe("ALLOCATION_UNSATISFIABLE");
    expect(error.allocations).toEqual(["100_0"]);
    expect(error.message).toBe(
      `Slurm will not start allocation 100_0 of pool ${pool.name} as asked: it is pending for PartitionConfig, it asks for more than the partition allows (CPUs, memory or GPUs on one node, or nodes). ` +
        `Change what the pool asks for (--slurm-resources, --partition, --slurm-opt; its sbatch options are --cpus-per-task=1 --chdir=${process.cwd()}), or ask the cluster's administrators; ` +
        "`scontrol show job 100_0` and `scontrol show partition` show the request and the limits.",
    );
    await pool.stop();
    expect(slurm.active()).toEqual([]);
  });

  it("says for a progress line which allocations Slurm keeps pending and why", async () => {
    const slurm = new FakeSlurm(1);
    slurm.startsOnQueue = false;
    const demand = { value: 3 };
    const pool = start(slurm, demand);
    await until(() => slurm.allocations.size === 3, "three allocations");
    await polls(pool, 1);
    expect(pool.waitingFor()).toBe("Slurm: 3 allocations pending");
    slurm.startPending();
    for (const id of ["100_1", "100_2"]) slurm.allocations.get(id)!.reason = "Resources";
    await polls(pool, 2);
    expect(pool.waitingFor()).toBe("Slurm: 2 allocations pending (Resources)");
    slurm.allocations.get("100_2")!.reason = "ReqNodeNotAvail, UnavailableNodes:node3";
    await polls(pool, 2);
    expect(pool.waitingFor()).toBe("Slurm: 2 allocations pending (1 ReqNodeNotAvail, 1 Resources)");
    // Demand falls to the one running: the pending ones are being cancelled, not waited for.
    demand.value = 1;
    await polls(pool, 2);
    expect(pool.waitingFor()).toBeUndefined();
  });

  it("says for a progress line which workers start in allocations that run, until each joins", async () => {
    const slurm = new FakeSlurm(2);
    const joined = new Set<string>();
    const pool = start(slurm, { value: 3 }, {}, { joined: (worker) => joined.has(worker) });
    await until(() => slurm.inState("RUNNING").length === 2, "two running allocations");
    await polls(pool, 1);
    expect(pool.waitingFor()).toBe("Slurm: 1 allocation pending, 2 workers starting");
    // The first worker of 100_1 died before it joined; its restart did.
    joined.add("slurm-100_1.2");
    expect(pool.waitingFor()).toBe("Slurm: 1 allocation pending, 1 worker starting");
    joined.add("slurm-100_0");
    expect(pool.waitingFor()).toBe("Slurm: 1 allocation pending");
  });

  it("says why, after a minute in which no allocation started, and again when Slurm's reasons change", async () => {
    const slurm = new FakeSlurm(2);
    slurm.startsOnQueue = false;
    const clock = steppedClock();
    const warnings: string[] = [];
    const pool = start(slurm, { value: 3 }, { clock }, { logger: capturing(warnings) });
    await until(() => slurm.allocations.size === 3, "three allocations");
    for (const id of ["100_0", "100_1", "100_2"]) slurm.allocations.get(id)!.reason = "Priority";
    await polls(pool, 2);
    clock.skipped = 59_000;
    await polls(pool, 2);
    expect(warnings).toEqual([]);
    clock.skipped = 65_000;
    await polls(pool, 3);
    expect(warnings).toEqual([
      `no allocation of the Slurm pool ${pool.name} has started in 1 min 05 s: 3 pending for Priority (jobs of higher priority are ahead of it); the run waits for Slurm (\`squeue -n ${pool.name}\` lists them)`,
    ]);
    slurm.allocations.get("100_2")!.reason = "Resources";
    clock.skipped = 180_000;
    await polls(pool, 3);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toBe(
      `no allocation of the Slurm pool ${pool.name} has started in 3 min 00 s: 2 pending for Priority (jobs of higher priority are ahead of it), 1 for Resources (the nodes it needs are busy); the run waits for Slurm (\`squeue -n ${pool.name}\` lists them)`,
    );
    // One starts: the run is no longer waiting, and nothing more is said.
    slurm.startPending();
    clock.skipped = 3_600_000;
    await polls(pool, 3);
    expect(warnings).toHaveLength(2);
  });

  it("takes a failing squeue as no information: nothing submitted, cancelled or failed", async () => {
    const slurm = new FakeSlurm(2);
    const demand = { value: 2 };
    const pool = start(slurm, demand);
    await until(() => slurm.inState("RUNNING").length === 2, "two running");
    slurm.failingQueues = 20;
    demand.value = 3;
    await until(() => slurm.failingQueues === 1, "most failures to be used up");
    // Nothing submitted while squeue fails, and the running allocations are still counted.
    expect(slurm.submissions).toHaveLength(1);
    expect(pool.allocations().map((a) => a.id)).toEqual(["100_0", "100_1"]);
    await until(() => slurm.active().length === 3, "the third allocation");
    let failed = false;
    void pool.failed.then(() => (failed = true));
    await polls(pool, 2);
    expect(failed).toBe(false);
  });

  it("asks scontrol about an allocation squeue does not list, and drops one Slurm forgot", async () => {
    const slurm = new FakeSlurm(2);
    const demand = { value: 2 };
    const pool = start(slurm, demand);
    await until(() => slurm.inState("RUNNING").length === 2, "two running");
    slurm.unlisted.add("100_0");
    slurm.finish("100_0", "FAILED");
    await expect(pool.failed).resolves.toMatchObject({ allocations: ["100_0"] });

    const other = new FakeSlurm(2);
    const second = start(other, { value: 1 });
    await until(() => other.inState("RUNNING").length === 1, "one running");
    other.forgotten.add("100_0");
    await until(() => other.submissions.length === 2, "a replacement");
    expect(second.allocations().map((a) => a.id)).toEqual(["101_0"]);
  });

  it("adopts an allocation with its name that it did not hear of (an sbatch that timed out)", async () => {
    const slurm = new FakeSlurm(2);
    const demand = { value: 0 };
    const pool = start(slurm, demand);
    await polls(pool, 1);
    await slurm.submit({ ...baseRequest(pool), count: 1 });
    demand.value = 1;
    await polls(pool, 3);
    expect(pool.allocations().map((a) => a.id)).toEqual(["100_0"]);
    expect(slurm.submissions).toHaveLength(1);
  });

  it("has started once a Slurm command has answered", async () => {
    const pool = start(new FakeSlurm(), { value: 0 });
    await pool.started;
    expect(pool.allocations()).toEqual([]);
  });

  it("fails the pool at once, saying what to do, when Slurm's commands are not on the PATH", async () => {
    const empty = mkdtempSync(join(tmpdir(), "baton-no-slurm-"));
    dirs.push(empty);
    const commands = nodeSlurmCommands({ env: { PATH: empty } });
    const pool = start(new FakeSlurm(), { value: 2 }, { commands, stopTimeoutMs: 500 });
    let started = false;
    void pool.started.then(() => (started = true));
    const error = await pool.failed;
    expect(error).toBeInstanceOf(SlurmError);
    expect(error.code).toBe("SLURM_MISSING");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started).toBe(false);
    expect(error.message).toContain("squeue is not on the PATH");
    expect(error.message).toContain("add their directory to PATH");
    await pool.stop();
  });

  /**
   * The pool with the real Slurm commands, each of `names` being `script` on a PATH of nothing
   * else, failing as `unreachableMs` says: its error, and how long it took. `meanwhile` runs
   * once the pool has started, on the pool's `clock` when one is given.
   */
  async function failingWith(
    script: string,
    unreachableMs: number,
    {
      names = ["sbatch", "squeue", "scontrol", "scancel", "sinfo"],
      clock,
      meanwhile,
    }: {
      names?: readonly string[];
      clock?: Clock;
      meanwhile?: () => Promise<void>;
    } = {},
  ): Promise<{ error: SlurmError; took: number; started: boolean }> {
    const bin = mkdtempSync(join(tmpdir(), "baton-broken-slurm-"));
    dirs.push(bin);
    for (const name of names) {
      writeFileSync(join(bin, name), script, { mode: 0o755 });
    }
    const path = process.env.PATH;
    process.env.PATH = bin;
    try {
      const began = Date.now();
      const pool = start(
        new FakeSlurm(),
        { value: 1 },
        { commands: undefined, unreachableMs, ...(clock !== undefined && { clock }) },
      );
      let started = false;
      void pool.started.then(() => (started = true));
      await meanwhile?.();
      const error = await pool.failed;
      const took = Date.now() - began;
      await pool.stop().catch(() => {});
      return { error, took, started };
    } finally {
      process.env.PATH = path;
    }
  }

  it("fails at once, naming it, when one command the pool needs is missing: a squeue that answers but no sbatch", async () => {
    const { error, took, started } = await failingWith("#!/bin/sh\nexit 0\n", 60_000, {
      names: ["squeue", "scontrol", "scancel"],
    });
    expect(error.code).toBe("SLURM_MISSING");
    expect(started).toBe(false);
    expect(took).toBeLessThan(10_000);
    expect(error.message).toBe(
      "sbatch is not on the PATH, though squeue, scontrol and scancel are: a Slurm pool runs each of sbatch, squeue, scontrol, scancel, and this machine's Slurm client lacks that one; install it (Slurm's client commands), add its directory to PATH, or run baton on a login node of the cluster",
    );
  });

  it("gives up on a hanging squeue within unreachableMs, not the 30 s command timeout, naming the time and the flag", async () => {
    // exec: the command Slurm's timeout kills is the sleep itself, none left behind.
    const { error, took } = await failingWith(
      '#!/bin/sh\necho "squeue: error: slurm_receive_msg: Socket timed out" >&2\nexec /bin/sleep 60\n',
      1500,
    );
    expect(error.code).toBe("SLURM_UNREACHABLE");
    expect(took).toBeLessThan(15_000);
    expect(error.message).toMatch(
      /succeeded in the [12]\.\d s since the pool started \(--slurm-unreachable-after, slurmPool's unreachableMs: 1\.5 s\)/,
    );
    expect(error.message).toContain(
      "having said: squeue: error: slurm_receive_msg: Socket timed out",
    );
    // What killed it is the bound the user gave, not the command timeout it never reached.
    expect(error.message).toContain(
      "a Slurm that answers later than that is overloaded, and --slurm-unreachable-after (slurmPool's unreachableMs) waits longer for it",
    );
    expect(error.message).not.toContain("commandTimeoutMs");
  });

  it("lets the last squeue before unreachableMs say why it fails, not be killed for the little time left", async () => {
    // squeue is one shell (no child left behind when it is killed) that fails once the test
    // writes to its gate, a FIFO: when it fails is the test's to say, not how fast it starts.
    const gate = join(mkdtempSync(join(tmpdir(), "baton-squeue-gate-")), "gate");
    dirs.push(dirname(gate));
    expect(spawnSync("mkfifo", [gate]).status).toBe(0);
    // Opened to read and write, a FIFO waits for no other end: neither this open nor the
    // shell's waits, and the shell reads what is written before or after it starts.
    const writer = openSync(gate, "r+");
    const clock = heldClock();
    try {
      const { error } = await failingWith(
        `#!/bin/sh\nread -r word < '${gate}'\necho "squeue: fatal: Could not establish a configuration source" >&2\nexit 1\n`,
        60_000,
        {
          clock,
          meanwhile: async () => {
            // The first squeue starts with 1 ms of unreachableMs left.
            clock.at = 60_000 - 1;
            clock.runDue();
            // A timer of 1 ms set after that squeue's: had the squeue been given only the 1 ms
            // left, it has been killed when this one fires.
            await new Promise((resolve) => setTimeout(resolve, 1));
            clock.at = 60_000;
            writeSync(writer, "go\n");
          },
        },
      );
      expect(error.code).toBe("SLURM_UNREACHABLE");
      expect(error.message).toContain(
        "exited with code 1: squeue: fatal: Could not establish a configuration source",
      );
      expect(error.message).not.toContain("was killed");
    } finally {
      // The shell, should it still wait, reads the end of its gate and exits.
      closeSync(writer);
    }
  });

  describe("when Slurm's commands fail from the start", () => {
    /** The in-memory Slurm whose squeue fails with `failure` while it is set, counting calls. */
    class BrokenSlurm extends FakeSlurm {
      failure: string | undefined;
      queueCalls = 0;
      override async queue(name: string): Promise<QueueEntry[]> {
        this.queueCalls++;
        if (this.failure !== undefined) throw new SlurmError("SLURM_COMMAND", this.failure);
        return super.queue(name);
      }
    }
    const NO_CONFIG =
      "squeue -h -n baton-x exited with code 1: squeue: error: fetch_config: DNS SRV lookup failed\n" +
      "squeue: fatal: Could not establish a configuration source";

    async function calls(slurm: BrokenSlurm, n: number): Promise<void> {
      const target = slurm.queueCalls + n;
      await until(() => slurm.queueCalls >= target, `${n} more squeue calls`);
    }

    it("fails the pool with SLURM_UNREACHABLE once none has succeeded for unreachableMs, quoting Slurm's last line", async () => {
      const slurm = new BrokenSlurm(2);
      slurm.failure = NO_CONFIG;
      const clock = steppedClock();
      const pool = start(slurm, { value: 2 }, { clock, unreachableMs: 30_000 });
      let failed = false;
      void pool.failed.then(() => (failed = true));
      await calls(slurm, 5);
      expect(failed).toBe(false);
      clock.skipped = 30_000;
      const error = await pool.failed;
      expect(error).toBeInstanceOf(SlurmError);
      expect(error.code).toBe("SLURM_UNREACHABLE");
      expect(error.message).toContain(
        "squeue last said: squeue: fatal: Could not establish a configuration source",
      );
      expect(error.message).not.toContain("DNS SRV");
      expect(error.message).toContain("scontrol ping");
      expect(error.message).toContain("without --slurm");
      expect(error.message).toContain(
        "wait longer with baton run --slurm-unreachable-after (slurmPool's unreachableMs)",
      );
      expect(slurm.submissions).toHaveLength(0);
      await pool.stop().catch(() => {});
    });

    it("refuses an unreachableMs that is neither a whole number of ms of 1 or more nor Infinity", () => {
      for (const unreachableMs of [0, -1, Number.NaN, 1.5]) {
        expect(() => slurmPool({ jobsModule: "/shared/jobs.ts", unreachableMs })).toThrow(
          `slurmPool: unreachableMs (Infinity: never give up) must be a whole number of 1 or more, not ${unreachableMs}`,
        );
      }
      expect(() =>
        slurmPool({ jobsModule: "/shared/jobs.ts", unreachableMs: Number.POSITIVE_INFINITY }),
      ).not.toThrow();
    });

    it("tolerates failures once a Slurm command has succeeded", async () => {
      const slurm = new BrokenSlurm(2);
      const clock = steppedClock();
      const pool = start(slurm, { value: 1 }, { clock, unreachableMs: 30_000 });
      await polls(pool, 1);
      slurm.failure = NO_CONFIG;
      let failed = false;
      void pool.failed.then(() => (failed = true));
      clock.skipped = 10 * 60_000;
      await calls(slurm, 5);
      expect(failed).toBe(false);
      slurm.failure = undefined;
      await polls(pool, 1);
      expect(failed).toBe(false);
    });

    it("logs a failure when it is new or changed, and the same one again at most once a minute", async () => {
      const slurm = new BrokenSlurm(2);
      slurm.failure = NO_CONFIG;
      const clock = steppedClock();
      const warnings: string[] = [];
      start(
        slurm,
        { value: 1 },
        { clock, unreachableMs: 3_600_000 },
        { logger: capturing(warnings) },
      );
      await calls(slurm, 6);
      expect(warnings).toEqual([
        "squeue failed; no information this round, nothing is concluded from it",
      ]);
      slurm.failure =
        "squeue -h -n baton-x exited with code 1: squeue: error: Unable to contact slurm controller";
      await calls(slurm, 3);
      expect(warnings).toHaveLength(2);
      clock.skipped = 60_000;
      await calls(slurm, 3);
      expect(warnings).toHaveLength(3);
      expect(warnings[2]).toMatch(
        /^squeue failed \(failed \d+ more times since the last warning\); no information this round/,
      );
    });

    it("says what a real squeue printed before it was killed for hanging: a slurm.conf it keeps retrying to read", async (context) => {
      if (spawnSync("squeue", ["--version"]).error !== undefined) {
        context.skip("squeue is not on the PATH");
      }
      const conf = join(tmpdir(), `baton-no-such-dir-${process.pid}`, "slurm.conf");
      const commands = nodeSlurmCommands({
        timeoutMs: 4000,
        env: { ...process.env, SLURM_CONF: conf },
      });
      const error = await commands.queue("baton-x").then(
        () => undefined,
        (thrown: unknown) => thrown as SlurmError,
      );
      expect(error?.code).toBe("SLURM_TIMEOUT");
      expect(error?.message).toContain(
        `did not answer within 4000 ms and was killed, having said: squeue: error: s_p_parse_file: cannot stat file ${conf}`,
      );
      // The way to wait longer is named by its option.
      expect(error?.message).toMatch(
        /; check that slurmctld is up \(sinfo\); a Slurm that answers later than that is overloaded, and slurmPool's commandTimeoutMs waits longer for it$/,
      );
    });

    it("fails the pool with the real squeue of a machine with no usable Slurm configuration", async (context) => {
      if (spawnSync("squeue", ["--version"]).error !== undefined) {
        context.skip("squeue is not on the PATH");
      }
      const dir = mkdtempSync(join(tmpdir(), "baton-slurm-conf-"));
      dirs.push(dir);
      const conf = join(dir, "slurm.conf");
      writeFileSync(conf, "");
      const commands = nodeSlurmCommands({ env: { ...process.env, SLURM_CONF: conf } });
      const pool = start(
        new FakeSlurm(),
        { value: 1 },
        { commands, pollMs: 20, unreachableMs: 200, stopTimeoutMs: 200 },
      );
      const error = await pool.failed;
      expect(error.code).toBe("SLURM_UNREACHABLE");
      expect(error.message).toContain(
        "squeue last said: squeue: fatal: Unable to process configuration file",
      );
      await pool.stop().catch(() => {});
    });
  });

  it("fails the pool when Slurm refuses the submission", async () => {
    const slurm = new FakeSlurm(2);
    slurm.rejectSubmissions = true;
    const pool = start(slurm, { value: 1 });
    const error = await pool.failed;
    expect(error.code).toBe("SBATCH_REJECTED");
    expect(error.message).toContain("invalid partition");
    expect(error.message).not.toContain("--max-workers");
  });

  it("says nothing of many allocations at once when Slurm refuses a submission of many for another cause", async () => {
    const slurm = new FakeSlurm(2);
    slurm.rejectSubmissions = true;
    const pool = start(slurm, { value: 4 }, { maxWorkers: 4 });
    const error = await pool.failed;
    expect(slurm.submissions[0]!.count).toBe(4);
    expect(error.message).toBe(
      "Slurm refused the pool's allocations: sbatch exited with code 1: invalid partition. Check --partition and --slurm-opt. The partitions Slurm lists here: debug (its default).",
    );
  });

  it("lists the partitions Slurm has when it refuses the one asked for, and not when sinfo fails", async () => {
    const slurm = new FakeSlurm(2);
    slurm.rejectSubmissions = true;
    slurm.rejection =
      "sbatch exited with code 1: sbatch: error: invalid partition specified: gpuu\nsbatch: error: Batch job submission failed: Invalid partition name specified";
    slurm.partitionNames = ["debug*", "gpu"];
    const error = await start(slurm, { value: 1 }, { partition: "gpuu" }).failed;
    expect(error.message).toBe(
      `Slurm refused the pool's allocations: ${slurm.rejection}. Check --partition and --slurm-opt. The partitions Slurm lists here: debug (its default), gpu.`,
    );
    slurm.partitionNames = undefined;
    const unlisted = await start(slurm, { value: 1 }, { partition: "gpuu" }).failed;
    expect(unlisted.message).toBe(
      `Slurm refused the pool's allocations: ${slurm.rejection}. Check --partition and --slurm-opt.`,
    );
  });

  it("says to ask for fewer at once when Slurm refuses a submission of many allocations", async () => {
    for (const array of [true, false]) {
      const slurm = new FakeSlurm(2);
      slurm.rejectSubmissions = true;
      slurm.rejection = array
        ? "sbatch: error: Batch job submission failed: Invalid job array specification"
        : "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)";
      const pool = start(slurm, { value: 1200 }, { maxWorkers: 1200, array });
      const error = await pool.failed;
      expect(error.code).toBe("SBATCH_REJECTED");
      expect(error.message).toBe(
        `Slurm refused the pool's allocations: ${slurm.rejection}. Check --partition and --slurm-opt, or ask for fewer allocations at once with --max-workers (maxWorkers): this submission asked for 1200${array ? " as one job array" : ""}, which a limit of the cluster's (MaxArraySize, MaxSubmitJobs) may refuse.`,
      );
    }
  });

  it("stop cancels what is left and resolves once the queue confirms it", async () => {
    const slurm = new FakeSlurm(2);
    const pool = start(slurm, { value: 3 });
    await until(() => pool.allocations().length === 3, "three allocations");
    await polls(pool, 1);
    slurm.failingQueues = 3;
    await pool.stop();
    expect(slurm.active()).toEqual([]);
    expect(slurm.cancels[0]).toMatchObject({ ids: ["100_2"], pendingOnly: false });
    expect(pool.allocations()).toEqual([]);
    expect(() => statSync(pool.script)).toThrow();
  });

  it("settles unstarted array tasks that Slurm lists under their array's id once they end", async () => {
    // Slurm keeps the tasks of an array that have not started in the array's own record: one
    // scancel of two of them ends that record, which squeue then lists as `100` (CANCELLED),
    // and `scontrol show job 100_2` answers "Job 100_2 not found".
    const slurm = new FakeSlurm(1);
    const demand = { value: 3 };
    const pool = start(slurm, demand);
    await until(() => pool.allocations().length === 3, "three allocations");
    await polls(pool, 1);
    for (const id of ["100_1", "100_2"]) slurm.unsplit.add(id);
    demand.value = 1;
    await until(() => slurm.inState("CANCELLED").length === 2, "two cancelled");
    await polls(pool, 3);
    expect(pool.allocations().map((a) => a.id)).toEqual(["100_0"]);
    // Counted as ended, they leave room: demand rising again submits anew.
    demand.value = 2;
    await until(() => slurm.submissions.length === 2, "a new submission");
    slurm.finish("100_0", "COMPLETED");
    let failed = false;
    void pool.failed.then(() => (failed = true));
    await pool.stop();
    expect(failed).toBe(false);
    expect(slurm.active()).toEqual([]);
  });

  it("stop cancels unstarted array tasks together and confirms them ended", async () => {
    const slurm = new FakeSlurm(1);
    const pool = start(slurm, { value: 3 });
    await until(() => pool.allocations().length === 3, "three allocations");
    await polls(pool, 1);
    for (const id of ["100_1", "100_2"]) slurm.unsplit.add(id);
    slurm.finish("100_0", "COMPLETED");
    await pool.stop();
    expect(slurm.cancels[0]).toMatchObject({ ids: ["100_1", "100_2"], pendingOnly: false });
    expect(pool.allocations()).toEqual([]);
  });

  it("stop leaves running allocations their grace to end on their own", async () => {
    const slurm = new FakeSlurm(2);
    const pool = start(slurm, { value: 2 }, { graceMs: 5000 });
    await until(() => slurm.inState("RUNNING").length === 2, "two running");
    const stopped = pool.stop();
    await new Promise((resolve) => setTimeout(resolve, 30));
    slurm.finish("100_0", "COMPLETED");
    slurm.finish("100_1", "COMPLETED");
    await stopped;
    expect(slurm.cancels).toEqual([]);
  });

  it.each([
    [
      "whose worker never joined, and gives the one that joined its grace",
      // Allocation 100_2's first worker died before joining; its restart joined.
      { joined: (worker: string) => ["slurm-100_0", "slurm-100_2.2"].includes(worker) },
    ],
    [
      "whose every joined worker the coordinator gave up on",
      // 100_1's worker was closed for an expired lease (or its link broke) and nothing of that
      // allocation joined again; 100_2's first worker was lost too, but its restart joined.
      {
        joined: (worker: string) =>
          ["slurm-100_0", "slurm-100_1", "slurm-100_2", "slurm-100_2.2"].includes(worker),
        gaveUpOn: (worker: string) => ["slurm-100_1", "slurm-100_2"].includes(worker),
      },
    ],
  ])("stop cancels at once the allocations %s", async (_, coordinator) => {
    const slurm = new FakeSlurm(3);
    const pool = start(slurm, { value: 3 }, { graceMs: 5000 }, coordinator);
    await until(() => slurm.inState("RUNNING").length === 3, "three running");
    await polls(pool, 1);
    const stopped = pool.stop();
    await until(() => slurm.cancels.length > 0, "a cancel", 1000);
    expect(slurm.cancels).toEqual([{ ids: ["100_1"], pendingOnly: false, states: ["RUNNING"] }]);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(slurm.inState("RUNNING")).toEqual(["100_0", "100_2"]);
    slurm.finish("100_0", "COMPLETED");
    slurm.finish("100_2", "COMPLETED");
    await stopped;
    expect(slurm.cancels).toHaveLength(1);
    expect(slurm.active()).toEqual([]);
  });

  it.each([
    ["at once when no abort grace is left", undefined, 0],
    ["once what is left of abortGraceMs since the cancel's abort has passed", 400, 200],
  ])(
    "stop cancels the allocation whose worker's handler ignored its abort through a cancel's grace %s, and gives the others theirs",
    async (_, abortGraceMs, afterMs) => {
      const slurm = new FakeSlurm(3);
      const warnings: string[] = [];
      const logger = pino(
        { level: "warn" },
        { write: (line: string) => warnings.push((JSON.parse(line) as { msg: string }).msg) },
      );
      const pool = start(
        slurm,
        { value: 3 },
        { graceMs: 5000, abortGraceMs },
        { joined: () => true, logger },
      );
      await until(() => slurm.inState("RUNNING").length === 3, "three running");
      await polls(pool, 1);
      const stoppedAt = Date.now();
      // 100_1's first worker died and its restart runs the stuck handler.
      const stopped = pool.stop({
        stuck: {
          workers: new Map([["slurm-100_1.2", { id: "leaf-1", kind: "leaf" }]]),
          abortedMsAgo: 200,
        },
      });
      await until(() => slurm.kills.length > 0, "a kill", 1000);
      expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(afterMs);
      expect(slurm.kills).toEqual([{ ids: ["100_1"], states: ["RUNNING"] }]);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(slurm.inState("RUNNING")).toEqual(["100_0", "100_2"]);
      slurm.finish("100_0", "COMPLETED");
      slurm.finish("100_2", "COMPLETED");
      await stopped;
      expect(Date.now() - stoppedAt).toBeLessThan(4000);
      expect(slurm.kills).toHaveLength(1);
      expect(slurm.cancels).toEqual([]);
      expect(warnings).toEqual([
        "ending the Slurm allocation 100_1 at once (SIGKILL to its batch step): the handler of job leaf-1 (leaf) on its worker slurm-100_1.2 ignored its abort through the cancel's grace (200 ms), and would hold the node until it returns",
      ]);
    },
  );

  it("stop gives its grace to an allocation it last saw pending whose worker has joined since", async () => {
    const slurm = new FakeSlurm(1);
    slurm.startsOnQueue = false;
    // One poll only: the pool never sees the allocation start.
    const pool = start(
      slurm,
      { value: 1 },
      { graceMs: 5000, pollMs: 60_000 },
      { joined: (worker) => worker === "slurm-100_0" },
    );
    await until(() => pool.allocations().length === 1, "one allocation");
    expect(pool.allocations()[0]!.state).toBe("pending");
    slurm.startPending();
    const stopped = pool.stop();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(slurm.cancels).toEqual([]);
    slurm.finish("100_0", "COMPLETED");
    await stopped;
    expect(slurm.cancels).toEqual([]);
  });

  it("stop rejects naming the allocations it could not see end", async () => {
    const slurm = new FakeSlurm(2);
    const pool = start(slurm, { value: 1 }, { stopTimeoutMs: 100 });
    await until(() => slurm.inState("RUNNING").length === 1, "one running");
    slurm.failingQueues = 1_000_000;
    const error = await pool.stop().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SlurmError);
    expect((error as SlurmError).code).toBe("STOP_UNCONFIRMED");
    expect((error as SlurmError).allocations).toEqual(["100_0"]);
    slurm.failingQueues = 0;
  });
});

function baseRequest(pool: SlurmPool) {
  return {
    script: pool.script,
    name: pool.name,
    count: 1,
    array: true,
    logsDir: "/tmp",
    options: [],
  };
}
