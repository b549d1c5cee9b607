/** `slurmPool`'s `sbatchOptions`: a list of strings, none setting what the pool sets itself. */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { checkSbatchOptions } from "../../src/runtime/checkSbatchOptions.ts";
import { slurmPool } from "../../src/runtime/slurmPool.ts";

describe("slurmPool's sbatchOptions", () => {
  it("takes options the pool does not set, a --gres of another resource among them", () => {
    for (const sbatchOptions of [
      [],
      ["--time=1:00:00", "--qos=low", "-N", "1"],
      ["--gres=tmp:100G"],
      ["--constraint=a100"],
    ]) {
      expect(() => slurmPool({ jobsModule: "/shared/jobs.ts", sbatchOptions })).not.toThrow();
    }
  });

  it("refuses a string, or a list with something else than strings", () => {
    for (const sbatchOptions of ["--time=1:00:00", ["--time=1:00:00", 5]]) {
      expect(() =>
        slurmPool({ jobsModule: "/shared/jobs.ts", sbatchOptions: sbatchOptions as never }),
      ).toThrow(
        new ConfigError(
          `slurmPool: sbatchOptions must be a list of sbatch options, each a string, such as ["--time=1:00:00", "--qos=low"], not ${JSON.stringify(sbatchOptions)}`,
        ),
      );
    }
  });

  it("refuses the job name, naming why the pool keeps its own", () => {
    expect(() =>
      slurmPool({ jobsModule: "/shared/jobs.ts", sbatchOptions: ["--job-name", "mine"] }),
    ).toThrow(
      new ConfigError(
        `slurmPool: sbatchOptions "--job-name" sets the allocations' job name, which the pool sets itself (baton-<8 hex>: it finds its allocations in the queue by it, and a later run or baton reap cancels a killed run's by it): leave it out`,
      ),
    );
  });

  it("refuses what each allocation gets, naming resources, and a --gres of gpus given apart from its value", () => {
    const refusal = (option: string) =>
      new ConfigError(
        `slurmPool: sbatchOptions ${JSON.stringify(option)} sets what each allocation gets, which the pool asks of Slurm from what each worker offers the jobs' requires: give it in slurmPool's resources (such as { cpus: 4, memory: 16384, gpus: 1 }; memory in MiB) instead, and the workers offer the jobs what their allocations have`,
      );
    expect(() => checkSbatchOptions(["--mem-per-cpu=4G"], "slurmPool")).toThrow(
      refusal("--mem-per-cpu=4G"),
    );
    expect(() => checkSbatchOptions(["--gres", "gpu:1"], "slurmPool")).toThrow(refusal("--gres"));
    expect(() => checkSbatchOptions(["-G", "2"], "slurmPool")).toThrow(refusal("-G"));
  });
});
