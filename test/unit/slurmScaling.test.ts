/**
 * The Slurm pool's pure pieces: the scaling decision (examples and a fast-check property)
 * and the mapping of Slurm states. Knobs as in the other properties: BATON_PROPERTY_RUNS
 * (default 1000); a failure prints BATON_PROPERTY_SEED and BATON_PROPERTY_PATH to replay it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allocationPhase, pendingReason } from "../../src/machines/allocationState.ts";
import {
  type AllocationView,
  decideScaling,
  type ScalingInput,
} from "../../src/machines/slurmScaling.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

function alloc(id: string, state: AllocationView["state"], order: number): AllocationView {
  return { id, state, order };
}

describe("decideScaling", () => {
  it("submits up to min(demand, maxWorkers)", () => {
    expect(decideScaling({ demand: 5, maxWorkers: 3, allocations: [] })).toEqual({
      submit: 3,
      cancel: [],
    });
    expect(
      decideScaling({ demand: 2, maxWorkers: 3, allocations: [alloc("1_0", "running", 0)] }),
    ).toEqual({ submit: 1, cancel: [] });
  });

  it("cancels the newest pending first and never a running allocation", () => {
    const allocations = [
      alloc("1_0", "running", 0),
      alloc("1_1", "pending", 1),
      alloc("2", "pending", 3),
      alloc("1_2", "pending", 2),
      alloc("3", "running", 4),
    ];
    expect(decideScaling({ demand: 3, maxWorkers: 8, allocations })).toEqual({
      submit: 0,
      cancel: ["2", "1_2"],
    });
    expect(decideScaling({ demand: 0, maxWorkers: 8, allocations }).cancel).toEqual([
      "2",
      "1_2",
      "1_1",
    ]);
  });

  it("keeps everything when demand meets what is held", () => {
    const allocations = [alloc("1_0", "running", 0), alloc("1_1", "pending", 1)];
    expect(decideScaling({ demand: 2, maxWorkers: 2, allocations })).toEqual({
      submit: 0,
      cancel: [],
    });
  });

  it("never cancels a running allocation, never overshoots, and meets demand (property)", () => {
    const input = fc
      .record({
        demand: fc.nat(50),
        maxWorkers: fc.integer({ min: 1, max: 20 }),
        states: fc.array(fc.constantFrom<"pending" | "running">("pending", "running"), {
          maxLength: 25,
        }),
        orders: fc.uniqueArray(fc.nat(1000), { minLength: 25, maxLength: 25 }),
      })
      .map(
        ({ demand, maxWorkers, states, orders }): ScalingInput => ({
          demand,
          maxWorkers,
          allocations: states.map((state, i) => alloc(`a${i}`, state, orders[i]!)),
        }),
      );
    const details = fc.check(
      fc.property(input, ({ demand, maxWorkers, allocations }) => {
        const { submit, cancel } = decideScaling({ demand, maxWorkers, allocations });
        const wanted = Math.min(demand, maxWorkers);
        const byId = new Map(allocations.map((a) => [a.id, a]));
        const running = allocations.filter((a) => a.state === "running").length;
        // Never both, never a running one, never twice.
        expect(submit === 0 || cancel.length === 0).toBe(true);
        expect(new Set(cancel).size).toBe(cancel.length);
        for (const id of cancel) expect(byId.get(id)?.state).toBe("pending");
        const after = allocations.length + submit - cancel.length;
        // As close to the wanted number as running allocations allow.
        expect(after).toBe(Math.max(wanted, Math.min(running, allocations.length)));
        expect(submit === 0 || after <= maxWorkers).toBe(true);
        // The cancelled are the newest pending ones.
        const kept = allocations.filter((a) => a.state === "pending" && !cancel.includes(a.id));
        for (const id of cancel) {
          for (const other of kept) expect(byId.get(id)!.order).toBeGreaterThan(other.order);
        }
      }),
      propertyParameters(propertyRuns(1000)),
    );
    throwIfFailed(details, import.meta.url);
  });
});

describe("allocationPhase", () => {
  it("maps Slurm's states", () => {
    expect(allocationPhase("PENDING")).toBe("pending");
    expect(allocationPhase("REQUEUED")).toBe("pending");
    expect(allocationPhase("CONFIGURING")).toBe("running");
    expect(allocationPhase("RUNNING")).toBe("running");
    expect(allocationPhase("COMPLETING")).toBe("running");
    expect(allocationPhase("COMPLETED")).toBe("ended");
    for (const state of ["FAILED", "CANCELLED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"]) {
      expect(allocationPhase(state)).toBe("failed");
    }
    for (const state of ["TIMEOUT", "NODE_FAIL", "PREEMPTED"]) {
      expect(allocationPhase(state)).toBe("lost");
    }
  });

  it("reads only the first word and leaves unknown states unknown", () => {
    expect(allocationPhase("CANCELLED by 0")).toBe("failed");
    expect(allocationPhase("running")).toBe("running");
    expect(allocationPhase("SOMETHING_NEW")).toBeUndefined();
  });
});

describe("pendingReason", () => {
  it("tells the reasons Slurm will never start an allocation for as asked from those it waits for", () => {
    for (const reason of [
      "PartitionConfig",
      "PartitionTimeLimit",
      "BadConstraints",
      "InvalidAccount",
    ]) {
      expect(pendingReason(reason).blocked).toBe(true);
    }
    for (const reason of ["None", "Resources", "Priority", "BeginTime", "ReqNodeNotAvail"]) {
      expect(pendingReason(reason).blocked).toBe(false);
    }
    // A start time the user set (--begin) is as likely as Slurm's own hold of a requeued job.
    expect(pendingReason("BeginTime").says).toBe(
      "its start time has not come (a --begin in its sbatch options, or Slurm holding a requeued job back for a while)",
    );
    expect(pendingReason("QOSGrpCpuLimit")).toEqual({
      blocked: false,
      says: "an aggregate limit of its account or QOS is reached (it waits for other jobs to end)",
    });
    expect(pendingReason("QOSMaxJobsPerUserLimit").blocked).toBe(false);
    expect(pendingReason("MaxCpuPerAccount").says).toBe(
      "a limit of its account or QOS holds it back",
    );
    expect(pendingReason("SomethingNew")).toEqual({ blocked: false, says: undefined });
  });
});
