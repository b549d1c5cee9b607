import { describe, expect, it } from "vitest";
import { dryRunReport } from "../../src/cli/dryRunReport.ts";
import type { RunPlan } from "../../src/runtime/engine.ts";

/** A plan of `jobs` jobs of kind `fetch`, the first `stored` of them stored, and `corrupt` entries. */
function planOf(jobs: number, stored: number, corrupt: number): RunPlan {
  return {
    jobs: Array.from({ length: jobs }, (_, n) => ({
      id: n.toString(16).padStart(16, "0"),
      kind: "fetch",
      deps: [],
      stored: n < stored,
    })),
    counts: { jobs, stored, toRun: jobs - stored, corrupt },
  };
}

describe("dryRunReport", () => {
  it("says how many stored entries are corrupt, in the right number", () => {
    const store = { dir: ".baton", force: false };
    expect(dryRunReport(planOf(3, 1, 1), store)).toContain(
      "\n1 stored result is corrupt: a run moves it aside and recomputes it\n",
    );
    expect(dryRunReport(planOf(3, 0, 2), store)).toContain(
      "\n2 stored results are corrupt: a run moves them aside and recomputes them\n",
    );
    expect(dryRunReport(planOf(3, 3, 0), store)).not.toContain("corrupt");
  });

  it("says how many results are stored, in the right number", () => {
    const store = { dir: ".baton", force: false };
    expect(dryRunReport(planOf(2, 1, 0), store)).toContain(
      "\ndry run: 1 of 2 jobs would run (1 result stored in .baton);",
    );
    expect(dryRunReport(planOf(3, 2, 0), store)).toContain("(2 results stored in .baton);");
  });
});
