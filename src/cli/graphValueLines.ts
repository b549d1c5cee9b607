import type { JobSpec } from "../graph/job.ts";
import type { JobOutcome, RunResult } from "../runtime/run.ts";

/** How `graphValueLines` shortens what it shows. */
export interface GraphValueLimits {
  /** The most values shown; the rest are counted (default 5). */
  maxJobs?: number;
  /** The most characters of a value's JSON shown; a longer one is cut (default 200). */
  maxChars?: number;
}

/**
 * What the jobs a graph module exports (the jobs `baton run` was given, not those they run after)
 * completed with, a line each for `baton run`'s summary: `kind id: value`, the value as compact
 * JSON, cut past `maxChars` saying how long it was; past `maxJobs` such jobs, how many more there
 * are (one more is shown instead). A job exported twice, or as two equal jobs, is one line; a job
 * that did not complete has none (the summary lists its failure). Without these lines a run's
 * result was only in `--json`.
 *
 * @example
 * ```ts
 * graphValueLines(await run, [publish]); // ['publish 7c1f09a2b3d4e5f6: {"published":16}']
 * ```
 */
export function graphValueLines(
  result: RunResult,
  graph: readonly JobSpec[],
  { maxJobs = 5, maxChars = 200 }: GraphValueLimits = {},
): string[] {
  const seen = new Set<string>();
  const completed: JobOutcome[] = [];
  let more = 0;
  for (const spec of graph) {
    const outcome = result.get(spec);
    if (outcome.status !== "completed" || seen.has(outcome.id)) continue;
    seen.add(outcome.id);
    // One more than shown is kept: a line that counts one more job may as well show it.
    if (completed.length > maxJobs) more++;
    else completed.push(outcome);
  }
  if (more > 0) more += completed.splice(maxJobs).length;
  const lines = completed.map((outcome) => {
    const json = JSON.stringify(outcome.value);
    const shown =
      json.length > maxChars
        ? `${json.slice(0, maxChars)}… (${json.length.toLocaleString("en-US")} characters; --json prints it whole)`
        : json;
    return `${outcome.kind} ${outcome.id}: ${shown}`;
  });
  if (more > 0) lines.push(`… and ${more} more jobs of the graph (--json prints every value)`);
  return lines;
}
