/**
 * A fault plan given as text (`baton sim --fault-list`) or as objects (`simulate({ faults })`)
 * is checked before anything runs: a fault its kind cannot be (an option it takes none of), a
 * time past 30 days (1e20 ms failed every seed with "RangeError: Invalid time value") or a
 * fault missing a field (a TypeError inside the simulation) is a ConfigError naming the fault,
 * and every plan the profiles draw passes the same check.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import {
  checkFaults,
  drawFaults,
  FAULT_PROFILES,
  formatFaults,
  parseFaults,
} from "../../src/sim/faultPlan.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SIM_LIMITS } from "../../src/sim/simLimits.ts";

describe("parseFaults", () => {
  it("reads an operator's cancel, cancel@AT, and writes it back the same", () => {
    expect(parseFaults("cancel@3000")).toEqual([{ kind: "cancel", at: 3000 }]);
    expect(formatFaults(parseFaults("reset@1:0,cancel@3000"))).toBe("reset@1:0,cancel@3000");
  });

  it.each([
    [
      "coordinator-crash@1000+99999999999999999999/torn",
      "(coordinator-crash) ms must be a whole number of virtual ms from 0 to 2592000000, not 100000000000000000000; write it as coordinator-crash@AT+MS/torn or /clean",
    ],
    [
      `partition@${SIM_LIMITS.virtualMs + 1}:0+5`,
      "(partition) at must be a whole number of virtual ms from 0 to 2592000000",
    ],
    ["worker-crash@1000:5+300", "(worker-crash) takes no ms; write it as worker-crash@AT:TARGET"],
    ["worker-crash@1000:5/server", "(worker-crash) takes no option"],
    ["slow@1000:3+5000/200", "(slow) takes no target; write it as slow@AT+MS/EXTRA_MS"],
    ["half-open@1:2/up", '(half-open) side must be "server" or "client", not "up"'],
    ["coordinator-crash@1+5/true", '(coordinator-crash) torn must be /torn or /clean, not "true"'],
    ["coordinator-crash@1+5", "(coordinator-crash) lacks torn: give /torn or /clean"],
    ["nuke@5", 'has an unknown kind "nuke"; give one of worker-crash, reset, partition'],
    ["partition@5", "(partition) lacks target: give a whole number of 0 or more"],
    ["cancel@5:1", "(cancel) takes no target; write it as cancel@AT"],
  ])("refuses %s, saying what is wrong and how to write it", (text, message) => {
    expect(() => parseFaults(`reset@1:0,${text}`)).toThrow(ConfigError);
    expect(() => parseFaults(`reset@1:0,${text}`)).toThrow(`bad fault "${text}": it ${message}`);
  });

  it("takes the longest times there are and every kind as formatFaults writes it", () => {
    const longest = `slow@${SIM_LIMITS.virtualMs}+${SIM_LIMITS.virtualMs}/${SIM_LIMITS.virtualMs}`;
    expect(formatFaults(parseFaults(longest))).toBe(longest);
    const all =
      "worker-crash@1:2,reset@3:4,partition@5:6+7,half-open@8:9/client,slow@10+11/12,coordinator-crash@13+14/clean,disk-stall@15+16,disk-full@17+18";
    expect(formatFaults(parseFaults(all))).toBe(all);
  });

  it("refuses, as a JavaScript caller may give them, a fault list that is no text and faults that are no list of faults", () => {
    expect(() => parseFaults(5 as never)).toThrow(
      'parseFaults: its fault list must be text such as "partition@5000:0+20000", not 5',
    );
    expect(() => parseFaults(undefined as never)).toThrow(ConfigError);
    expect(() => formatFaults("partition@5000:0+20000" as never)).toThrow(
      `formatFaults: its faults must be a list of faults, such as a simulation's faults, not "partition@5000:0+20000"`,
    );
    expect(() => formatFaults([{ kind: "nuke", at: 5 }] as never)).toThrow(
      'formatFaults: faults[0] has an unknown kind "nuke"',
    );
  });
});

describe("drawFaults", () => {
  it("starts every fault within the profile's first 20 s (heavy: 40 s), or within withinMs", () => {
    const starts = (profile: "default" | "heavy", withinMs?: number) =>
      Array.from({ length: 300 }, (_, i) =>
        drawFaults(new SimEntropy(i + 1).fork("faults"), profile, withinMs).map((f) => f.at),
      ).flat();
    expect(Math.max(...starts("default"))).toBeGreaterThan(15_000);
    expect(Math.max(...starts("default"))).toBeLessThanOrEqual(20_000);
    expect(Math.max(...starts("heavy"))).toBeGreaterThan(35_000);
    for (const profile of ["default", "heavy"] as const) {
      const within = starts(profile, 3_000);
      expect(within.length).toBe(starts(profile).length);
      expect(Math.max(...within)).toBeLessThanOrEqual(3_000);
      expect(Math.max(...within)).toBeGreaterThan(2_500);
    }
  });
});

describe("checkFaults", () => {
  it("passes every plan the profiles draw", () => {
    for (const profile of FAULT_PROFILES) {
      for (let seed = 1; seed <= 300; seed++) {
        const faults = drawFaults(new SimEntropy(seed).fork("faults"), profile);
        expect(() => checkFaults("simulate", faults)).not.toThrow();
      }
    }
  });

  it.each([
    [null, "simulate: faults must be one of none, default, heavy or a list of faults, not null"],
    [[7], "simulate: faults[0] is not a fault: 7"],
    [
      [{ kind: "half-open", at: 1, target: 0.5, side: "server" }],
      "simulate: faults[0] (half-open) target must be a whole number of 0 or more, not 0.5",
    ],
    [
      [{ kind: "coordinator-crash", at: 1, ms: 5, torn: "yes" }],
      'simulate: faults[0] (coordinator-crash) torn must be true or false, not "yes"',
    ],
  ])("refuses %j", (faults, message) => {
    expect(() => checkFaults("simulate", faults)).toThrow(ConfigError);
    expect(() => checkFaults("simulate", faults)).toThrow(message);
  });
});
