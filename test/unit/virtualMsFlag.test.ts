/**
 * `baton sim --until` and `--faults-within`: virtual ms as a failure's command prints them, or a duration with its
 * unit as baton's other duration flags take one; at most 30 days either way.
 */
import { describe, expect, it } from "vitest";
import { virtualMsFlag } from "../../src/cli/virtualMsFlag.ts";
import { ConfigError } from "../../src/errors.ts";
import { SIM_LIMITS } from "../../src/sim/simLimits.ts";

describe("--until and --faults-within", () => {
  it.each([
    ["3600000", 3_600_000],
    ["1", 1],
    [String(SIM_LIMITS.virtualMs), SIM_LIMITS.virtualMs],
    ["250ms", 250],
    ["90s", 90_000],
    ["30m", 1_800_000],
    ["2h", 7_200_000],
    ["30d", SIM_LIMITS.virtualMs],
  ])("reads %s as %i virtual ms", (text, ms) => {
    expect(virtualMsFlag("--until", text)).toBe(ms);
  });

  it.each(["0", "0s", "-5", "1.5", "5x", "", "soon", "31d", String(SIM_LIMITS.virtualMs + 1)])(
    "refuses %j, naming both forms",
    (text) => {
      expect(() => virtualMsFlag("--faults-within", text)).toThrow(ConfigError);
      expect(() => virtualMsFlag("--until", text)).toThrow(
        `--until must be virtual ms, a whole number from 1 to 2592000000, or a duration and its unit such as 90s, 30m, 2h or 7d (at most 30d), not ${JSON.stringify(text)}`,
      );
    },
  );

  it("is undefined when absent", () => {
    expect(virtualMsFlag("--until", undefined)).toBeUndefined();
  });
});
