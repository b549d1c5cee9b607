import { describe, expect, it } from "vitest";
import { formatDuration } from "../../src/formatDuration.ts";

describe("formatDuration", () => {
  it.each([
    [0, "0 ms"],
    [850, "850 ms"],
    [999.6, "1.0 s"],
    // Not "2s": baton status said a run of 2794 ms ran 2s.
    [2_794, "2.8 s"],
    [12_340, "12.3 s"],
    [59_960, "1 min 00 s"],
    [119_600, "2 min 00 s"],
    [245_000, "4 min 05 s"],
    [3_599_600, "1 h 00 min"],
    [7_380_000, "2 h 03 min"],
    [86_340_000, "23 h 59 min"],
    [3 * 86_400_000 + 4 * 3_600_000, "3 d 04 h"],
    [-5, "0 ms"],
  ])("gives %d ms as %s, never 60 s of a minute", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
