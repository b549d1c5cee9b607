/**
 * The simulation has teeth: with each planted bug switched on (the coordinator's, the rank
 * teardown's and the lease watchdog's), one of the first 1,000 seeds fails, and on the invariant that bug breaks, which
 * its message names as every invariant's does (the rank groups' had no number).
 */
import { describe, expect, it } from "vitest";
import type { PlantedBug } from "../../src/machines/plantedBugs.ts";
import { SIM_INVARIANTS } from "../../src/sim/simInvariants.ts";
import { simulate } from "../../src/sim/simulate.ts";

const BROKEN: [PlantedBug, keyof typeof SIM_INVARIANTS][] = [
  ["lease-running-job", 1],
  ["lost-counts-as-failure", 3],
  ["forget-waiters-on-shutdown", 5],
  ["release-lease-twice", 1],
  // Teardown verified after one KILL, through the real launchGroup: the launcher then waits
  // forever for the exit of a rank that survived, so stop() never settles (invariant 13).
  ["teardown-trusts-single-kill", 13],
  // A result counted (its dependents started) before it was durable.
  ["complete-before-durable", 2],
  // A timed-out job ready again while its holder still holds it: two leases on one job.
  ["timeout-releases-lease", 1],
  // A launcher whose lease's watchdog never aborts, on a full disk: its ranks take it for dead.
  ["watchdog-never-aborts", 14],
];

describe("the simulation catches planted bugs within 1,000 seeds", () => {
  it.each(BROKEN)(
    "%s breaks invariant %i",
    async (bug, invariant) => {
      let caught: { seed: number; invariant: number; message: string } | undefined;
      for (let seed = 1; seed <= 1000 && caught === undefined; seed++) {
        const r = await simulate({ seed, jobs: 20, workers: 4, plantedBugs: [bug] });
        if (!r.ok) caught = { seed, ...r.violation! };
      }
      expect(caught?.invariant).toBe(invariant);
      expect(
        caught?.message.startsWith(
          `invariant ${invariant} (${SIM_INVARIANTS[invariant]}) violated: `,
        ),
      ).toBe(true);
    },
    170_000,
  );
});
