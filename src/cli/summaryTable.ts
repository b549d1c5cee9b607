import { basename } from "node:path";
import { formatDuration } from "../formatDuration.ts";
import type { JobSpec } from "../graph/job.ts";
import type { JobOutcome, JobStatus, RunResult } from "../runtime/run.ts";
import { countByKind, countsTable } from "./countsTable.ts";
import { graphValueLines } from "./graphValueLines.ts";
import { workerExitLines } from "./workerExitLines.ts";
import { workerLossLines } from "./workerLossLines.ts";

/** The column of each job status in the summary's counts. */
const STATUS_COLUMN: Record<JobStatus, number> = {
  completed: 0,
  failed: 1,
  skipped: 2,
  cancelled: 3,
};

/** What `summaryTable` says besides the result. */
export interface SummaryOptions {
  /**
   * The store was only read (`--store-read-only`), so the results it gave are not followed by
   * `--force`'s advice, which that flag refuses.
   */
  storeReadOnly?: boolean;
  /**
   * The run's log (`run.log`), named under the failures, and as where each skipped job is
   * named; without it (a run that has none) no log is pointed to.
   */
  runLog?: string;
  /**
   * The run's results went to a store that a rerun reads (neither `--no-store` nor
   * `--store-read-only`): a run that did not complete says that a rerun resumes from them.
   */
  keepsResults?: boolean;
  /** The jobs the run was given: what those that completed hold follows the counts. */
  graph?: readonly JobSpec[];
  /**
   * The log of a worker by its name, when the run knows it (`baton run`'s own workers:
   * `worker-N.log` beside `run.log`): a job failed as poison names its lost workers' logs.
   */
  workerLog?: (worker: string) => string | undefined;
}

/**
 * The end-of-run summary (for a graph of no jobs, a line saying so): one row per job kind with
 * counts, the values of the `graph`'s jobs that completed (`graphValueLines`), then every failure
 * with its cause and the worker of its last attempt (a run with many failures lists the first 20),
 * the workers lost, or that left on purpose, while running a job (`workerLossLines`; not those
 * of a job failed as poison, whose failure line names them), and how the processes of those
 * whose connection broke ended, when the pool knows (`workerExitLines`), each worker said once,
 * then where the run's log holds each failed attempt with its stack (a timed-out one, which has
 * no stack of the handler's, as what it is), why the jobs skipped were (one
 * named, with the job whose failure skipped it); for a run that did not complete, with
 * `keepsResults`, that a rerun resumes from the results it stored.
 *
 * @example
 * ```ts
 * process.stderr.write(summaryTable(await run, { runLog: ".baton/logs/2026-12-06T09-00-00-000Z-pcmBHhPR/run.log" }));
 * ```
 */
