import { describe, expect, it } from "vitest";
import { durationFlag } from "../../src/cli/durationFlag.ts";
import { ConfigError } from "../../src/errors.ts";

describe("a duration flag", () => {
  it.each([
    ["250ms", 250],
    ["90s", 90_000],
    ["10m", 600_000],
    ["2h", 7_200_000],
    ["7d", 604_800_000],
  ])("reads %s as %i ms", (text, ms) => {
    expect(durationFlag("--retry-for", text)).toBe(ms);
  });

  it("reads never as Infinity where the flag takes it, and says so when refusing", () => {
    expect(durationFlag("--slurm-idle-exit", "never", { never: true })).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(durationFlag("--slurm-idle-exit", "5m", { never: true })).toBe(300_000);
    expect(() => durationFlag("--slurm-idle-exit", "0", { never: true })).toThrow(
      '--slurm-idle-exit must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), or never, not "0"',
    );
    expect(() => durationFlag("--retry-for", "never")).toThrow('(ms, s, m, h, d), not "never"');
  });

  it("is undefined when absent", () => {
    expect(durationFlag("--retry-for", undefined)).toBeUndefined();
  });

  it.each(["10", "0s", "-5m", "1.5h", "10 m", "ten", "", "10M", "9999999999999d"])(
    "refuses %j, naming the flag and the units",
    (text) => {
      expect(() => durationFlag("--retry-for", text)).toThrow(ConfigError);
      expect(() => durationFlag("--retry-for", text)).toThrow(
        `--retry-for must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "${text}"`,
      );
    },
  );
});
