import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { createEngine } from "../../src/runtime/engine.ts";
import { localPool } from "../../src/runtime/localPool.ts";
import {
  checkWorkerCount,
  defaultWorkerProcesses,
  machineLimits,
  workerCountLimit,
} from "../../src/runtime/workerCountLimit.ts";

const big = { cores: 2, memoryMiB: 24_105, taskLimit: 96_369 };

describe("workerCountLimit", () => {
  it("bounds worker processes by memory, 64 MiB each, when ulimit -u allows more", () => {
    expect(workerCountLimit("processes", big)).toEqual({
      most: 376,
      why: "each worker process takes at least 64 MiB of memory, and this machine has 24105 MiB",
    });
    expect(workerCountLimit("processes", { ...big, taskLimit: undefined }).most).toBe(376);
  });

  it("bounds worker processes by ulimit -u, 12 threads each, when it allows fewer", () => {
    expect(workerCountLimit("processes", { ...big, taskLimit: 1_000 })).toEqual({
      most: 83,
      why: "each worker process runs 12 threads, and ulimit -u allows this user 1000 processes and threads in all",
    });
  });

  it("bounds in-process workers by memory alone, 32 KiB each", () => {
    expect(workerCountLimit("inProcess", { ...big, taskLimit: 12 }).most).toBe(771_360);
  });

  it("bounds workers connected from elsewhere by this process's ulimit -n, 64 files kept for its own, or Linux's nr_open when unknown", () => {
    expect(workerCountLimit("connected", { ...big, openFiles: 20_000 })).toEqual({
      most: 19_936,
      why: "each holds a connection to this coordinator, an open file, and ulimit -n allows this process 20000, 64 of them kept for its own",
    });
    expect(workerCountLimit("connected", big)).toEqual({
      most: 1_048_512,
      why: "each holds a connection to this coordinator, an open file, and a process holds at most 1048576 (Linux's fs.nr_open), 64 of them kept for its own",
    });
    expect(() =>
      checkWorkerCount("--max-workers", 1e12, "connected", { ...big, openFiles: 1_024 }),
    ).toThrow(
      "--max-workers 1000000000000 is more workers than this coordinator can hold connections to: at most 960, since each holds a connection to this coordinator, an open file, and ulimit -n allows this process 1024, 64 of them kept for its own; give 960 or fewer (a higher hard ulimit -n allows more: Node.js raises its own to it)",
    );
    expect(() =>
      checkWorkerCount("--max-workers", 960, "connected", { ...big, openFiles: 1_024 }),
    ).not.toThrow();
  });

  it("refuses more workers than the bound, saying the most and why, and takes the bound itself", () => {
    expect(() => checkWorkerCount("--workers", 376, "processes", big)).not.toThrow();
    expect(() => checkWorkerCount("--workers", 377, "processes", big)).toThrow(ConfigError);
    expect(() => checkWorkerCount("--workers", 100_000, "processes", big)).toThrow(
      "--workers 100000 is more worker processes than this machine can run: at most 376, since each worker process takes at least 64 MiB of memory, and this machine has 24105 MiB; give 376 or fewer, and run more on other machines (baton worker, or Slurm)",
    );
    expect(() => checkWorkerCount("--workers", 800_000, "inProcess", big)).toThrow(
      "--workers 800000 is more in-process workers than this machine can run: at most 771360, since each in-process worker takes at least 32 KiB of memory, and this machine has 24105 MiB; give 771360 or fewer",
    );
  });

  it("starts one worker process per core by default, fewer when the memory holds fewer", () => {
    expect(defaultWorkerProcesses(big)).toBe(2);
    // A 1 GiB container on a 64-core host: 16 workers, not 64 that the memory cannot hold.
    expect(defaultWorkerProcesses({ cores: 64, memoryMiB: 1_024, taskLimit: undefined })).toBe(16);
  });

  it("reads this machine's cores, memory, ulimit -u and ulimit -n", () => {
    const machine = machineLimits();
    expect(machine.cores).toBeGreaterThanOrEqual(1);
    expect(machine.memoryMiB).toBeGreaterThan(0);
    expect(machine.taskLimit === undefined || machine.taskLimit > 0).toBe(true);
    if (process.platform === "linux") expect(machine.openFiles).toBeGreaterThan(0);
  });
});

describe("the library refuses worker counts this machine cannot run", () => {
  const most = workerCountLimit("processes").most;

  it("localPool refuses a count above the bound, or not a whole number of 0 or more, at once", () => {
    expect(() => localPool({ jobsModule: "jobs.ts", count: most + 1 })).toThrow(
      `localPool: count ${most + 1} is more worker processes than this machine can run: at most ${most}, since `,
    );
    expect(() => localPool({ jobsModule: "jobs.ts", count: -1 })).toThrow(
      "localPool: count must be a whole number of 0 or more, not -1",
    );
    expect(() => localPool({ jobsModule: "jobs.ts", count: 1.5 })).toThrow(ConfigError);
    expect(localPool({ jobsModule: "jobs.ts", count: 0 }).offers).toEqual([]);
  });

  it("createEngine refuses more in-process workers than the memory holds", () => {
    const inProcess = workerCountLimit("inProcess").most;
    const jobs = { noop: () => null };
    expect(() => createEngine({ jobs, workers: inProcess + 1 })).toThrow(
      `createEngine: workers ${inProcess + 1} is more in-process workers than this machine can run: at most ${inProcess}`,
    );
    expect(() => createEngine({ jobs, workers: { count: inProcess + 1 } })).toThrow(
      `createEngine: workers.count ${inProcess + 1} is more in-process workers`,
    );
  });
});
