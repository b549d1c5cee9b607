import { describe, expect, it } from "vitest";
import { summaryTable } from "../../src/cli/summaryTable.ts";
import { localWorkerLogOf } from "../../src/runtime/localWorkerNames.ts";
import type { JobOutcome, RunResult } from "../../src/runtime/run.ts";

/** A finished run of `count` completed jobs, `cached` of them taken from the store. */
function completedRun(count: number, cached: number): RunResult {
  const jobs = new Map<string, JobOutcome>();
  for (let n = 0; n < count; n++) {
    const id = n.toString(16).padStart(16, "0");
    jobs.set(id, {
      id,
      kind: "leaf",
      status: "completed",
      attempts: n < cached ? 0 : 1,
      cached: n < cached,
      value: n,
      lostWorkers: [],
      lostWhy: [],
    } as unknown as JobOutcome);
  }
  return {
    run: "r",
    ok: true,
    jobs,
    counts: { completed: count, failed: 0, skipped: 0, cancelled: 0, cached },
    durationMs: 1200,
    get: () => {
      throw new Error("not used");
    },
    toJSON: () => {
      throw new Error("not used");
    },
  };
}

describe("summaryTable", () => {
  it("says that a graph of no jobs ran nothing, where it gave an empty table and every job completed", () => {
    expect(summaryTable(completedRun(0, 0))).toBe("the graph has no jobs: nothing ran\n");
  });

  it("names the logs of the workers a job failed as poison took down, when the run knows them", () => {
    const broke = { code: 1006, reason: "" };
    const run = completedRun(1, 0);
    const [poison] = [...run.jobs.values()] as [JobOutcome];
    Object.assign(poison, {
      status: "failed",
      cause: "poison",
      attempts: 3,
      worker: "local-1.2",
      lostWorkers: ["local-1", "local-2", "local-1.2"],
      lostWhy: [broke, broke, broke],
      error: { name: "Poison", message: "… Look at those workers' logs for how they died." },
    });
    const workerLog = (worker: string) => localWorkerLogOf("logs/run", worker);
    const line = (table: string) => table.split("\n").find((l) => l.startsWith("✗"));
    // A slot's replacements share its log: each log named once.
    expect(line(summaryTable(run, { workerLog }))).toMatch(
      /how they died\. Their logs: logs\/run\/worker-1\.log, logs\/run\/worker-2\.log$/,
    );
    // Workers whose logs the run does not know (started by hand, Slurm's): as before.
    expect(line(summaryTable(run))).toMatch(/how they died\.$/);
    expect(line(summaryTable(run, { workerLog: () => undefined }))).toMatch(/how they died\.$/);
  });

  it("names the worker of a failed job's last attempt, and the workers lost under jobs", () => {
    const broke = { code: 1006, reason: "" };
    const run = completedRun(2, 0);
    const [first, second] = [...run.jobs.values()] as [JobOutcome, JobOutcome];
    Object.assign(first, {
      status: "failed",
      cause: "error",
      attempts: 2,
      worker: "node-7",
      lostWorkers: ["local-3"],
      lostWhy: [broke],
      error: { name: "Error", message: "boom" },
    });
    Object.assign(second, {
      attempts: 3,
      worker: "local-1",
      lostWorkers: ["local-3", "local-4"],
      lostWhy: [broke, { code: 4005, reason: "no heartbeat for 20000 ms" }],
    });
    const once = { ...first, id: "f".repeat(16), attempts: 1, lostWorkers: [], lostWhy: [] };
    run.jobs.set(once.id, once as JobOutcome);
    const summary = summaryTable({
      ...run,
      ok: false,
      counts: { completed: 1, failed: 2, skipped: 0, cancelled: 0, cached: 0 },
    });
    expect(summary).toContain(`\n✗ leaf ${first.id} (error, 2 attempts, last on node-7): boom\n`);
    expect(summary).toContain(`\n✗ leaf ${once.id} (error, 1 attempt on node-7): boom\n`);
    expect(summary).toContain(
      "\n2 workers lost while running a job: local-3 (connection broke), local-4 (lease expired)\n",
    );
    expect(summaryTable(completedRun(3, 0))).not.toContain("lost");
    // The stacks are in the run's log, named only when a job failed.
    expect(summary).not.toContain("with its stack");
    const runLog = "/srv/.baton/logs/2026-12-06T09-00-00-000Z-pcmBHhPR/run.log";
    const failed = summaryTable(
      {
        ...run,
        ok: false,
        counts: { completed: 1, failed: 2, skipped: 0, cancelled: 0, cached: 0 },
      },
      { runLog },
    );
    // The failures, the workers lost under them, then where the stacks are.
    expect(failed).toContain(
      `: boom\n2 workers lost while running a job: local-3 (connection broke), local-4 (lease expired)\neach failed attempt, with its stack: ${runLog}\n`,
    );
    expect(summaryTable(completedRun(3, 0), { runLog })).not.toContain(runLog);
  });

  it("says of a timed-out job that its handler had not finished, not that its stack is in the log", () => {
    const runLog = "/srv/.baton/logs/2026-12-06T09-00-00-000Z-pcmBHhPR/run.log";
    const run = completedRun(2, 0);
    const [late, broken] = run.jobs.values();
    const timeout = {
      name: "JobTimeout",
      message: `job ${late!.id} (leaf) ran longer than its timeout of 300 ms (attempt 1), so its worker was told to stop it; give the job a longer timeoutMs if it needs more time`,
    };
    Object.assign(late!, { status: "failed", cause: "error", error: timeout });
    const counts = { completed: 1, failed: 1, skipped: 0, cancelled: 0, cached: 0 };
    const summary = summaryTable({ ...run, ok: false, counts }, { runLog });
    expect(summary).toContain(
      `: ${timeout.message}\neach attempt that timed out, and its worker: ${runLog}; a timeout has no stack (its handler had not finished): what the handler logged with ctx.log shows how far it got\n`,
    );
    Object.assign(broken!, { status: "failed", cause: "error", error: { message: "boom" } });
    const both = summaryTable(
      { ...run, ok: false, counts: { ...counts, completed: 0, failed: 2 } },
      { runLog },
    );
    expect(both).toContain(
      `\neach failed attempt, with its stack (none for one that timed out: its handler had not finished): ${runLog}\n`,
    );
  });

  it("says why the jobs it counts as skipped never ran, naming one and the job that failed", () => {
    /** A run whose jobs after the first are skipped for its failure. */
    const skippedRun = (skipped: number): RunResult => {
      const run = completedRun(skipped + 1, 0);
      const [failed, ...rest] = run.jobs.values();
      Object.assign(failed!, { status: "failed", cause: "error", error: { message: "boom" } });
      for (const outcome of rest) {
        Object.assign(outcome, {
          status: "skipped",
          cause: "skipped",
          attempts: 0,
          error: {
            name: "Skipped",
            message: `skipped because dependency ${failed!.id} (leaf) failed: boom`,
          },
        });
      }
      return {
        ...run,
        ok: false,
        counts: { completed: 0, failed: 1, skipped, cancelled: 0, cached: 0 },
      };
    };
    const zero = "0".repeat(16);
    expect(summaryTable(skippedRun(1))).toContain(
      `\n1 job skipped: leaf ${"0".repeat(15)}1, skipped because dependency ${zero} (leaf) failed: boom\n`,
    );
    const runLog = "/srv/.baton/logs/2026-12-06T09-00-00-000Z-pcmBHhPR/run.log";
    expect(summaryTable(skippedRun(3), { runLog })).toContain(
      `\n3 jobs skipped, such as leaf ${"0".repeat(15)}1, skipped because dependency ${zero} (leaf) failed: boom (run.log names each one's)\n`,
    );
    // A run that has no log points to none.
    expect(summaryTable(skippedRun(3))).toContain(
      `\n3 jobs skipped, such as leaf ${"0".repeat(15)}1, skipped because dependency ${zero} (leaf) failed: boom\n`,
    );
    expect(summaryTable(completedRun(3, 0))).not.toContain("skipped:");
  });

  it("says how many stored results were reused, in the right number", () => {
    expect(summaryTable(completedRun(3, 2))).toContain(
      "\n2 results reused from the store (--force recomputes them)\n✓ every job completed in 1.2 s\n",
    );
    expect(summaryTable(completedRun(3, 1))).toContain(
      "\n1 result reused from the store (--force recomputes it)\n",
    );
    expect(summaryTable(completedRun(3, 0))).not.toContain("reused");
  });

  it("says that a rerun resumes a run that did not complete from the results it stored", () => {
    const stopped = (completed: number): RunResult => ({
      ...completedRun(completed, 0),
      ok: false,
      counts: { completed, failed: 0, skipped: 0, cancelled: 6, cached: 0 },
    });
    expect(summaryTable(stopped(2), { keepsResults: true })).toContain(
      "\n2 completed results are stored: the same baton run again reuses them and runs the rest\n✗ the run did not complete in 1.2 s\n",
    );
    expect(summaryTable(stopped(1), { keepsResults: true })).toContain(
      "\n1 completed result is stored: the same baton run again reuses it and runs the rest\n",
    );
    // Nothing kept (--no-store, --store-read-only), nothing completed, or nothing to resume.
    expect(summaryTable(stopped(2))).not.toContain("stored:");
    expect(summaryTable(stopped(0), { keepsResults: true })).not.toContain("stored:");
    expect(summaryTable(completedRun(3, 0), { keepsResults: true })).not.toContain("stored:");
  });

  it("gives no --force advice when the store was only read (--store-read-only refuses --force)", () => {
    const summary = summaryTable(completedRun(3, 2), { storeReadOnly: true });
    expect(summary).toContain(
      "\n2 results reused from the store (read only: what this run computed was not stored)\n",
    );
    expect(summary).not.toContain("--force");
  });
});
