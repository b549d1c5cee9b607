/**
 * The throughput panel's bars and words: the bars' width follows the run's length, a bar
 * under a second says a count and not a rate, and merging bars loses no job.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { barWidth, MAX_BARS, Throughput, throughputWords } from "../../src/viz/throughput.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

describe("barWidth", () => {
  it("draws a run of any length in at most 120 bars, as narrow as that allows", () => {
    expect(barWidth(0)).toBe(1);
    expect(barWidth(62)).toBe(1);
    expect(barWidth(119)).toBe(1);
    expect(barWidth(120)).toBe(2);
    expect(barWidth(204_903)).toBe(2_000);
    expect(barWidth(100_000)).toBe(1_000);
    expect(barWidth(3_600_000)).toBe(60_000);
    expect(barWidth(30 * 86_400_000)).toBe(43_200_000);
    expect(barWidth(365 * 86_400_000)).toBe(4 * 86_400_000);
    for (const ms of [0, 1, 119, 120, 999, 61_000, 7_000_000, 1e12]) {
      expect(Math.floor(ms / barWidth(ms))).toBeLessThan(MAX_BARS);
    }
  });
});

describe("throughputWords", () => {
  it("counts jobs in a bar under a second wide: a rate over a millisecond means nothing", () => {
    expect(throughputWords(1, 80, 62)).toEqual({
      caption: "jobs finished per millisecond",
      peak: "peak 80 in 1 ms",
      end: "62 ms",
    });
    expect(throughputWords(200, 3, 23_800)).toEqual({
      caption: "jobs finished per 200 ms",
      peak: "peak 3 in 200 ms",
      end: "23.8 s",
    });
  });

  it("gives a rate per second for bars of a second or more, and the count in a wider one", () => {
    expect(throughputWords(1_000, 12, 45_200)).toEqual({
      caption: "jobs finished per second",
      peak: "peak 12/s",
      end: "45.2 s",
    });
    expect(throughputWords(2_000, 12, 204_903).peak).toBe("peak 12 in 2 s (6/s)");
    expect(throughputWords(10_000, 34, 1_000_000).peak).toBe("peak 34 in 10 s (3.4/s)");
    expect(throughputWords(60_000, 3, 3_600_000)).toEqual({
      caption: "jobs finished per minute",
      peak: "peak 3 in 1 min",
      end: "1 h 00 min",
    });
    expect(throughputWords(7_200_000, 9, 86_400_000).caption).toBe("jobs finished per 2 h");
  });

  it("says when nothing has finished yet", () => {
    expect(throughputWords(1, 0, 0).peak).toBe("none finished yet");
  });
});

describe("Throughput", () => {
  it("draws a simulated run of 62 virtual ms in 1 ms bars, with every job in its bar", () => {
    const throughput = new Throughput();
    for (const at of [3, 3, 4, 40, 61]) throughput.finished(at);
    throughput.at(62);
    const view = throughput.view();
    expect(view.barMs).toBe(1);
    expect(view.slots).toBe(63);
    expect(view.bars).toHaveLength(63);
    expect(view.bars[3]).toBe(2);
    expect(view.bars[61]).toBe(1);
    expect(view.peak).toBe("peak 2 in 1 ms");
  });

  it("merges bars as the run goes on, and keeps the axis to a replay's whole length", () => {
    const live = new Throughput();
    live.finished(50);
    live.finished(150);
    live.at(45_200);
    expect(live.view()).toMatchObject({ barMs: 1_000, bars: [2, ...Array(45).fill(0)], slots: 46 });
    const replay = new Throughput(204_903);
    replay.finished(1_500);
    expect(replay.view()).toMatchObject({ barMs: 2_000, bars: [1], slots: 103, end: "3 min 25 s" });
  });

  it("keeps every finished job, in at most 120 bars, whatever the times (property)", () => {
    throwIfFailed(
      fc.check(
        fc.property(
          fc.array(fc.integer({ min: 0, max: 10 ** 10 }), { maxLength: 200 }),
          (times) => {
            const throughput = new Throughput();
            for (const at of [...times].sort((a, b) => a - b)) throughput.finished(at);
            const view = throughput.view();
            const last = Math.max(0, ...times);
            return (
              view.bars.reduce((a, b) => a + b, 0) === times.length &&
              view.bars.length <= MAX_BARS &&
              view.barMs === barWidth(last) &&
              times.every((at) => view.bars[Math.floor(at / view.barMs)]! > 0)
            );
          },
        ),
        propertyParameters(propertyRuns(300)),
      ),
      import.meta.url,
    );
  });
});
