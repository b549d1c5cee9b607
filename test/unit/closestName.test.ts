import { describe, expect, it } from "vitest";
import { closestName, didYouMeanEach } from "../../src/closestName.ts";

describe("closestName", () => {
  it.each([
    ["failfast", ["jobs", "failFast", "force"], "failFast"],
    ["retires", ["after", "retries", "requires"], "retries"],
    ["prot", ["port", "replay"], "port"],
    ["cout", ["count", "resources"], "count"],
    ["maxWorker", ["maxWorkers", "partition"], "maxWorkers"],
    ["loadTimeout", ["loadTimeoutMs", "readyTimeoutMs"], "loadTimeoutMs"],
    ["rnu", ["run", "worker", "sim"], "run"],
    ["doubel", ["double", "triple"], "double"],
  ])("takes %s for a typo of one of %o: %s", (name, names, expected) => {
    expect(closestName(name, names)).toBe(expected);
  });

  it.each([
    ["colour", ["jobs", "workers"]],
    ["ab", ["xy", "cd"]],
    ["sim", ["run", "viz"]],
    ["workers", ["signal"]],
    ["anything", []],
  ])("names none for %s among %o, which is no likely typo", (name, names) => {
    expect(closestName(name, names)).toBeUndefined();
  });

  it("takes the closest when several are near, the first of equals", () => {
    expect(closestName("worker", ["workers", "work"])).toBe("workers");
    expect(closestName("abcd", ["abce", "abcf"])).toBe("abce");
  });
});

describe("didYouMeanEach", () => {
  it("names the close name of one unknown name, or of each of several that has one", () => {
    const kinds = ["square", "sum", "report"];
    expect(didYouMeanEach(["sqaure"], kinds, (kind) => `"${kind}"`)).toBe(
      '; did you mean "square"?',
    );
    expect(didYouMeanEach(["sqaure", "colour", "reprot"], kinds)).toBe(
      "; did you mean square for sqaure, report for reprot?",
    );
    expect(didYouMeanEach(["colour"], kinds)).toBe("");
  });
});
