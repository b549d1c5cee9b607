/**
 * The local pool with real processes: test/fixtures/fakeWorker.mjs stands in for
 * `baton worker`. Every process the pool starts goes through a recording Procs, the pids of
 * others (a worker's child, a worker behind a wrapper) are learned from the logs, and
 * afterEach SIGKILLs by pid whatever a test left running, even when the test failed, and
 * removes the cgroups this process's pools made (where this machine contains them, as the
 * test machine does: each worker in a cgroup of its own).
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, PoolError } from "../../src/errors.ts";
import {
  type LocalPool,
  type LocalPoolOptions,
  startLocalPool,
  type WorkerReplaced,
  type WorkerStrays,
} from "../../src/runtime/localPool.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcHandle, Procs } from "../../src/runtime/ports.ts";
import { workerPoolCgroupOwner } from "../../src/runtime/workerPoolCgroup.ts";
import { canContain } from "../fixtures/canContain.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const FAKE_WORKER = fileURLToPath(new URL("../fixtures/fakeWorker.mjs", import.meta.url));

const real = nodeProcs();
/** Processes started through `procs` and not yet reaped. */
const started = new Set<ProcHandle>();
const procs: Procs = {
  ...real,
  spawn(options) {
    const handle = real.spawn(options);
    started.add(handle);
    void handle.exited.then(() => started.delete(handle));
    return handle;
  },
};
const pools: LocalPool[] = [];
/** Pids a test learned from a log: processes the pool did not start itself. */
const learned = new Set<number>();

/** Whether this machine lets this user contain processes, so that the pools' workers are. */
const contained = canContain(real, "pool");

/** The pools' cgroups of this process there are now. */
function ownPoolCgroups(): string[] {
  return (real.containment?.list() ?? []).filter(
    (cgroup) => workerPoolCgroupOwner(basename(cgroup)) === process.pid,
  );
}

afterEach(async () => {
  // Stopping first means nothing killed below is replaced.
  for (const pool of pools.splice(0)) void pool.stop(0).catch(() => {});
  const left = [...started];
  for (const handle of left) real.signal(handle.pid, "SIGKILL");
  await Promise.all(left.map((handle) => handle.exited));
  for (const pid of learned) if (!dead(pid)) real.signal(pid, "SIGKILL");
  learned.clear();
  const { containment } = real;
  for (const cgroup of ownPoolCgroups()) containment?.kill(cgroup);
  await until(
    () => ownPoolCgroups().every((cgroup) => containment?.remove(cgroup)),
    "the pools' cgroups to be removed",
  );
});

/** A pool of fake workers; `mode(name)` gives each worker's mode and argument. */
async function pool(
  mode: (name: string) => string[],
  options: Partial<LocalPoolOptions> = {},
): Promise<{ pool: LocalPool; logsDir: string; replaced: WorkerReplaced[] }> {
  const logsDir = join(tempDir(), "logs");
  const started = startLocalPool({
    argvFor: (name) => [process.execPath, FAKE_WORKER, name, ...mode(name)],
    logsDir,
    procs,
    ...options,
  });
  pools.push(started);
  const replaced: WorkerReplaced[] = [];
  started.on("replaced", (event) => replaced.push(event));
  return { pool: started, logsDir, replaced };
}

/** Polls until `check` holds, failing after `ms`. */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function log(logsDir: string, n: number): Promise<string> {
  return readFile(join(logsDir, `worker-${n}.log`), "utf8").catch(() => "");
}

/** Waits until worker slot `n`'s log says `text`. */
function logSays(logsDir: string, n: number, text: string): Promise<void> {
  return until(async () => (await log(logsDir, n)).includes(text), `worker-${n}.log: ${text}`);
}

/** The pid worker slot `n`'s log gives after `text`, once it does; stopped in afterEach. */
async function pidIn(logsDir: string, n: number, text: string): Promise<number> {
  await logSays(logsDir, n, text);
  const pid = Number(new RegExp(`${text}(\\d+)`).exec(await log(logsDir, n))?.[1]);
  learned.add(pid);
  return pid;
}

