import type { RunPlan } from "../runtime/engine.ts";
import { countByKind, countsTable } from "./countsTable.ts";

/**
 * What `baton run --dry-run` prints: per job kind, the jobs, those with a stored result and
 * those a run would start, then one line saying what a run would do.
 *
 * @example
 * ```ts
 * process.stderr.write(dryRunReport(await engine.plan(graph), { dir: ".baton", force: false }));
 * ```
 */
export function dryRunReport(
  plan: RunPlan,
  store: { dir: string; force: boolean } | undefined,
): string {
  const byKind = countByKind(
    plan.jobs,
    (job) => job.kind,
    3,
    (job) => [0, job.stored ? 1 : 2],
  );
  const { jobs, stored, toRun, corrupt } = plan.counts;
  const out = countsTable(["jobs", "stored", "to run"], byKind, [jobs, stored, toRun]);
  if (corrupt > 0) {
    const [are, them] = corrupt === 1 ? ["result is", "it"] : ["results are", "them"];
    out.push(`${corrupt} stored ${are} corrupt: a run moves ${them} aside and recomputes ${them}`);
  }
  const where =
    store === undefined
      ? "no result store"
      : store.force
        ? `--force: no result stored in ${store.dir} is used`
        : `${stored} ${stored === 1 ? "result" : "results"} stored in ${store.dir}`;
  out.push(
    `dry run: ${toRun} of ${jobs} jobs would run (${where}); jobs that handlers add with ctx.need are not counted`,
  );
  return `${out.join("\n")}\n`;
}
