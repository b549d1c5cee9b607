import { describe, expect, it } from "vitest";
import { markersNotCounted } from "../../src/runtime/markersNotCounted.ts";

const EXEC =
  ": a marker counts only when its pid is that process's own, so a wrapper (a shell script, sh -c, conda run) must exec the program (`exec python3 train.py`), not run it as a child.";
const MISSING =
  '/s/d/rank-1.marker.json is not a valid baton.marker/1 file: field "epoch" must be an integer ≥ 0; it is missing (the format is documented in ARCHITECTURE.md, "Rank-side files and library")';

describe("markersNotCounted", () => {
  it("names the rank, the pid in its marker and the one baton started, and says to exec", () => {
    expect(markersNotCounted([{ rank: 2, started: 4242, inMarker: 4250 }])).toBe(
      ` Rank 2 did write a marker, but it names pid 4250, not 4242, the process baton started for it${EXEC}`,
    );
  });

  it("lists several ranks in one sentence, by rank, quoting the first's pids", () => {
    expect(
      markersNotCounted([
        { rank: 2, started: 14, inMarker: 15 },
        { rank: 0, started: 10, inMarker: 11 },
        { rank: 1, started: 12, inMarker: 13 },
      ]),
    ).toBe(
      ` Ranks 0-2 did write markers, but each names another pid than the process baton started for it (rank 0's names pid 11, not 10)${EXEC}`,
    );
  });

  it("says a malformed marker was not counted, and what is wrong with it", () => {
    expect(markersNotCounted([{ rank: 1, malformed: MISSING }])).toBe(
      ` Rank 1's marker was not counted: ${MISSING}.`,
    );
    expect(
      markersNotCounted([
        { rank: 3, malformed: "another" },
        { rank: 1, malformed: MISSING },
        { rank: 0, started: 10, inMarker: 11 },
      ]),
    ).toBe(
      ` Rank 0 did write a marker, but it names pid 11, not 10, the process baton started for it${EXEC} The markers of ranks 1, 3 were not counted (rank 1's shown): ${MISSING}.`,
    );
  });

  it("adds nothing when every marker read was its rank's own", () => {
    expect(markersNotCounted([])).toBe("");
  });
});