export function summaryTable(
  result: RunResult,
  {
    storeReadOnly = false,
    runLog,
    keepsResults = false,
    graph = [],
    workerLog,
  }: SummaryOptions = {},
): string {
  // An empty table and "every job completed" read as a run that did its work.
  if (result.jobs.size === 0) return "the graph has no jobs: nothing ran\n";
  const byKind = countByKind(
    result.jobs.values(),
    (outcome) => outcome.kind,
    5,
    (outcome) =>
      outcome.cached ? [STATUS_COLUMN[outcome.status], 4] : [STATUS_COLUMN[outcome.status]],
  );
  const c = result.counts;
  const out = countsTable(["completed", "failed", "skipped", "cancelled", "cached"], byKind, [
    c.completed,
    c.failed,
    c.skipped,
    c.cancelled,
    c.cached,
  ]);
  out.push(...graphValueLines(result, graph));
  const failures = [...result.jobs.values()].filter((o) => o.status === "failed");
  for (const o of failures.slice(0, 20)) {
    const on = o.worker === undefined ? "" : `${o.attempts === 1 ? "" : ", last"} on ${o.worker}`;
    out.push(
      `✗ ${o.kind} ${o.id} (${o.cause ?? "error"}, ${o.attempts} attempt${o.attempts === 1 ? "" : "s"}${on}${o.error?.retryable === false ? ", not retried" : ""}): ${o.error?.message ?? ""}${poisonLogs(o, workerLog)}`,
    );
  }
  if (failures.length > 20)
    out.push(`… and ${failures.length - 20} more failures (use --json for all)`);
  // The workers that went away while running a job (their jobs ran again or failed as poison):
  // a bad node shows up here even when every job completed in the end. A job failed as poison
  // names its own on its failure line: each worker is said once.
  const outcomes = [...result.jobs.values()];
  out.push(...workerLossLines(outcomes.filter((o) => o.cause !== "poison")));
  out.push(...workerExitLines(outcomes));
  // The message alone rarely says where: the stack is in the log, which nothing else names. A
  // timeout has none worth reading (the coordinator's own, not the handler's): its line says
  // what happened instead, and what shows how far the handler got.
  if (failures.length > 0 && runLog !== undefined) {
    const timedOut = failures.filter((o) => o.error?.name === "JobTimeout").length;
    out.push(
      timedOut === 0
        ? `each failed attempt, with its stack: ${runLog}`
        : timedOut === failures.length
          ? `each attempt that timed out, and its worker: ${runLog}; a timeout has no stack (its handler had not finished): what the handler logged with ctx.log shows how far it got`
          : `each failed attempt, with its stack (none for one that timed out: its handler had not finished): ${runLog}`,
    );
  }
  // Why the jobs counted as skipped never ran: the failure of a job they run after, named.
  const skipped = [...result.jobs.values()].find((o) => o.status === "skipped");
  if (skipped?.error) {
    const which =
      c.skipped === 1
        ? `1 job skipped: ${skipped.kind} ${skipped.id}`
        : `${c.skipped} jobs skipped, such as ${skipped.kind} ${skipped.id}`;
    out.push(
      `${which}, ${skipped.error.message}${c.skipped === 1 || runLog === undefined ? "" : ` (${basename(runLog)} names each one's)`}`,
    );
  }
  // Why the jobs that never ran were cancelled: Ctrl-C, a listener, --fail-fast's first failure.
  const cancelled = [...result.jobs.values()].find((o) => o.status === "cancelled");
  if (cancelled?.error) {
    out.push(
      `${c.cancelled} job${c.cancelled === 1 ? "" : "s"} cancelled: ${cancelled.error.message}`,
    );
  }
  if (c.cached > 0) {
    const one = c.cached === 1;
    const why = storeReadOnly
      ? "read only: what this run computed was not stored"
      : `--force recomputes ${one ? "it" : "them"}`;
    out.push(`${c.cached} result${one ? "" : "s"} reused from the store (${why})`);
  }
  // A run stopped (Ctrl-C, a failure to fix) is not lost: say that running it again resumes.
  if (!result.ok && keepsResults && c.completed > 0) {
    const one = c.completed === 1;
    out.push(
      `${c.completed} completed result${one ? " is" : "s are"} stored: the same baton run again reuses ${one ? "it" : "them"} and runs the rest`,
    );
  }
  const verdict = result.ok ? "✓ every job completed" : "✗ the run did not complete";
  out.push(`${verdict} in ${formatDuration(result.durationMs)}`);
  return `${out.join("\n")}\n`;
}

/**
 * Where a job failed as poison has its lost workers' logs, which its message says to look at:
 * each log once (a slot's replacements share it), when `workerLog` knows them.
 */
function poisonLogs(outcome: JobOutcome, workerLog: SummaryOptions["workerLog"]): string {
  if (outcome.cause !== "poison" || workerLog === undefined) return "";
  const logs = new Set(outcome.lostWorkers.flatMap((worker) => workerLog(worker) ?? []));
  return logs.size === 0 ? "" : ` Their logs: ${[...logs].join(", ")}`;
}
