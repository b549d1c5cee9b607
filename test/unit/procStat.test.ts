import { describe, expect, it } from "vitest";
import { parseStat } from "../../src/runtime/procStat.ts";

describe("parseStat", () => {
  it("says a process is exiting when its flags have PF_EXITING (0x4), and only then", () => {
    const stat = (flags: number) =>
      `43 (a) b) R 1 43 43 0 -1 ${flags} 96 0 0 0 0 0 0 0 20 0 1 0 123456`;
    expect(parseStat(43, stat(0x400000))).toEqual({ pid: 43, ppid: 1, pgid: 43, state: "running" });
    expect(parseStat(43, stat(0x400004))).toEqual({
      pid: 43,
      ppid: 1,
      pgid: 43,
      state: "running",
      exiting: true,
    });
  });
});
