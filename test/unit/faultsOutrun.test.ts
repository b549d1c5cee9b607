/**
 * After a range of seeds of your own graph, `baton sim` says when most seeds' runs were over
 * before their first drawn fault, and the `--faults-within` that would have them land inside.
 */
import { describe, expect, it } from "vitest";
import { FaultsOutrun } from "../../src/cli/faultsOutrun.ts";
import type { Fault } from "../../src/sim/faultPlan.ts";

const reset = (at: number): Fault => ({ kind: "reset", at, target: 0 });

describe("FaultsOutrun", () => {
  it("says so when more than half of the seeds with faults were over before the first, with the median run in whole seconds", () => {
    const outrun = new FaultsOutrun(20_000);
    outrun.add([reset(9_000), reset(3_000)], 2_100); // over before 3,000
    outrun.add([reset(5_000)], 2_500);
    outrun.add([reset(1_000)], 4_000); // met its fault
    outrun.add([], 100); // drew none: not counted
    expect(outrun.line()).toBe(
      "your run was over before its first fault in 2 of 3 seeds that drew faults (the median run took 2500 virtual ms; faults start within the first 20000 virtual ms): to have them land during your run, give --faults-within 3s, about as long as it takes\n",
    );
  });

  it("says nothing when at least half met a fault, or none drew one", () => {
    const half = new FaultsOutrun(20_000);
    half.add([reset(5_000)], 2_000);
    half.add([reset(1_000)], 2_000);
    expect(half.line()).toBe("");
    expect(new FaultsOutrun(20_000).line()).toBe("");
  });
});
