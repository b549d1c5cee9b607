import { describe, expect, it } from "vitest";
import { parseStat } from "../../src/runtime/procStat.ts";

describe("parseStat", () => {
  it("says a process is exiting when its flags have PF_EXITING (0x4), and only then", () => {
    const stat = (flags: number) =>
      `43 (a) b) R 1 43 43 0 -1 ${flags} 96 0 0 0 0 0 0 0 20 0 1 0 123456`;
    expect(parseStat(43, stat(0x400000))).toEqual({
      pid: 43,
      ppid: 1,
      pgid: 43,
      state: "running",
      name: "a) b",
    });
    expect(parseStat(43, stat(0x400004))).toEqual({
      pid: 43,
      ppid: 1,
      pgid: 43,
      state: "running",
      name: "a) b",
      exiting: true,
    });
  });

  it("reads the kernel's name for the program, which may hold spaces and parentheses", () => {
    const stat = (comm: string) =>
      `44 (${comm}) S 1 44 44 0 -1 4194304 96 0 0 0 0 0 0 0 20 0 1 0 9`;
    expect(parseStat(44, stat("python3")).name).toBe("python3");
    expect(parseStat(44, stat("(sd-pam)")).name).toBe("(sd-pam)");
    expect(parseStat(44, stat("a) b (c")).name).toBe("a) b (c");
  });
});
