/**
 * One strict parser for the whole numbers of command-line flags: digits only (no sign,
 * decimal point, exponent or hex), within the flag's range, or a `ConfigError` naming it.
 */
import { describe, expect, it } from "vitest";
import { uiPortFlag } from "../../src/cli/uiPortFlag.ts";
import { MILLISECONDS, wholeNumberFlag } from "../../src/cli/wholeNumberFlag.ts";
import { ConfigError } from "../../src/errors.ts";

describe("wholeNumberFlag", () => {
  it("takes digits within the range, leading zeros included, and nothing for an absent flag", () => {
    expect(wholeNumberFlag("--n", "42", "a number")).toBe(42);
    expect(wholeNumberFlag("--n", "00", "a number", { least: 0 })).toBe(0);
    expect(wholeNumberFlag("--n", "0", "a number", { least: 0, most: 5 })).toBe(0);
    expect(wholeNumberFlag("--n", undefined, "a number")).toBeUndefined();
  });

  it.each(["1e3", "0x10", "-1", "1.5", " 7", "", "abc", "99999999999999999999"])(
    'refuses "%s"',
    (text) => {
      expect(() => wholeNumberFlag("--grace-ms", text, MILLISECONDS)).toThrow(ConfigError);
      expect(() => wholeNumberFlag("--grace-ms", text, MILLISECONDS)).toThrow(
        `--grace-ms must be a whole number of milliseconds ≥ 1, not "${text}"`,
      );
    },
  );

  it("names the range when it has an upper bound", () => {
    expect(() => wholeNumberFlag("--n", "0", "a number", { most: 9 })).toThrow(
      '--n must be a number from 1 to 9, not "0"',
    );
  });

  it("says what to do instead of a number above the range, when the range says", () => {
    const range = { most: 9, beyond: "keep the rest yourself" };
    expect(() => wholeNumberFlag("--n", "10", "a number", range)).toThrow(
      new ConfigError('--n must be a number from 1 to 9, not "10"; keep the rest yourself'),
    );
    expect(() => wholeNumberFlag("--n", "0", "a number", range)).toThrow(
      new ConfigError('--n must be a number from 1 to 9, not "0"'),
    );
  });
});

describe("uiPortFlag", () => {
  it("takes 0 (any free port) to 65535, and 0 when absent", () => {
    expect(uiPortFlag("0")).toBe(0);
    expect(uiPortFlag("65535")).toBe(65_535);
    expect(uiPortFlag(undefined)).toBe(0);
  });

  it("refuses a port out of range before anything listens", () => {
    expect(() => uiPortFlag("99999")).toThrow(
      '--ui-port must be a TCP port from 0 to 65535, not "99999"',
    );
  });
});
