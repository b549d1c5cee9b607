/** What a rank's code above 128 on an ssh host adds to its failure: the signal it may be. */
import { describe, expect, it } from "vitest";
import { remoteExitCodeNote } from "../../src/runtime/remoteExitCode.ts";

describe("remoteExitCodeNote", () => {
  it("names the signal 128 + N may be, and nothing for a code that cannot be one", () => {
    expect(remoteExitCodeNote(143, "ssh://alice@gpu-2")).toBe(
      " On ssh://alice@gpu-2 its shell reports code 143 both for a rank killed by signal 15 (SIGTERM) and for one that exits with 143: baton cannot tell which it was.",
    );
    // A realtime signal has no name.
    expect(remoteExitCodeNote(128 + 40, "ssh://alice@gpu-2")).toContain("killed by signal 40 and");
    for (const code of [0, 1, 127, 128, 128 + 65, 255]) {
      expect(remoteExitCodeNote(code, "ssh://alice@gpu-2")).toBe("");
    }
  });
});
