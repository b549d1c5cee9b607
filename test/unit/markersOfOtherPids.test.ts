import { describe, expect, it } from "vitest";
import { markersOfOtherPids } from "../../src/runtime/markersOfOtherPids.ts";

const EXEC =
  ": a marker counts only when its pid is that process's own, so a wrapper (a shell script, sh -c, conda run) must exec the program (`exec python3 train.py`), not run it as a child.";

describe("markersOfOtherPids", () => {
  it("names the rank, the pid in its marker and the one baton started, and says to exec", () => {
    expect(markersOfOtherPids([{ rank: 2, started: 4242, inMarker: 4250 }])).toBe(
      ` Rank 2 did write a marker, but it names pid 4250, not 4242, the process baton started for it${EXEC}`,
    );
  });

  it("lists several ranks in one sentence, quoting the first's pids", () => {
    expect(
      markersOfOtherPids([
        { rank: 0, started: 10, inMarker: 11 },
        { rank: 1, started: 12, inMarker: 13 },
        { rank: 2, started: 14, inMarker: 15 },
      ]),
    ).toBe(
      ` Ranks 0-2 did write markers, but each names another pid than the process baton started for it (rank 0's names pid 11, not 10)${EXEC}`,
    );
  });

  it("adds nothing when every marker read was its rank's own", () => {
    expect(markersOfOtherPids([])).toBe("");
  });
});
