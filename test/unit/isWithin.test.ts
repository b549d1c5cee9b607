import { describe, expect, it } from "vitest";
import { isWithin } from "../../src/runtime/isWithin.ts";

describe("isWithin", () => {
  it.each([
    ["/data/store", "/data/store", true],
    ["/data/store/logs/run-1", "/data/store", true],
    ["/data/store/../store/logs", "/data/store/", true],
    ["/data/store-old", "/data/store", false],
    ["/data", "/data/store", false],
    ["/data/..store", "/data", true],
    ["/elsewhere", "/data/store", false],
  ])("%s within %s: %s", (path, dir, within) => {
    expect(isWithin(path, dir)).toBe(within);
  });

  it("resolves relative paths against the working directory", () => {
    expect(isWithin(".baton/logs", process.cwd())).toBe(true);
    expect(isWithin("..", process.cwd())).toBe(false);
  });
});
