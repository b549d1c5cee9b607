import { describe, expect, it } from "vitest";
import { resultJson } from "../../src/cli/resultJson.ts";
import type { JobOutcome, RunResult } from "../../src/runtime/run.ts";

function resultOf(outcomes: Partial<JobOutcome>[]): RunResult {
  const jobs = new Map<string, JobOutcome>();
  for (const [n, outcome] of outcomes.entries()) {
    const id = n.toString(16).padStart(16, "0");
    jobs.set(id, {
      id,
      kind: "k",
      status: "completed",
      attempts: 1,
      lostWorkers: [],
      lostWhy: [],
      cached: false,
      ...outcome,
    } as JobOutcome);
  }
  const counts = { completed: jobs.size, failed: 0, skipped: 0, cancelled: 0, cached: 0 };
  return {
    run: "r1",
    ok: true,
    jobs,
    counts,
    durationMs: 12.4,
    get: () => {
      throw new Error("not used");
    },
    // The head of the line, as the engine's result gives it; the jobs are written one by one.
    toJSON: () => ({ run: "r1", ok: true, durationMs: 12, counts, jobs: [] }),
  };
}

describe("baton run --json", () => {
  it("is one line of the documented shape, one piece per job", () => {
    const pieces = [
      ...resultJson(
        resultOf([
          { value: { a: 1 }, startedAt: 1.2, finishedAt: 3.7 },
          {
            status: "failed",
            error: { name: "Error", message: "no" },
            cause: "error",
            lostWorkers: ["local-1"],
            lostWhy: [{ code: 1006, reason: "" }],
          },
        ]),
      ),
    ];
    expect(pieces).toHaveLength(4);
    const text = pieces.join("");
    expect(text.endsWith("}\n")).toBe(true);
    expect(text.indexOf("\n")).toBe(text.length - 1);
    const parsed = JSON.parse(text);
    expect(Object.keys(parsed)).toEqual(["run", "ok", "durationMs", "counts", "jobs"]);
    expect(parsed).toMatchObject({ run: "r1", ok: true, durationMs: 12 });
    expect(parsed.jobs).toEqual([
      {
        id: "0000000000000000",
        kind: "k",
        status: "completed",
        attempts: 1,
        cached: false,
        value: { a: 1 },
        startedAt: 1,
        finishedAt: 4,
      },
      {
        id: "0000000000000001",
        kind: "k",
        status: "failed",
        attempts: 1,
        cached: false,
        error: { name: "Error", message: "no" },
        cause: "error",
        lostWorkers: ["local-1"],
        lostWhy: [{ code: 1006, reason: "" }],
      },
    ]);
    expect(JSON.parse(`${[...resultJson(resultOf([]))].join("")}`).jobs).toEqual([]);
  });

  it("never makes one string of results longer together than V8's longest string", () => {
    // Five values of 110 million characters: 550 million, past the ~537 million V8 allows.
    const value = "x".repeat(110_000_000);
    let total = 0;
    let longest = 0;
    for (const piece of resultJson(resultOf(Array.from({ length: 5 }, () => ({ value }))))) {
      total += piece.length;
      longest = Math.max(longest, piece.length);
    }
    expect(total).toBeGreaterThan(550_000_000);
    expect(longest).toBeLessThan(111_000_000);
  });
});
