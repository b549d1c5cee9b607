import { formatRequired, formatResources } from "./formatResources.ts";
import type { PlannedJob, Resources } from "./job.ts";
import { label } from "./label.ts";
import { RESOURCE_NAMES } from "./resourceNames.ts";

/** The most jobs or kinds a message lists before "… and N more". */
export const MAX_LISTED = 10;

/**
 * Why no worker can take the `stuck` jobs (none of `workers` can, by `canTake`): each job, up
 * to ten, with what it requires, every distinct offer, and the way out: `offerMore` given
 * the amounts that would take them all (`PlanOptions.offerMore`, such as "have each Slurm
 * worker offer enough with --slurm-resources cpus=4"), else "configure a worker that offers
 * enough". One message for a graph refused before it runs (`UNSATISFIABLE`) and for a job
 * added while it runs (`ctx.need`) that the job board fails as unsatisfiable.
 *
 * @example
 * ```ts
 * noWorkerCanTake([gpuJob], [{ cpus: 1 }], undefined);
 * // "No configured worker can take this job:\n  job 3b9f… (train) requires gpus 1\n…"
 * ```
 */
export function noWorkerCanTake(
  stuck: readonly PlannedJob[],
  workers: readonly Resources[],
  offerMore: ((enough: Resources) => string) | undefined,
): string {
  const enough: Resources = {};
  for (const r of [...workers, ...stuck.map((j) => j.requires)]) {
    for (const key of RESOURCE_NAMES) {
      enough[key] = Math.max(enough[key] ?? 0, r[key] ?? 0);
    }
  }
  const listed = stuck
    .slice(0, MAX_LISTED)
    .map((j) => `  job ${j.id} (${label(j)}) requires ${formatRequired(j.requires)}`);
  if (stuck.length > MAX_LISTED) listed.push(`  … and ${stuck.length - MAX_LISTED} more`);
  const offers = [...new Set(workers.map((w) => `  ${formatResources(w)}`))];
  return (
    `No configured worker can take ${stuck.length === 1 ? "this job" : `these ${stuck.length} jobs`}:\n` +
    `${listed.join("\n")}\n` +
    `The workers offer:\n${offers.join("\n")}\n` +
    `Lower what the job requires, or ${offerMore?.(enough) ?? "configure a worker that offers enough"} ` +
    "(a resource a worker does not declare counts as 0)."
  );
}
