/**
 * The coordinator property has teeth: with each planted bug switched on, fast-check finds a
 * counterexample within BATON_PROPERTY_RUNS runs (default 1000), and the failure is the
 * invariant that bug breaks, not some other error.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PlantedBug } from "../../src/machines/plantedBugs.ts";
import { InvariantViolation } from "../../src/sim/invariants.ts";
import { coordinatorProperty, propertyRuns, propertyTimeoutMs } from "./coordinatorModel.ts";

/**
 * The coordinator's planted bugs (`teardown-trusts-single-kill` is caught by the teardown
 * property, `watchdog-never-aborts` by the watchdog's).
 */
const BROKEN: Record<
  Exclude<PlantedBug, "teardown-trusts-single-kill" | "watchdog-never-aborts">,
  number
> = {
  "lease-running-job": 1,
  "lost-counts-as-failure": 3,
  "forget-waiters-on-shutdown": 5,
  "release-lease-twice": 1,
  "timeout-releases-lease": 1,
  "complete-before-durable": 2,
};

describe("the coordinator property catches planted bugs", () => {
  it.each(Object.entries(BROKEN))(
    "%s breaks invariant %i",
    (bug, invariant) => {
      const details = fc.check(coordinatorProperty([bug as PlantedBug]), {
        numRuns: propertyRuns,
        endOnFailure: true,
      });
      expect(details.failed).toBe(true);
      expect(details.errorInstance).toBeInstanceOf(InvariantViolation);
      expect((details.errorInstance as InvariantViolation).invariant).toBe(invariant);
    },
    propertyTimeoutMs,
  );
});
