/**
 * The launcher's lease under any sequence of renewals that land, fail, land late or hang, on a
 * simulated clock: at most one renewal is in flight; the launcher gives its ranks up (`onLost`)
 * before the lease on disk is old enough for them to take it for dead; `onLost` comes at most
 * once and never after `release()`; and renewals that all land within half a period never
 * count as failed.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 300). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { holdLease } from "../../src/runtime/launcherLease.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

/** How one renewal goes: it lands or fails after `ms`, or never returns. */
type Renewal = { kind: "lands" | "fails"; ms: number } | { kind: "hangs" };

/**
 * Renewals as a disk gives them: quick (within a retry period, a thirtieth of the staleness),
 * slow (landing or failing within three periods), or hanging.
 */
const renewal = (staleAfterMs: number): fc.Arbitrary<Renewal> => {
  const quick = Math.floor(staleAfterMs / 30) - 1;
  const period = Math.floor(staleAfterMs / 3);
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.integer({ min: 0, max: quick }).map((ms) => ({ kind: "lands" as const, ms })),
    },
    {
      weight: 3,
      arbitrary: fc.integer({ min: 0, max: quick }).map((ms) => ({ kind: "fails" as const, ms })),
    },
    {
      weight: 2,
      arbitrary: fc
        .integer({ min: 0, max: 3 * period })
        .map((ms) => ({ kind: "lands" as const, ms })),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 0, max: 3 * period })
        .map((ms) => ({ kind: "fails" as const, ms })),
    },
    { weight: 1, arbitrary: fc.constant({ kind: "hangs" as const }) },
  );
};

const flush = () => new Promise((resolve) => setImmediate(resolve));

interface Run {
  /** Renewals in flight at once, at most. */
  mostInFlight: number;
  /** Times the lease on disk was old enough for a rank to leave while the launcher held on. */
  orphanedAt: number[];
  lost: { at: number; afterRelease: boolean }[];
  warnings: number;
}

async function hold(staleAfterMs: number, renewals: Renewal[], releaseAt: number): Promise<Run> {
  const clock = new SimClock();
  const run: Run = { mostInFlight: 0, orphanedAt: [], lost: [], warnings: 0 };
  let inFlight = 0;
  let onDisk = 0;
  let next = 0;
  let released = false;
  const files = {
    writeAtomic(_path: string, text: string) {
      const renewedAt = (JSON.parse(text) as { renewedAt: number }).renewedAt;
      // The first write (holdLease's own, before anyone moves the clock) lands at once.
      if (next++ === 0) return Promise.resolve();
      // The rest as drawn, then quickly.
      const how = renewals[next - 2] ?? { kind: "lands", ms: 0 };
      inFlight++;
      run.mostInFlight = Math.max(run.mostInFlight, inFlight);
      if (how.kind === "hangs") return new Promise<void>(() => {});
      return new Promise<void>((resolve, reject) => {
        clock.setTimeout(() => {
          inFlight--;
          if (how.kind === "fails") reject(new Error("EIO: i/o error, write"));
          else {
            onDisk = Math.max(onDisk, renewedAt);
            resolve();
          }
        }, how.ms);
      });
    },
  } as unknown as Files;
  const lease = await holdLease({
    files,
    clock,
    path: "/state/dep-p/lease.json",
    deployment: "dep-p",
    pid: 1,
    token: "tok",
    staleAfterMs,
    logger: {
      warn: () => run.warnings++,
      error: () => {},
      info: () => {},
    } as never,
    onLost: () => run.lost.push({ at: clock.now(), afterRelease: released }),
  });
  while (clock.fireNext(releaseAt)) {
    await flush();
    // A rank leaves once the lease on disk is more than staleAfterMs old.
    if (clock.now() - onDisk > staleAfterMs && run.lost.length === 0) {
      run.orphanedAt.push(clock.now());
    }
  }
  released = true;
  const releasing = lease.release();
  while (clock.fireNext()) await flush();
  await releasing;
  return run;
}

const stalenesses = fc.constantFrom(600, 3_000, 30_000, 120_000);

describe("the launcher's lease under renewals that land, fail, land late or hang", () => {
  it("gives the ranks up before they would leave, once, never after release, one renewal at a time", async () => {
    const property = fc.asyncProperty(
      stalenesses.chain((staleAfterMs) =>
        fc.tuple(
          fc.constant(staleAfterMs),
          fc.array(renewal(staleAfterMs), { maxLength: 30 }),
          fc.integer({ min: 0, max: 20 * staleAfterMs }),
        ),
      ),
      async ([staleAfterMs, renewals, releaseAt]) => {
        const run = await hold(staleAfterMs, renewals, releaseAt);
        expect(run.mostInFlight).toBeLessThanOrEqual(1);
        expect(run.orphanedAt).toEqual([]);
        expect(run.lost.length).toBeLessThanOrEqual(1);
        expect(run.lost.filter((l) => l.afterRelease)).toEqual([]);
      },
    );
    throwIfFailed(await fc.check(property, propertyParameters(propertyRuns(300))), import.meta.url);
  });

  it("never counts a renewal that lands within half a period as failed", async () => {
    const property = fc.asyncProperty(
      stalenesses.chain((staleAfterMs) =>
        fc.tuple(
          fc.constant(staleAfterMs),
          fc.array(
            fc
              .integer({ min: 0, max: Math.floor(staleAfterMs / 6) - 1 })
              .map((ms) => ({ kind: "lands" as const, ms })),
            { maxLength: 30 },
          ),
        ),
      ),
      async ([staleAfterMs, renewals]) => {
        const run = await hold(staleAfterMs, renewals, 12 * staleAfterMs);
        expect(run.lost).toEqual([]);
        expect(run.warnings).toBe(0);
      },
    );
    throwIfFailed(await fc.check(property, propertyParameters(propertyRuns(300))), import.meta.url);
  });
});
