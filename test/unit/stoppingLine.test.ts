import { describe, expect, it } from "vitest";
import { stoppingHow, stoppingLine } from "../../src/cli/stoppingLine.ts";
import {
  GROUP_PROGRESS_FORMAT,
  type GroupProgress,
  type RankProgress,
} from "../../src/viz/groupProgress.ts";

const progress = (ranks: RankProgress[]): GroupProgress => ({
  format: GROUP_PROGRESS_FORMAT,
  deployment: "train",
  worldSize: ranks.length,
  state: "stopping",
  ranks,
});

const HOW = "(SIGTERM, then SIGKILL after 10000 ms, or at once on Ctrl-C)";

describe("stoppingLine", () => {
  it("names the rank that failed and how, and counts the ranks still running", () => {
    expect(
      stoppingLine(
        progress([
          { rank: 0, phase: "stopping", pid: 10 },
          { rank: 1, phase: "failed", pid: 11, code: 5 },
          { rank: 2, phase: "ready", pid: 12 },
        ]),
        10_000,
      ),
    ).toBe(`rank 1 exited with code 5: stopping the other 2 ranks, those that still run ${HOW}`);
    expect(
      stoppingLine(
        progress([
          { rank: 0, phase: "failed", pid: 10, signal: "SIGSEGV" },
          { rank: 1, phase: "ready", pid: 11 },
        ]),
        10_000,
      ),
    ).toBe(`rank 0 was killed by SIGSEGV: stopping the other rank if it still runs ${HOW}`);
    expect(
      stoppingLine(
        progress([
          { rank: 0, phase: "lost", pid: 10 },
          { rank: 1, phase: "ready", pid: 11 },
        ]),
        10_000,
      ),
    ).toBe(`rank 0 stopped renewing its marker (hung or cut off): stopping all 2 ranks ${HOW}`);
  });

  it("says a rank that could not be started was not, and counts the ranks already started", () => {
    // A rank on an ssh host whose program is not there, after the rank here started.
    expect(
      stoppingLine(
        progress([
          { rank: 0, phase: "ready", pid: 10 },
          { rank: 1, phase: "failed" },
        ]),
        10_000,
      ),
    ).toBe(`rank 1 could not be started: stopping the rank already started ${HOW}`);
    expect(
      stoppingLine(
        progress([
          { rank: 0, phase: "loading", pid: 10 },
          { rank: 1, phase: "loading", pid: 11 },
          { rank: 2, phase: "failed" },
        ]),
        10_000,
      ),
    ).toBe(`rank 2 could not be started: stopping the 2 ranks already started ${HOW}`);
  });

  it("says the group failed when no rank did (a load timeout, a lease lost)", () => {
    expect(
      stoppingLine(
        progress([
          { rank: 0, phase: "loading", pid: 10 },
          { rank: 1, phase: "loading", pid: 11 },
        ]),
        10_000,
      ),
    ).toBe(`the group failed: stopping its 2 ranks ${HOW}`);
  });

  it("says nothing when no rank is left running, or none was started", () => {
    expect(
      stoppingLine(
        progress([
          { rank: 0, phase: "exited", pid: 10, code: 0 },
          { rank: 1, phase: "exited", pid: 11, code: 0 },
        ]),
        10_000,
      ),
    ).toBeUndefined();
    expect(stoppingLine(progress([{ rank: 0, phase: "spawning" }]), 10_000)).toBeUndefined();
  });

  it("tells a stop a signal began that a second Ctrl-C cuts the grace short", () => {
    expect(stoppingHow(300, "a second Ctrl-C")).toBe(
      "(SIGTERM, then SIGKILL after 300 ms, or at once on a second Ctrl-C)",
    );
    expect(stoppingHow(10_000, "Ctrl-C")).toBe(HOW);
  });
});
