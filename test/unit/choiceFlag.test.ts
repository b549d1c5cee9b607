import { describe, expect, it } from "vitest";
import { choiceFlag } from "../../src/cli/choiceFlag.ts";
import { ConfigError } from "../../src/errors.ts";

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;

describe("choiceFlag", () => {
  it("takes one of the choices as it is", () => {
    expect(choiceFlag("--log-level", "info", LEVELS)).toBe("info");
  });

  it("refuses anything else, listing the choices, and names the one a typo meant", () => {
    expect(() => choiceFlag("--faults", "hevy", ["none", "default", "heavy"])).toThrow(
      new ConfigError(
        '--faults must be one of none, default, heavy, not "hevy"; did you mean heavy?',
      ),
    );
    expect(() => choiceFlag("--log-level", "debgu", LEVELS)).toThrow(/; did you mean debug\?$/);
    expect(() => choiceFlag("--log-level", "verbose", LEVELS)).toThrow(
      /^--log-level must be one of trace, debug, info, warn, error, fatal, silent, not "verbose"$/,
    );
  });
});
