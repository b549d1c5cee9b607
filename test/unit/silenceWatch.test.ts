import { describe, expect, it } from "vitest";
import type { Clock } from "../../src/runtime/ports.ts";
import { SilenceWatch } from "../../src/runtime/silenceWatch.ts";
import { SimClock } from "../../src/sim/simClock.ts";

/** A SimClock that counts the timers set and cleared through it, with or without its restart. */
function countedClock(withRestart: boolean) {
  const sim = new SimClock();
  const calls = { set: 0, cleared: 0, restarted: 0 };
  const clock: Clock = {
    now: () => sim.now(),
    setTimeout: (fn, ms) => {
      calls.set++;
      return sim.setTimeout(fn, ms);
    },
    clearTimeout: (handle) => {
      calls.cleared++;
      sim.clearTimeout(handle);
    },
    ...(withRestart && {
      restartTimeout: (handle: unknown) => {
        calls.restarted++;
        return sim.restartTimeout(handle);
      },
    }),
  };
  return { sim, clock, calls };
}

/** Runs every timer due up to `time`, then moves the clock to it. */
function runUntil(sim: SimClock, time: number): void {
  while (sim.fireNext(time)) {}
}

describe.each([
  ["a clock that restarts timers", true],
  ["a clock that only sets and clears them", false],
])("SilenceWatch on %s", (_, withRestart) => {
  it("calls onSilent once the limit has passed since it last heard, not before", () => {
    const { sim, clock } = countedClock(withRestart);
    const silentAt: number[] = [];
    const watch = new SilenceWatch(clock, 1_000, () => silentAt.push(sim.now()));
    for (const at of [400, 1_300, 2_250]) {
      runUntil(sim, at);
      watch.heard();
    }
    runUntil(sim, 3_249);
    expect(silentAt).toEqual([]);
    while (sim.fireNext()) {}
    expect(silentAt).toEqual([3_250]);
  });

  it("waits out a limit past Node's longest timer in full, from whichever piece it heard in", () => {
    const longest = 2 ** 31 - 1;
    const { sim, clock } = countedClock(withRestart);
    const silentAt: number[] = [];
    const watch = new SilenceWatch(clock, 2 * longest + 5, () => silentAt.push(sim.now()));
    runUntil(sim, longest - 10);
    watch.heard(); // in the first piece
    runUntil(sim, 2 * longest);
    watch.heard(); // in the second
    runUntil(sim, 4 * longest + 4);
    expect(silentAt).toEqual([]);
    while (sim.fireNext()) {}
    expect(silentAt).toEqual([4 * longest + 5]);
  });
});

describe("SilenceWatch", () => {
  it("restarts its one timer when it hears, where the clock can, instead of clearing it and setting another", () => {
    const { sim, clock, calls } = countedClock(true);
    const watch = new SilenceWatch(clock, 1_000, () => {});
    for (let i = 0; i < 100; i++) watch.heard();
    expect(calls).toEqual({ set: 1, cleared: 0, restarted: 100 });
    watch.stop();
    expect(sim.pending).toBe(0);
  });
});
