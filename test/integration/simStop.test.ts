/**
 * A simulated run stopped as a user's run is: with `failFast`, the rest is cancelled once a job
 * has failed for good; with a `cancel@AT` fault, an operator cancels it at virtual time AT (a
 * coordinator down then is cancelled when it comes back). Either way every invariant holds
 * through the cancel (no lease after it, results stored once) and the run finishes.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, NonRetryableError } from "../../src/errors.ts";
import { job } from "../../src/graph/job.ts";
import { parseFaults } from "../../src/sim/faultPlan.ts";
import type { SimTools } from "../../src/sim/simGraph.ts";
import { simulate } from "../../src/sim/simulate.ts";

/** `boom` fails for good at once; `slow` works for a virtual minute. */
const graph = [job("boom", 1), job("slow", 2)];
const handlers = ({ sleep }: SimTools) => ({
  boom: () => {
    throw new NonRetryableError("boom");
  },
  slow: async (n: number) => {
    await sleep(60_000);
    return n;
  },
});

describe("simulate with failFast", () => {
  it("cancels the rest of the run once a job failed for good", async () => {
    const base = { seed: 3, graph, handlers, faults: "none" as const };
    const on = await simulate({ ...base, failFast: true });
    expect(on.ok, on.violation?.message).toBe(true);
    expect(on.trace[0]).toContain(" failFast");
    const outcomes = [...on.outcomes.values()];
    expect(outcomes.find((o) => o.kind === "boom")?.status).toBe("failed");
    expect(outcomes.find((o) => o.kind === "slow")?.status).toBe("cancelled");
    const off = await simulate(base);
    expect([...off.outcomes.values()].find((o) => o.kind === "slow")?.status).toBe("completed");
  });

  it("holds every invariant through the cancel on heavy seeds of the drawn graph", async () => {
    for (const seed of [1, 2, 3]) {
      const r = await simulate({ seed, jobs: 30, workers: 4, faults: "heavy", failFast: true });
      expect(r.ok, r.violation?.message).toBe(true);
      expect(r.counts.unfinished).toBe(0);
    }
  });

  it("refuses a failFast that is not a boolean", async () => {
    await expect(simulate({ seed: 1, failFast: "yes" as unknown as boolean })).rejects.toThrow(
      new ConfigError('simulate: failFast must be true or false, not "yes"'),
    );
  });
});

describe("a cancel@AT fault", () => {
  it("cancels the run at AT: jobs not done end cancelled, and every invariant holds", async () => {
    const r = await simulate({ seed: 4, jobs: 40, faults: parseFaults("cancel@3000") });
    expect(r.ok, r.violation?.message).toBe(true);
    expect(r.trace.some((line) => line.includes("fault cancel"))).toBe(true);
    expect(r.counts.cancelled).toBeGreaterThan(0);
    const cancelled = [...r.outcomes.values()].find((o) => o.status === "cancelled");
    expect(cancelled?.error?.message).toContain("cancelled by the operator at 3000 virtual ms");
  });

  it("cancels a coordinator that was down at AT once it is back", async () => {
    const faults = parseFaults("coordinator-crash@2000+3000/torn,cancel@3000");
    const r = await simulate({ seed: 4, jobs: 40, faults });
    expect(r.ok, r.violation?.message).toBe(true);
    expect(r.trace.some((line) => line.includes("its restart is cancelled"))).toBe(true);
    expect(r.counts.cancelled).toBeGreaterThan(0);
  });

  it("holds every invariant on heavy seeds with a cancel added to their plan", async () => {
    for (const seed of [5, 6, 7]) {
      const r = await simulate({ seed, jobs: 30, workers: 4, faults: "heavy" });
      const faults = [...r.faults, { kind: "cancel" as const, at: 10_000 }];
      const stopped = await simulate({ seed, jobs: 30, workers: 4, faults });
      expect(stopped.ok, stopped.violation?.message).toBe(true);
      expect(stopped.counts.unfinished).toBe(0);
    }
  });
});
