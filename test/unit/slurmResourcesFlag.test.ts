/**
 * `baton run --slurm --slurm-resources`: what each Slurm worker offers, read strictly, and
 * the way out it gives a graph refused as UNSATISFIABLE.
 */
import { describe, expect, it } from "vitest";
import { slurmResourcesAdvice, slurmResourcesFlag } from "../../src/cli/slurmResourcesFlag.ts";
import { ConfigError } from "../../src/errors.ts";

const ACCEPTED =
  "give NAME=AMOUNT pairs joined by commas, such as cpus=4,memory=16384,gpus=1: the names are cpus and gpus (numbers of 0 or more) and memory (MiB, without a unit)";

function refusal(text: string): string {
  try {
    slurmResourcesFlag(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error(`"${text}" was accepted`);
}

describe("slurmResourcesFlag", () => {
  it("is undefined when the flag is absent: the pool's default offer stands", () => {
    expect(slurmResourcesFlag(undefined)).toBeUndefined();
  });

  it.each([
    ["cpus=4,memory=16384,gpus=1", { cpus: 4, memory: 16384, gpus: 1 }],
    ["gpus=2,cpus=8", { cpus: 8, gpus: 2 }],
    ["cpus=0.5", { cpus: 0.5 }],
    // cpus not given stays the pool's 1: the allocation gets one cpu anyway.
    ["memory=8192", { cpus: 1, memory: 8192 }],
    ["gpus=0", { cpus: 1, gpus: 0 }],
  ])("reads %s", (text, offer) => {
    expect(slurmResourcesFlag(text)).toEqual(offer);
  });

  it.each([
    ["core=4", `--slurm-resources: "core" is no resource; ${ACCEPTED}`],
    ["mem=16384", `--slurm-resources: "mem" is no resource (did you mean memory?); ${ACCEPTED}`],
    ["cpu=4", `--slurm-resources: "cpu" is no resource (did you mean cpus?); ${ACCEPTED}`],
    ["cpus4", `--slurm-resources: "cpus4" is no NAME=AMOUNT; ${ACCEPTED}`],
    ["cpus=4,", `--slurm-resources: "" is no NAME=AMOUNT; ${ACCEPTED}`],
    ["cpus=2,cpus=4", "--slurm-resources: cpus is given twice; give it once"],
  ])("refuses %s, saying what it takes", (text, says) => {
    expect(refusal(text)).toBe(says);
  });

  it.each([
    ["cpus=-1", "-1"],
    ["cpus=four", "four"],
    ["cpus=", ""],
    ["gpus=1e3", "1e3"],
    ["memory=0x10", "0x10"],
    ["memory= 5", " 5"],
  ])("refuses %s as no amount", (text, amount) => {
    const name = text.slice(0, text.indexOf("="));
    expect(refusal(text)).toBe(
      `--slurm-resources ${name} must be a number of 0 or more, such as 4 or 0.5, not "${amount}"`,
    );
  });

  it.each([
    ["memory=16G", "for 16G give memory=16384"],
    ["memory=512M", "for 512M give memory=512"],
    ["memory=1.5TiB", "for 1.5TiB give memory=1572864"],
    ["memory=100k", "for 100k give memory=1"],
  ])("refuses memory with a unit (%s), saying its MiB", (text, says) => {
    expect(refusal(text)).toBe(`--slurm-resources memory is in MiB, without a unit: ${says}`);
  });

  it("refuses more gpus than any node holds", () => {
    expect(refusal("gpus=2000")).toBe(
      "--slurm-resources gpus 2000 is more than any machine offers: give at most 1024, the gpus of one node (sinfo -o %G lists them)",
    );
  });
});

describe("slurmResourcesAdvice", () => {
  it("names the flag with the amounts that are enough, leaving out the zeros", () => {
    expect(slurmResourcesAdvice({ cpus: 4, gpus: 0, memory: 8192 })).toBe(
      "have each Slurm worker offer enough with --slurm-resources cpus=4,memory=8192",
    );
  });

  it("gives amounts the flag reads back as that offer", () => {
    const enough = { cpus: 2.5, gpus: 1, memory: 100 };
    const advice = slurmResourcesAdvice(enough);
    expect(slurmResourcesFlag(advice.slice(advice.lastIndexOf(" ") + 1))).toEqual(enough);
  });
});