/** Gone from the process table, or a zombie: either way it runs nothing. */
function dead(pid: number): boolean {
  const state = real.inspect(pid)?.state;
  return state === undefined || state === "zombie" || state === "dead";
}

/** Whether `promise` has settled, without waiting for it. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol("pending");
  return (await Promise.race([promise, Promise.resolve(pending)])) !== pending;
}

describe("startLocalPool", () => {
  it("starts maxWorkers named workers, each logging to its own file, with the environment", async () => {
    process.env.FAKE_INHERITED = "inherited";
    const { pool: workers, logsDir } = await pool(() => ["sleep"], {
      maxWorkers: 3,
      env: { FAKE_EXTRA: "extra" },
    }).finally(() => delete process.env.FAKE_INHERITED);

    const pids = workers.pids();
    expect(pids).toHaveLength(3);
    expect(new Set(pids).size).toBe(3);
    for (const pid of pids) expect(dead(pid)).toBe(false);
    for (const n of [1, 2, 3]) {
      await logSays(logsDir, n, `local-${n} ready pid`);
      const text = await log(logsDir, n);
      expect(text).toContain(`starting local-${n}\n`);
      expect(text).toContain("FAKE_EXTRA=extra FAKE_INHERITED=inherited");
    }
    const argv = real.inspect(pids[0]!)?.argv;
    expect(argv).toEqual([process.execPath, FAKE_WORKER, "local-1", "sleep"]);

    await workers.stop(0);
    for (const pid of pids) expect(dead(pid)).toBe(true);
  });

  it("replaces a worker killed with SIGKILL by the next generation", async () => {
    const { pool: workers, logsDir, replaced } = await pool(() => ["sleep"], { maxWorkers: 2 });
    const [first, second] = workers.pids();
    await logSays(logsDir, 2, "local-2 ready");

    real.signal(second!, "SIGKILL");
    await until(() => replaced.length === 1, "a replacement");
    const [event] = replaced;
    expect(event).toMatchObject({
      worker: "local-2.2",
      previous: { worker: "local-2", pid: second, exit: { code: null, signal: "SIGKILL" } },
      logFile: join(logsDir, "worker-2.log"),
    });
    expect(event!.pid).not.toBe(second);
    expect(workers.pids()).toEqual([first, event!.pid]);
    expect(dead(second!)).toBe(true);
    await logSays(logsDir, 2, "local-2.2 ready");
    expect(await log(logsDir, 2)).toContain(
      `starting local-2.2 (replaces local-2, pid ${second}, which was killed by SIGKILL)`,
    );

    // The third generation counts on from the second.
    real.signal(event!.pid, "SIGKILL");
    await until(() => replaced.length === 2, "a second replacement");
    expect(replaced[1]!.worker).toBe("local-2.3");
    expect(await settled(workers.failed)).toBe(false);
  });

  it("stops what a killed worker left in its process group, with SIGKILL for a child that ignores SIGTERM", async () => {
    const {
      pool: workers,
      logsDir,
      replaced,
    } = await pool((name) => [name === "local-1" ? "stray-child" : "sleep"], { maxWorkers: 1 });
    const strays: WorkerStrays[] = [];
    workers.on("strays", (event) => strays.push(event));
    const child = await pidIn(logsDir, 1, "local-1's child ready pid ");
    const [worker] = workers.pids();

    real.signal(worker!, "SIGKILL");
    await until(() => replaced.length === 1, "a replacement");
    await until(() => strays.length === 1, "the worker's child to be stopped");
    expect(strays[0]).toEqual({
      worker: "local-1",
      pid: worker,
      ...(contained && {
        cgroup: expect.stringMatching(/\/baton\/workers-logs@\d+\.\d+\/local-1$/),
      }),
      strays: [{ pid: child, program: process.execPath, ended: "SIGKILL", escaped: false }],
      logFile: join(logsDir, "worker-1.log"),
    });
    expect(dead(child)).toBe(true);
    const swept = contained
      ? `its process group and its cgroup ${strays[0]!.cgroup}`
      : "its process group (not contained: one that left it was not looked for)";
    expect(await log(logsDir, 1)).toContain(
      `local-1 (pid ${worker}) had exited, leaving processes in ${swept}: ${child} (${process.execPath}) ended by SIGKILL`,
    );
    await logSays(logsDir, 1, "local-1.2 ready");
  });

  it.skipIf(!contained)(
    "stops a child that left the worker's session, found through the worker's cgroup (needs a delegated cgroup v2)",
    async () => {
      const { pool: workers, logsDir } = await pool(() => ["detached-child"], { maxWorkers: 1 });
      const strays: WorkerStrays[] = [];
      workers.on("strays", (event) => strays.push(event));
      const child = await pidIn(logsDir, 1, "local-1's detached child ready pid ");
      const [worker] = workers.pids();
      expect(real.inspect(child)?.pgid).not.toBe(worker);
      const [cgroup] = ownPoolCgroups();
      const members = cgroup === undefined ? [] : real.containment!.members(cgroup);

      await workers.stop(0);
      expect(dead(child)).toBe(true);
      expect(members?.sort()).toEqual([worker, child].sort());
      expect(strays).toEqual([
        {
          worker: "local-1",
          pid: worker,
          cgroup: `${cgroup}/local-1`,
          strays: [{ pid: child, program: process.execPath, ended: "SIGKILL", escaped: true }],
          logFile: join(logsDir, "worker-1.log"),
        },
      ]);
      expect(await log(logsDir, 1)).toContain(
        `leaving processes in its process group and its cgroup ${cgroup}/local-1: ${child} (${process.execPath}, outside its process group) ended by SIGKILL`,
      );
      expect(real.containment!.members(cgroup!)).toBeUndefined();
    },
  );

  it("does not replace a worker that exits 0, which the coordinator dismissed", async () => {
    const dir = tempDir();
    const closed = join(dir, "closed");
    const { pool: workers, replaced } = await pool(() => ["until-file", closed], {
      maxWorkers: 2,
    });
    await writeFile(closed, "");
    await until(() => workers.pids().length === 0, "both workers to exit");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(workers.pids()).toEqual([]);
    expect(replaced).toEqual([]);
  });

  it("fails on a crash loop, naming the worker, its exit, the count and its log's tail", async () => {
    const {
      pool: workers,
      logsDir,
      replaced,
    } = await pool(() => ["exit", "3"], {
      maxWorkers: 1,
      maxRestarts: 2,
    });
    const events: PoolError[] = [];
    workers.on("failed", (error) => events.push(error));

    const error = await workers.failed;
    expect(error).toBeInstanceOf(PoolError);
    expect(error.code).toBe("WORKER_CRASH_LOOP");
    expect(error.worker).toBe("local-1.3");
    const logFile = join(logsDir, "worker-1.log");
    expect(error.logFile).toBe(logFile);
    expect(error.message).toMatch(/^worker local-1\.3 \(pid \d+\) exited with code 3: 3 deaths/);
    expect(error.message).toContain("within 60000 ms, more than maxRestarts (2)");
    // What to do names the option and where it is: `baton run`, where most meet this, has none.
    expect(error.message).toContain(
      "only if these deaths are expected, give localPool a higher maxRestarts (baton run has no flag for it: fix what ends its workers)",
    );
    expect(error.message).toContain(logFile);
    // The last 20 lines: lines 12 to 30 and the failure, of the last generation only.
    expect(error.message).toContain("Last 20 lines of the log:\n  | local-1.3 line 12\n");
    expect(error.message).toContain("  | local-1.3 line 30\n  | local-1.3 failing");
    expect(error.message).not.toContain("line 11\n");
    expect(events).toEqual([error]);
    expect(replaced.map((event) => event.worker)).toEqual(["local-1.2", "local-1.3"]);

    // No more replacements after the failure.
    await until(() => workers.pids().length === 0, "the last worker to exit");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(workers.pids()).toEqual([]);
    expect(replaced).toHaveLength(2);
  });

  it("quotes only what the last worker wrote, not its predecessor's lines in the shared log", async () => {
    // local-1 says it is ready and exits 3; its replacement exits 2 (final) writing nothing.
    const { pool: workers, logsDir } = await pool(() => [], {
      maxWorkers: 1,
      finalExitCodes: [2],
      argvFor: (name) =>
        name === "local-1"
          ? [process.execPath, FAKE_WORKER, name, "exit-after", "0"]
          : [process.execPath, "-e", "process.exit(2)"],
    });
    const error = await workers.failed;
    expect(error.code).toBe("WORKER_CANNOT_START");
    expect(error.worker).toBe("local-1.2");
    expect(error.message).toMatch(/says why\. \(It wrote nothing to its log\.\)$/);
    // The log does hold local-1's lines, which the message left out.
    expect(await log(logsDir, 1)).toContain("local-1 ready pid");
  });

  it("forgets deaths older than the window", async () => {
    const { pool: workers, replaced } = await pool(() => ["exit-after", "150"], {
      maxWorkers: 1,
      maxRestarts: 1,
      windowMs: 100,
    });
    await until(() => replaced.length >= 4, "four replacements");
    expect(await settled(workers.failed)).toBe(false);
    expect(replaced.map((event) => event.worker).slice(0, 4)).toEqual([
      "local-1.2",
      "local-1.3",
      "local-1.4",
      "local-1.5",
    ]);
  });

  it("fails with WORKER_SPAWN naming the log file it cannot open, why and what to do", async () => {
    const logsDir = join(tempDir(), "logs");
    // A directory where worker 1's log goes: opening it to append fails (EISDIR).
    await mkdir(join(logsDir, "worker-1.log"), { recursive: true });
    const workers = startLocalPool({ argvFor: () => [FAKE_WORKER], logsDir, maxWorkers: 1, procs });
    pools.push(workers);
    const error = await workers.failed;
    expect(error.code).toBe("WORKER_SPAWN");
    expect(error.message).toBe(
      `the local pool could not start worker local-1: ${join(logsDir, "worker-1.log")}: illegal operation on a directory (EISDIR); give the workers' logs (logsDir) another directory`,
    );
    expect(workers.pids()).toEqual([]);
    await workers.stop();
  });

  it("fails with WORKER_SPAWN when a worker cannot be started", async () => {
    const dir = tempDir();
    const logsDir = join(dir, "logs");
    const workers = startLocalPool({
      argvFor: () => [join(dir, "no-such-program")],
      logsDir,
      maxWorkers: 2,
      procs,
    });
    pools.push(workers);
    const events: PoolError[] = [];
    workers.on("failed", (error) => events.push(error));

    const error = await workers.failed;
    expect(error.code).toBe("WORKER_SPAWN");
    expect(error.worker).toBe("local-1");
    expect(error.message).toContain("could not start worker local-1");
    expect(events).toEqual([error]);
    expect(workers.pids()).toEqual([]);
    await workers.stop();
  });

  it.skipIf(!existsSync("/dev/full"))(
    "starts a worker when its log has no room for the pool's line (a full disk)",
    async () => {
      const logsDir = join(tempDir(), "logs");
      await mkdir(logsDir);
      // Every write to /dev/full fails with ENOSPC; opening it to append, as spawn does, works.
      await symlink("/dev/full", join(logsDir, "worker-1.log"));
      const workers = startLocalPool({
        argvFor: (name) => [process.execPath, FAKE_WORKER, name, "sleep"],
        logsDir,
        maxWorkers: 1,
        procs,
      });
      pools.push(workers);

      expect(workers.pids()).toHaveLength(1);
      await new Promise((resolve) => setImmediate(resolve));
      expect(await settled(workers.failed)).toBe(false);
      await workers.stop(0);
    },
  );

  it("refuses settings it cannot use", () => {
    const base = { argvFor: (): [string] => ["true"], logsDir: "/nonexistent", procs };
    for (const [settings, message] of [
      [{ maxWorkers: 0 }, "startLocalPool: maxWorkers must be a whole number of 1 or more, not 0"],
      [
        { maxWorkers: 1.5 },
        "startLocalPool: maxWorkers must be a whole number of 1 or more, not 1.5",
      ],
      [
        { maxWorkers: "2" },
        'startLocalPool: maxWorkers must be a whole number of 1 or more, not "2"',
      ],
      [
        { maxRestarts: -1 },
        "startLocalPool: maxRestarts must be a whole number of 0 or more, not -1",
      ],
      [{ windowMs: 0 }, "startLocalPool: windowMs must be a whole number of 1 or more, not 0"],
    ] as const) {
      const refused = () => startLocalPool({ ...base, ...(settings as object) });
      expect(refused).toThrow(ConfigError);
      expect(refused).toThrow(message);
    }
    expect(started.size).toBe(0);
  });
});

describe("LocalPool.stop", () => {
  it("returns as soon as the workers exit on their own, without signalling them", async () => {
    const dir = tempDir();
    const closed = join(dir, "closed");
    const { pool: workers, logsDir } = await pool(() => ["until-file", closed], {
      maxWorkers: 2,
    });
    await logSays(logsDir, 1, "local-1 ready");
    await logSays(logsDir, 2, "local-2 ready");
    const pids = workers.pids();

    const begin = Date.now();
    const stopped = workers.stop(5000);
    await writeFile(closed, ""); // the coordinator closes their connections
    await stopped;
    expect(Date.now() - begin).toBeLessThan(2000);
    for (const pid of pids) expect(dead(pid)).toBe(true);
    for (const n of [1, 2]) expect(await log(logsDir, n)).not.toContain("SIGTERM");
  });

  it("sends SIGTERM at once to a worker that never joined, and gives the one that joined its grace period", async () => {
    const dir = tempDir();
    const closed = join(dir, "closed");
    const { pool: workers, logsDir } = await pool(() => ["until-file", closed], {
      maxWorkers: 2,
      joined: (name) => name === "local-1",
    });
    await logSays(logsDir, 1, "local-1 ready");
    await logSays(logsDir, 2, "local-2 ready");
    const [first, second] = workers.pids() as [number, number];

    const stopped = workers.stop(5000);
    await until(() => dead(second), "local-2 to be stopped", 2000);
    expect(await log(logsDir, 2)).toContain("local-2 got SIGTERM");
    expect(dead(first)).toBe(false);
    expect(await settled(stopped)).toBe(false);
    await writeFile(closed, ""); // the coordinator closes local-1's connection
    await stopped;
    expect(dead(first)).toBe(true);
    expect(await log(logsDir, 1)).not.toContain("SIGTERM");
  });

  it("stops at once the workers the coordinator gave up on, with SIGKILL 2 s later for one that is stopped, while the others get their grace", async () => {
    const dir = tempDir();
    const closed = join(dir, "closed");
    const { pool: workers, logsDir } = await pool(
      (name) => (name === "local-3" ? ["until-file", closed] : ["sleep"]),
      { maxWorkers: 3, gaveUpOn: (name) => name !== "local-3" },
    );
    for (const n of [1, 2, 3]) await logSays(logsDir, n, `local-${n} ready`);
    const [frozen, stubborn, third] = workers.pids() as [number, number, number];
    const frozenExit = [...started].find((handle) => handle.pid === frozen)!.exited;
    // Closed for its silence: a stopped process, which only SIGKILL ends.
    process.kill(frozen, "SIGSTOP");

    const stopped = workers.stop(60_000);
    await logSays(logsDir, 2, "local-2 got SIGTERM");
    expect(await frozenExit).toEqual({ code: null, signal: "SIGKILL" });
    expect(dead(stubborn)).toBe(true);
    expect(dead(third)).toBe(false);
    expect(await settled(stopped)).toBe(false);
    await writeFile(closed, ""); // the coordinator closes local-3's connection
    await stopped;
    expect(dead(third)).toBe(true);
    expect(await log(logsDir, 3)).not.toContain("SIGTERM");
  });

  it("kills the stuck workers with SIGKILL once what is left of their grace has passed, while the others get theirs", async () => {
    const dir = tempDir();
    const closed = join(dir, "closed");
    const warnings: {
      worker: string;
      workerPid: number;
      job: string;
      kind: string;
      msg: string;
    }[] = [];
    const logger = pino(
      { level: "warn" },
      { write: (line: string) => warnings.push(JSON.parse(line)) },
    );
    const { pool: workers, logsDir } = await pool(
      (name) => (name === "local-3" ? ["until-file", closed] : ["sleep"]),
      { maxWorkers: 3, logger },
    );
    for (const n of [1, 2, 3]) await logSays(logsDir, n, `local-${n} ready`);
    const [first, second, third] = workers.pids() as [number, number, number];
    const exits = [first, second].map(
      (pid) => [...started].find((handle) => handle.pid === pid)!.exited,
    );

    const begin = Date.now();
    const stopped = workers.stop(60_000, {
      workers: new Map([
        ["local-1", { id: "leaf-1", kind: "leaf" }],
        ["local-2", { id: "leaf-2", kind: "leaf" }],
      ]),
      afterMs: 300,
      abortedMsAgo: 1000,
    });
    expect(await Promise.all(exits)).toEqual([
      { code: null, signal: "SIGKILL" },
      { code: null, signal: "SIGKILL" },
    ]);
    expect(Date.now() - begin).toBeGreaterThanOrEqual(290);
    expect(dead(third)).toBe(false);
    expect(await settled(stopped)).toBe(false);
    await writeFile(closed, ""); // the coordinator closes local-3's connection
    await stopped;
    expect(dead(third)).toBe(true);
    for (const n of [1, 2, 3]) expect(await log(logsDir, n)).not.toContain("got SIGTERM");
    // Each killed worker's log ends saying why, as does the run's; not the third's.
    const why = (n: number, pid: number) =>
      `local-${n} (pid ${pid}) killed with SIGKILL: the handler of job leaf-${n} (leaf) ignored its abort through the cancel's grace (1000 ms) and the 300 ms left of its abort grace, and a SIGTERM would have it wait for that handler again`;
    for (const [n, pid] of [
      [1, first],
      [2, second],
    ] as const) {
      const lines = (await log(logsDir, n)).trimEnd().split("\n");
      expect(lines.at(-1)).toMatch(/^\[baton pool \d{4}-\d\d-\d\dT[\d:.]+Z\] /);
      expect(lines.at(-1)!.slice(lines.at(-1)!.indexOf("] ") + 2)).toBe(why(n, pid));
    }
    expect(await log(logsDir, 3)).not.toContain("killed");
    expect(
      warnings.map(({ worker, workerPid, job, kind, msg }) => ({
        worker,
        workerPid,
        job,
        kind,
        msg,
      })),
    ).toEqual(
      expect.arrayContaining([
        {
          worker: "local-1",
          workerPid: first,
          job: "leaf-1",
          kind: "leaf",
          msg: `worker ${why(1, first)}`,
        },
        {
          worker: "local-2",
          workerPid: second,
          job: "leaf-2",
          kind: "leaf",
          msg: `worker ${why(2, second)}`,
        },
      ]),
    );
  });

  it("sends SIGTERM after the grace period, and nothing is replaced", async () => {
    const { pool: workers, logsDir, replaced } = await pool(() => ["sleep"], { maxWorkers: 2 });
    await logSays(logsDir, 1, "local-1 ready");
    await logSays(logsDir, 2, "local-2 ready");
    const pids = workers.pids();

    const begin = Date.now();
    await workers.stop(200);
    const elapsed = Date.now() - begin;
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(2000);
    for (const n of [1, 2]) expect(await log(logsDir, n)).toContain(`local-${n} got SIGTERM`);
    for (const pid of pids) expect(dead(pid)).toBe(true);
    expect(workers.pids()).toEqual([]);
    expect(replaced).toEqual([]);
  });

  it("escalates to SIGKILL for a worker that ignores SIGTERM", async () => {
    const { pool: workers, logsDir } = await pool(
      (name) => [name === "local-1" ? "ignore-term" : "sleep"],
      { maxWorkers: 2 },
    );
    await logSays(logsDir, 1, "local-1 ready");
    await logSays(logsDir, 2, "local-2 ready");
    const pids = workers.pids();

    const begin = Date.now();
    await workers.stop(300);
    const elapsed = Date.now() - begin;
    expect(elapsed).toBeGreaterThanOrEqual(300 + 2000 - 10);
    expect(elapsed).toBeLessThan(300 + 2500);
    expect(await log(logsDir, 1)).toContain("local-1 ignoring SIGTERM");
    expect(await log(logsDir, 2)).toContain("local-2 got SIGTERM");
    for (const pid of pids) expect(dead(pid)).toBe(true);
    expect(started.size).toBe(0);
  });

  it("stops a worker behind a wrapper that forked it, once the wrapper has ended", async () => {
    const { pool: workers, logsDir } = await pool(() => [], {
      maxWorkers: 1,
      // The worker is not the shell's last command, so the shell forks it and waits.
      argvFor: (name) => [
        "/bin/sh",
        "-c",
        `"$0" "$1" ${name} sleep; echo wrapper done`,
        process.execPath,
        FAKE_WORKER,
      ],
    });
    const strays: WorkerStrays[] = [];
    workers.on("strays", (event) => strays.push(event));
    const worker = await pidIn(logsDir, 1, "local-1 ready pid ");
    const [wrapper] = workers.pids();
    expect(worker).not.toBe(wrapper);

    await workers.stop(0);
    expect(dead(wrapper!)).toBe(true);
    expect(dead(worker)).toBe(true);
    expect(strays).toEqual([
      {
        worker: "local-1",
        pid: wrapper,
        ...(contained && { cgroup: expect.stringMatching(/\/local-1$/) }),
        strays: [{ pid: worker, program: process.execPath, ended: "SIGTERM", escaped: false }],
        logFile: join(logsDir, "worker-1.log"),
      },
    ]);
    expect(await log(logsDir, 1)).toContain("local-1 got SIGTERM");
    expect(await log(logsDir, 1)).not.toContain("wrapper done");
  });

  it("says the exit of a command that forked the worker and ended is the command's, not the worker's", async () => {
    const {
      pool: workers,
      logsDir,
      replaced,
    } = await pool(() => [], {
      maxWorkers: 1,
      // Starts the worker in the background and exits 0 at once, as if dismissed.
      argvFor: (name) => [
        "/bin/sh",
        "-c",
        `"$0" "$1" ${name} sleep & exit 0`,
        process.execPath,
        FAKE_WORKER,
      ],
    });
    const strays: WorkerStrays[] = [];
    workers.on("strays", (event) => strays.push(event));
    await until(() => strays.length === 1, "the forked worker to be stopped");
    const [{ pid: wrapper, strays: [forked] = [] } = { pid: 0 }] = strays;
    learned.add(forked!.pid);
    expect(dead(forked!.pid)).toBe(true);

    const said = await log(logsDir, 1);
    expect(said).toContain(
      `local-1 (pid ${wrapper}) exited with code 0 (a process it started still ran: ${forked!.pid} (`,
    );
    expect(said).toContain(
      "stopped next; that exit is the worker's own only if the pool started the worker or a " +
        "command that execs it: a command that forked the worker ends with a code of its own, " +
        "and the worker's cannot be known, as only a process's parent is told it)\n",
    );
    expect(replaced).toEqual([]);
    await workers.stop(0);
  });

  it("is safe to call twice, and stops a pool whose workers are mid-replacement", async () => {
    const { pool: workers, logsDir } = await pool(() => ["sleep"], { maxWorkers: 2 });
    await logSays(logsDir, 1, "local-1 ready");
    const pids = workers.pids();
    real.signal(pids[0]!, "SIGKILL"); // dies while stopping: not replaced

    const first = workers.stop(100);
    const second = workers.stop(100);
    expect(second).toBe(first);
    await Promise.all([first, second]);
    await workers.stop();
    for (const pid of pids) expect(dead(pid)).toBe(true);
    expect(workers.pids()).toEqual([]);
    expect(started.size).toBe(0);
    expect(await log(logsDir, 1)).not.toContain("local-1.2");
  });

  it("rejects a negative grace period without stopping", async () => {
    const { pool: workers } = await pool(() => ["sleep"], { maxWorkers: 1 });
    await expect(workers.stop(-1)).rejects.toThrow(ConfigError);
    expect(workers.pids()).toHaveLength(1);
  });
});
