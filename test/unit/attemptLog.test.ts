import { describe, expect, it } from "vitest";
import { AttemptLog } from "../../src/runtime/attemptLog.ts";

describe("AttemptLog", () => {
  it("keeps each attempt in order, and a finish time only where one was given", () => {
    const log = new AttemptLog();
    const first = log.start("a", "local-1", 1_000);
    const second = log.start("b", undefined, 1_005);
    const retry = log.start("a", "local-2", 1_010);
    log.finish(retry, 1_020);
    expect([first, second, retry]).toEqual([0, 1, 2]);
    expect(log.size).toBe(3);
    expect(log.jobs).toEqual(["a", "b", "a"]);
    expect(log.workers).toEqual(["local-1", undefined, "local-2"]);
    expect(log.startedAt).toEqual([1_000, 1_005, 1_010]);
    expect(log.finishedAt).toEqual([Number.NaN, Number.NaN, 1_020]);
  });
});
