/**
 * What README.md quotes of baton's output is what baton prints: each quote is produced here by
 * the code that prints it, and looked for in the README, so a change of wording that leaves
 * the README behind fails.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { summaryTable } from "../../src/cli/summaryTable.ts";
import type { JobOutcome, RunResult } from "../../src/runtime/run.ts";
import { ROOT } from "../fixtures/batonCli.ts";

const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** A run whose one job failed as `outcome` says. */
function failedRun(outcome: Partial<JobOutcome>): RunResult {
  const id = "0287a67c56965a9a";
  const job = {
    id,
    kind: "parse",
    status: "failed",
    cause: "error",
    attempts: 1,
    cached: false,
    lostWorkers: [],
    ...outcome,
  } as unknown as JobOutcome;
  return {
    run: "r",
    ok: false,
    jobs: new Map([[id, job]]),
    counts: { completed: 0, failed: 1, skipped: 0, cancelled: 0, cached: 0 },
    durationMs: 1200,
    get: () => {
      throw new Error("not used");
    },
    toJSON: () => {
      throw new Error("not used");
    },
  };
}

describe("README.md's quotes of baton run's summary", () => {
  it("lists a job that threw a NonRetryableError as the README says", () => {
    const summary = summaryTable(
      failedRun({
        worker: "local-1",
        error: { name: "NonRetryableError", message: "the row has no id", retryable: false },
      }),
    );
    const listed = /^✗ parse \w+ (\(.*?\)):/m.exec(summary)?.[1];
    expect(listed).toMatch(/^\(error, 1 attempt.*not retried\)$/);
    expect(README).toContain(`\`baton run\` lists it as \`${listed}\``);
  });
});
