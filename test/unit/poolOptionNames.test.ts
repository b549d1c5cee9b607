import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { type LocalWorkersOptions, localPool } from "../../src/runtime/localPool.ts";
import { type SlurmPoolOptions, slurmPool } from "../../src/runtime/slurmPool.ts";

describe("a pool of worker processes given options it does not take", () => {
  it("refuses a misspelt name when it is made, listing the names it takes", () => {
    // `maxWorker: 64` used to be dropped without a word: the pool kept its default.
    const local = () =>
      localPool({
        jobsModule: "jobs.ts",
        count: 1,
        maxRestart: 3,
      } as unknown as LocalWorkersOptions);
    expect(local).toThrow(ConfigError);
    expect(local).toThrow(
      "localPool: unknown option maxRestart; it takes jobsModule, count, resources, maxRestarts, windowMs, handlerThread, logLevel, abortGraceMs, command, secretIn, connect",
    );
    const slurm = () =>
      slurmPool({ jobsModule: "/shared/jobs.ts", maxWorker: 64 } as unknown as SlurmPoolOptions);
    expect(slurm).toThrow(ConfigError);
    expect(slurm).toThrow("slurmPool: unknown option maxWorker; it takes jobsModule, maxWorkers,");
  });

  it.each([null, "jobs.ts", [["jobsModule", "jobs.ts"]]])(
    "refuses options that are no object (%o) instead of a TypeError from inside",
    (options) => {
      expect(() => localPool(options as unknown as LocalWorkersOptions)).toThrow(
        "localPool: the options must be an object, { jobsModule, count, … }, not",
      );
      expect(() => slurmPool(options as unknown as SlurmPoolOptions)).toThrow(
        "slurmPool: the options must be an object, { jobsModule, maxWorkers, partition, … }, not",
      );
    },
  );

  it("takes every option it documents, also given as undefined", () => {
    const local = localPool({
      jobsModule: "jobs.ts",
      count: 0,
      resources: { cpus: 1 },
      maxRestarts: 2,
      windowMs: 1000,
      handlerThread: undefined,
      logLevel: "info",
      abortGraceMs: 30_000,
      command: ["nice", "-n", "5"],
      secretIn: undefined,
      connect: "build1.example.com:7400",
    });
    expect(local.jobsModule).toBe("jobs.ts");
    const slurm = slurmPool({
      jobsModule: "/shared/jobs.ts",
      maxWorkers: 4,
      partition: undefined,
      sbatchOptions: ["--time=10"],
      array: true,
      connect: "10.0.0.1:7000",
      pollMs: 1000,
      graceMs: 5000,
      handlerThread: true,
      abortGraceMs: undefined,
    });
    expect(slurm.offers).toEqual([{ cpus: 1 }]);
  });
});
