/**
 * The watchdog under any sequence of probe results, clock advances and stops, against a
 * small reference model of DESIGN §4's graduated response: what it emits matches the model,
 * `lost` is emitted at most once and never after `STOP`.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 1000). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createActor, SimulatedClock } from "xstate";
import type { PlantedBug } from "../../src/machines/plantedBugs.ts";
import { type WatchdogEmitted, watchdogMachine } from "../../src/machines/watchdog.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

type Step = { kind: "ok" } | { kind: "fail" } | { kind: "stop" } | { kind: "advance"; ms: number };

const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: "ok" as const }) },
  { weight: 4, arbitrary: fc.constant({ kind: "fail" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "stop" as const }) },
  {
    weight: 3,
    arbitrary: fc.integer({ min: 0, max: 4_000 }).map((ms) => ({ kind: "advance" as const, ms })),
  },
);

/** The reference: which emitted types the steps should produce. */
function expectedTypes(tolerance: number, graceMs: number, steps: Step[]): string[] {
  const out: string[] = [];
  let state: "healthy" | "suspect" | "reprobing" | "done" = "healthy";
  let strikes = 0;
  let left = 0; // ms left of the grace while reprobing
  for (const step of steps) {
    if (state === "done") break;
    if (step.kind === "stop") state = "done";
    else if (step.kind === "advance") {
      if (state === "reprobing" && step.ms >= left) {
        out.push("lost");
        state = "done";
      } else left -= step.ms;
    } else if (step.kind === "ok") {
      if (state !== "healthy") out.push("recovered");
      state = "healthy";
      strikes = 0;
    } else {
      strikes += 1;
      if (state === "reprobing") continue;
      if (strikes >= tolerance) {
        out.push("abort");
        state = "reprobing";
        left = graceMs;
      } else {
        out.push("suspect");
        state = "suspect";
      }
    }
  }
  return out;
}

const property = (plantedBugs: readonly PlantedBug[] = []) =>
  fc.property(
    fc.integer({ min: 1, max: 4 }),
    fc.integer({ min: 0, max: 5_000 }),
    fc.array(stepArbitrary, { maxLength: 60 }),
    (tolerance, graceMs, steps) => {
      const clock = new SimulatedClock();
      const actor = createActor(watchdogMachine, {
        input: { tolerance, graceMs, plantedBugs },
        clock,
      });
      const emitted: { event: WatchdogEmitted; afterStop: boolean }[] = [];
      let stopped = false;
      actor.on("*", (event) => emitted.push({ event, afterStop: stopped }));
      actor.start();
      for (const step of steps) {
        if (actor.getSnapshot().status !== "active") break;
        if (step.kind === "advance") clock.increment(step.ms);
        else if (step.kind === "stop") {
          stopped = true;
          actor.send({ type: "STOP" });
        } else actor.send({ type: step.kind === "ok" ? "PROBE_OK" : "PROBE_FAILED" });
      }
      // Whatever was pending fires now, if it still can.
      clock.increment(10 * (graceMs + 1));
      const lost = emitted.filter(({ event }) => event.type === "lost");
      expect(lost.length).toBeLessThanOrEqual(1);
      expect(lost.filter(({ afterStop }) => afterStop)).toEqual([]);
      const types = emitted.map(({ event }) => event.type);
      // The final advance can end a grace the steps left open, unless a stop came first.
      const model = expectedTypes(tolerance, graceMs, [
        ...steps,
        { kind: "advance", ms: 10 * (graceMs + 1) },
      ]);
      expect(types).toEqual(model);
    },
  );

describe("watchdog under any sequence of probes, time and stop", () => {
  it("emits what the model says, lost at most once and never after stop", () => {
    const details = fc.check(property(), propertyParameters(propertyRuns(1000)));
    throwIfFailed(details, import.meta.url);
  });

  it("has teeth: with watchdog-never-aborts planted, it finds a counterexample", () => {
    const details = fc.check(property(["watchdog-never-aborts"]), {
      numRuns: 1000,
      endOnFailure: true,
    });
    expect(details.failed).toBe(true);
  });
});
