import { describe, expect, it } from "vitest";
import { groupStatusLine } from "../../src/cli/groupStatusLine.ts";
import { GROUP_PROGRESS_FORMAT, type GroupProgress } from "../../src/viz/groupProgress.ts";

function progress(state: string, phases: string[]): GroupProgress {
  return {
    format: GROUP_PROGRESS_FORMAT,
    deployment: "dep-test",
    worldSize: phases.length,
    state,
    ranks: phases.map((phase, rank) => ({ rank, phase })),
  };
}

describe("groupStatusLine", () => {
  it("says what the group does, its ranks by phase (ready first) and the time since the launch", () => {
    expect(
      groupStatusLine(progress("barrier", ["loading", "ready", "loading", "spawning"]), 12_300),
    ).toBe("waiting for 4 ranks to be ready: 1 ready · 1 spawning · 2 loading · 12.3 s");
    expect(groupStatusLine(progress("running", ["ready", "ready", "exited"]), 125_000)).toBe(
      "3 ranks running: 2 ready · 1 exited · 2 min 05 s",
    );
    expect(groupStatusLine(progress("stopping", ["stopping", "lost"]), 400)).toBe(
      "stopping 2 ranks: 1 stopping · 1 lost · 400 ms",
    );
    expect(groupStatusLine(progress("launching", ["spawning"]), 50)).toBe(
      "starting 1 rank: 1 spawning · 50 ms",
    );
  });

  it("says that the group ended, or that its stop is not verified, not its machine's state", () => {
    // The machine's final state is "stopped" whether the group succeeded, failed or was stopped.
    expect(groupStatusLine(progress("stopped", ["exited", "exited"]), 4_100)).toBe(
      "2 ranks ended: 2 exited · 4.1 s",
    );
    expect(groupStatusLine(progress("teardownFailed", ["stopping"]), 4_100)).toBe(
      "the stop of 1 rank is not verified: 1 stopping · 4.1 s",
    );
  });

  it("counts no rank while the state dir is checked for orphans: none has started", () => {
    expect(groupStatusLine(progress("reaping", ["spawning", "spawning"]), 11)).toBe(
      "checking the state dir for orphaned ranks · 11 ms",
    );
  });
});
