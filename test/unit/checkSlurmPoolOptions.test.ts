/** `slurmPool`'s own option values are refused when the pool is made, not once a run starts. */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { type SlurmPoolOptions, slurmPool } from "../../src/runtime/slurmPool.ts";

const make = (options: Partial<SlurmPoolOptions>) => () =>
  slurmPool({ jobsModule: "/shared/jobs.ts", ...options });

describe("slurmPool's option values", () => {
  it("refuses a partition that is no one partition's name", () => {
    for (const partition of ["", "cpu,gpu", "my cpu", 5]) {
      expect(make({ partition: partition as never })).toThrow(
        new ConfigError(
          `slurmPool: partition must be the name of one Slurm partition, such as "cpu" (sinfo lists them; leave it out for the cluster's default), not ${JSON.stringify(partition)}`,
        ),
      );
    }
    // JSON.stringify threw on it while the message was made: a TypeError, not the ConfigError.
    expect(make({ partition: 10n as never })).toThrow(
      new ConfigError(
        `slurmPool: partition must be the name of one Slurm partition, such as "cpu" (sinfo lists them; leave it out for the cluster's default), not 10`,
      ),
    );
    expect(make({ partition: "gpu-a100" })).not.toThrow();
  });

  it("refuses an array that is not a boolean", () => {
    expect(make({ array: "no" as never })).toThrow(
      'slurmPool: array must be true (one job array per scale-up) or false (separate jobs), not "no"',
    );
  });

  it("refuses times and counts that are not whole numbers in range, naming the option", () => {
    for (const [name, value, least] of [
      ["pollMs", 0, 1],
      ["commandTimeoutMs", 0, 1],
      ["stopTimeoutMs", 1.5, 1],
      ["graceMs", -1, 0],
      ["workerRestarts", -1, 0],
      ["workerRestarts", "5", 0],
    ] as const) {
      expect(make({ [name]: value })).toThrow(
        new ConfigError(
          `slurmPool: ${name} must be a whole number of ${least} or more, not ${JSON.stringify(value)}`,
        ),
      );
    }
    expect(
      make({ graceMs: 0, workerRestarts: 0, pollMs: 250, commandTimeoutMs: 5000 }),
    ).not.toThrow();
  });
});
