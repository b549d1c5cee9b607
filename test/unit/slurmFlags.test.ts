/** `baton run`'s Slurm flags are checked before anything is loaded or started. */
import { describe, expect, it } from "vitest";
import { runCommand } from "../../src/cli/runCommand.ts";
import { ConfigError } from "../../src/errors.ts";

const GRAPH = "test/fixtures/slurm.graph.ts";

describe("baton run --slurm flags", () => {
  it("refuses Slurm options without --slurm", async () => {
    for (const flag of [
      "--max-workers=2",
      "--partition=cpu",
      "--slurm-opt=--time=5",
      "--slurm-unreachable-after=2m",
      "--slurm-idle-exit=1m",
    ]) {
      await expect(runCommand([GRAPH, flag])).rejects.toThrow(
        new ConfigError(`${flag.split("=")[0]} goes with --slurm`),
      );
    }
  });

  it("refuses --slurm together with local or in-process workers", async () => {
    for (const flag of ["--in-process", "--workers=2"]) {
      await expect(runCommand([GRAPH, "--slurm", flag])).rejects.toThrow(/leave out --in-process/);
    }
  });

  it("refuses a --max-workers that is not written as a whole number of at least 1", async () => {
    // An exponent or hex is refused like a sign: Number() read 2e0 as 2 and 0x4 as 4.
    for (const value of ["0", "-1", "1.5", "two", "2e0", "0x4", " 2", ""]) {
      await expect(runCommand([GRAPH, "--slurm", `--max-workers=${value}`])).rejects.toThrow(
        new ConfigError(`--max-workers must be a number of allocations ≥ 1, not "${value}"`),
      );
    }
  });

  it("refuses a --slurm-unreachable-after that is not a duration with its unit", async () => {
    for (const value of ["30", "0s", "-5s", "1.5m", "soon", ""]) {
      await expect(
        runCommand([GRAPH, "--slurm", `--slurm-unreachable-after=${value}`]),
      ).rejects.toThrow(
        new ConfigError(
          `--slurm-unreachable-after must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "${value}"`,
        ),
      );
    }
  });

  it("refuses a --slurm-opt that sets what the pool sets itself, naming --slurm-resources for what each allocation gets", async () => {
    const own = (what: string) => `sets the allocations' ${what}`;
    for (const [option, said] of [
      ["--job-name=mine", own("job name, which the pool sets itself (baton-<8 hex>")],
      ["-Jmine", own("job name")],
      ["--array=0-3", own("job array, which the pool makes itself")],
      ["--output=/tmp/w.log", own("log file, which the pool sets itself (slurm-<id>.log")],
      ["-e", own("log file")],
      [
        "--cpus-per-task=4",
        "sets what each allocation gets, which the pool asks of Slurm from what each worker offers the jobs' requires: give it in --slurm-resources (such as cpus=4,memory=16384,gpus=1; memory in MiB) instead",
      ],
      ["-c4", "sets what each allocation gets"],
      ["--mem=16G", "sets what each allocation gets"],
      ["--gpus=2", "sets what each allocation gets"],
      ["--gres=gpu:a100:1", "sets what each allocation gets"],
    ] as const) {
      await expect(runCommand([GRAPH, "--slurm", `--slurm-opt=${option}`])).rejects.toThrow(
        `--slurm-opt=${option} ${said}`,
      );
    }
  });

  it("refuses a --slurm-idle-exit that is neither a duration with its unit nor never", async () => {
    for (const value of ["0", "off", "5"]) {
      await expect(runCommand([GRAPH, "--slurm", `--slurm-idle-exit=${value}`])).rejects.toThrow(
        new ConfigError(
          `--slurm-idle-exit must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), or never, not "${value}"`,
        ),
      );
    }
  });
});
