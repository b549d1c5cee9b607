/**
 * `baton sim` as a user runs it: exit 0 when every seed passes, 1 when one fails, 2 for bad
 * usage; a failure prints a replay command and a smallest reproducer that both reproduce it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";

afterEach(stopBatons);

const sim = (...args: string[]) => startBaton(["sim", ...args]).exit;

/** The arguments of a printed `baton sim ...` command line (quotes removed). */
function argsOf(command: string): string[] {
  const words = command.match(/"[^"]*"|\S+/g) ?? [];
  return words.slice(2).map((w) => w.replace(/^"|"$/g, ""));
}

describe("baton sim", () => {
  it("passes seeds with exit 0 and prints pass, time and trace hash per seed", async () => {
    const exit = await sim(
      "--seeds",
      "1..3",
      "--jobs",
      "5",
      "--workers",
      "2",
      "--check-determinism",
    );
    expect(exit.stderr).toBe("");
    expect(exit.code).toBe(0);
    expect(exit.stdout).toMatch(/seed 1: pass \(\d+ virtual ms in \d+ ms, trace [0-9a-f]{16}\)/);
    expect(exit.stdout).toMatch(
      /3 seeds, 0 failed, in [\d.]+ s \([\d.]+ seeds\/s on [12] threads?\)/,
    );
  });

  it("fails with exit 1, names the invariant, and prints commands that reproduce it", async () => {
    const exit = await sim(
      "--seed",
      "4",
      "--jobs",
      "6",
      "--workers",
      "4",
      "--plant",
      "lease-running-job",
    );
    expect(exit.code).toBe(1);
    expect(exit.stdout).toMatch(/seed 4: FAIL invariant 1/);
    expect(exit.stdout).toMatch(/last 30 events:/);
    const hash = /trace ([0-9a-f]{16})/.exec(exit.stdout)![1];
    const replay = /^replay: (baton sim .*)$/m.exec(exit.stdout)![1]!;
    const smallest = /^smallest reproducer .*: (baton sim .*)$/m.exec(exit.stdout)![1]!;

    const replayed = await sim(...argsOf(replay));
    expect(replayed.code).toBe(1);
    expect(replayed.stdout).toContain(`trace ${hash}`);
    expect(replayed.stdout).toMatch(/^\d+ sim seed 4 jobs 6 workers 4/m);

    const small = await sim(...argsOf(smallest), "--no-shrink");
    expect(small.code).toBe(1);
    expect(small.stdout).toMatch(/FAIL invariant 1/);
  });

  it("gives every seed the same trace on 2 threads as on 1, reported in seed order", async () => {
    const seeds = ["--seeds", "1..6", "--jobs", "5", "--workers", "2"];
    const verdicts = (stdout: string) =>
      stdout
        .split("\n")
        .filter((line) => line.startsWith("seed "))
        .map((line) => line.replace(/ in \d+ ms/, ""));
    const one = await sim(...seeds, "--threads", "1");
    const two = await sim(...seeds, "--threads", "2");
    expect(one.code).toBe(0);
    expect(two.code).toBe(0);
    expect(verdicts(two.stdout)).toEqual(verdicts(one.stdout));
    expect(verdicts(two.stdout)).toHaveLength(6);
  });

  it("refuses bad usage with exit 2", async () => {
    const exit = await sim("--faults", "apocalyptic");
    expect(exit.code).toBe(2);
    expect(exit.stderr).toMatch(/--faults must be one of none, default, heavy/);
    const threads = await sim("--threads", "0");
    expect(threads.code).toBe(2);
    expect(threads.stderr).toMatch(/--threads must be a positive integer, not "0"/);
  });
});
