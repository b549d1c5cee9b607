import { describe, expect, it } from "vitest";
import { graphValueLines } from "../../src/cli/graphValueLines.ts";
import { type JobSpec, job } from "../../src/graph/job.ts";
import type { JobOutcome, RunResult } from "../../src/runtime/run.ts";

/** A run whose `get` finds each job by its input, which is its id here. */
function runOf(outcomes: Record<string, Partial<JobOutcome>>): RunResult {
  return {
    get: (spec: JobSpec) => ({
      id: spec.input,
      kind: spec.kind,
      status: "completed",
      value: null,
      ...outcomes[spec.input as string],
    }),
  } as unknown as RunResult;
}

describe("graphValueLines", () => {
  it("gives the value of each job of the graph that completed, once, as compact JSON", () => {
    const run = runOf({
      a1: { value: { n: [1, 2] } },
      b2: { status: "failed", error: { message: "boom" } } as Partial<JobOutcome>,
      c3: { value: "line\nnext" },
    });
    const [a, b, c] = [job("sum", "a1"), job("sum", "b2"), job("text", "c3")];
    expect(graphValueLines(run, [a, b, c, job("sum", "a1")])).toEqual([
      'sum a1: {"n":[1,2]}',
      'text c3: "line\\nnext"',
    ]);
    expect(graphValueLines(run, [b])).toEqual([]);
  });

  it("cuts a long value and counts the jobs past the most it shows", () => {
    const run = runOf({ long: { value: "x".repeat(300) } });
    expect(graphValueLines(run, [job("text", "long")], { maxChars: 10 })).toEqual([
      'text long: "xxxxxxxxx… (302 characters; --json prints it whole)',
    ]);
    const graph = ["j1", "j2", "j3", "j4"].map((id) => job("n", id));
    expect(graphValueLines(runOf({}), graph, { maxJobs: 2 })).toEqual([
      "n j1: null",
      "n j2: null",
      "… and 2 more jobs of the graph (--json prints every value)",
    ]);
    // One more than the most: shown, as it would take a line to count.
    expect(graphValueLines(runOf({}), graph, { maxJobs: 3 })).toEqual([
      "n j1: null",
      "n j2: null",
      "n j3: null",
      "n j4: null",
    ]);
  });
});
