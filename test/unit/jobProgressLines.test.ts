import { describe, expect, it } from "vitest";
import { JobProgressLines } from "../../src/cli/jobProgressLines.ts";
import { GROUP_PROGRESS_FORMAT, groupProgressMessage } from "../../src/viz/groupProgress.ts";

const report = (id: string, fields: { done?: number; total?: number; message?: string }) => ({
  id,
  kind: "fetch",
  worker: "local-1",
  ...fields,
});

describe("JobProgressLines", () => {
  it("gives each reporting job a line, its last report, until it ended", () => {
    const lines = new JobProgressLines();
    lines.report(report("a1", { done: 1, total: 4, message: "page 1" }), 0);
    lines.report(report("b2", { done: 7 }), 0);
    lines.report(report("a1", { done: 2, total: 4, message: "page 2" }), 10);
    lines.report(report("c3", {}), 20);
    expect(lines.lines(30)).toEqual([
      "  fetch a1: 2/4 · page 2",
      "  fetch b2: 7",
      "  fetch c3: running",
    ]);
    lines.ended("a1");
    expect(lines.lines(30)).toEqual(["  fetch b2: 7", "  fetch c3: running"]);
  });

  it("keeps a message of many lines, or with control characters, on its line", () => {
    const lines = new JobProgressLines();
    lines.report(report("a1", { message: "loading\nshard 3\x1b[2J\r" }), 0);
    expect(lines.lines(0)).toEqual(["  fetch a1: loading shard 3 [2J"]);
  });

  it("shows the first three jobs that reported, then how many more report", () => {
    const lines = new JobProgressLines();
    for (const id of ["a", "b", "c", "d", "e"]) lines.report(report(id, { done: 1 }), 0);
    expect(lines.lines(0)).toEqual([
      "  fetch a: 1",
      "  fetch b: 1",
      "  fetch c: 1",
      "  … and 2 more jobs reporting progress",
    ]);
  });

  it("shows a rank job's report of its group as baton launch's line, timed from its first report", () => {
    const lines = new JobProgressLines();
    const group = (state: string, phase: string) =>
      groupProgressMessage({
        format: GROUP_PROGRESS_FORMAT,
        deployment: "dep-1",
        worldSize: 2,
        state,
        ranks: [
          { rank: 0, phase },
          { rank: 1, phase: "ready" },
        ],
      });
    lines.report(
      { ...report("r1", { message: group("barrier", "loading") }), kind: "train" },
      1_000,
    );
    lines.report({ ...report("r1", { message: group("running", "ready") }), kind: "train" }, 3_000);
    expect(lines.lines(13_300)).toEqual(["  train r1: 2 ranks running: 2 ready · 12.3 s"]);
  });
});
