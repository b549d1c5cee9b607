/**
 * The Slurm pool under random histories (fast-check): demand rising and falling, Slurm
 * starting allocations at any moment (in some runs also between the pool's squeue and its
 * scancel),
 * allocations completing, squeue failing for a while, on virtual time (SimClock) against
 * the in-memory Slurm. After every step: no allocation was ever cancelled while running,
 * never more than maxWorkers active, no failure; at the end, with squeue healthy, the pool
 * holds exactly min(demand, maxWorkers), and stop() leaves nothing active.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 1000, this property runs half of it); a failure
 * prints BATON_PROPERTY_SEED and BATON_PROPERTY_PATH to replay it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { startSlurmPool } from "../../src/runtime/slurmPool.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { FakeSlurm } from "../fixtures/fakeSlurm.ts";
import { poolStart } from "../fixtures/poolStart.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

const runs = Math.max(1, Math.floor(propertyRuns(1000) / 2));
const dir = mkdtempSync(join(tmpdir(), "baton-slurm-model-"));
const secretFile = join(dir, "run.secret");
writeFileSync(secretFile, `${"cd".repeat(32)}\n`, { mode: 0o600 });

afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Step =
  | { type: "demand"; value: number }
  | { type: "tick" }
  | { type: "slurmStarts" }
  | { type: "complete"; pick: number }
  | { type: "squeueFails"; times: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ type: fc.constant("demand" as const), value: fc.nat(8) }), weight: 2 },
  { arbitrary: fc.constant({ type: "tick" as const }), weight: 5 },
  { arbitrary: fc.constant({ type: "slurmStarts" as const }), weight: 2 },
  { arbitrary: fc.record({ type: fc.constant("complete" as const), pick: fc.nat() }), weight: 1 },
  {
    arbitrary: fc.record({
      type: fc.constant("squeueFails" as const),
      times: fc.integer({ min: 1, max: 4 }),
    }),
    weight: 1,
  },
);

/** Lets every promise the pool awaits (the fake's calls) settle. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe("the Slurm pool under random histories", () => {
  it("never cancels a running allocation, never exceeds maxWorkers, and meets demand", async () => {
    const property = fc.asyncProperty(
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 4 }),
      fc.boolean(),
      fc.boolean(),
      fc.array(step, { maxLength: 40 }),
      async (maxWorkers, cpus, array, race, steps) => {
        const slurm = new FakeSlurm(cpus);
        // Racing: Slurm starts allocations only between steps and between squeue and scancel.
        slurm.startsBeforeCancel = race;
        slurm.startsOnQueue = !race;
        const clock = new SimClock();
        const demand = { value: 0 };
        const failures: unknown[] = [];
        const pool = startSlurmPool(
          { jobsModule: "/jobs.ts", maxWorkers, array, pollMs: 1000, commands: slurm, clock },
          poolStart(dir, {
            address: "ws://127.0.0.1:1",
            secretFile,
            demand: () => demand.value,
          }),
        );
        void pool.failed.then((error) => failures.push(error));
        const tick = async () => {
          clock.fireNext();
          await settle();
        };
        for (const s of steps) {
          if (s.type === "demand") demand.value = s.value;
          else if (s.type === "tick") await tick();
          else if (s.type === "slurmStarts") slurm.startPending();
          else if (s.type === "complete") {
            const running = slurm.inState("RUNNING");
            if (running.length > 0) slurm.finish(running[s.pick % running.length]!, "COMPLETED");
          } else slurm.failingQueues += s.times;
          expect(slurm.cancelledWhileRunning()).toEqual([]);
          expect(slurm.active().length).toBeLessThanOrEqual(maxWorkers);
          expect(failures).toEqual([]);
        }
        // Healthy again: a few rounds bring the pool to exactly what is wanted.
        slurm.failingQueues = 0;
        for (let i = 0; i < 4; i++) await tick();
        const wanted = Math.min(demand.value, maxWorkers);
        const running = slurm.inState("RUNNING").length;
        expect(slurm.active().length).toBe(Math.max(wanted, running));
        expect(
          pool
            .allocations()
            .map((a) => a.id)
            .sort(),
        ).toEqual(slurm.active().sort());
        expect(slurm.cancelledWhileRunning()).toEqual([]);
        // stop() on virtual time: drive the clock until it resolves.
        let stopped = false;
        const stopping = pool.stop().then(() => (stopped = true));
        for (let i = 0; i < 1000 && !stopped; i++) await tick();
        await stopping;
        expect(slurm.active()).toEqual([]);
      },
    );
    const details = await fc.check(property, propertyParameters(runs));
    throwIfFailed(details, import.meta.url);
  }, 120_000);
});
