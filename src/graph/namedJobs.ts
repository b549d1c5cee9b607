/**
 * How a message names several jobs: each as `<id> (<kind>)`, the first `most` of them, then
 * how many more. Used wherever baton names the jobs something happened to (those a cancel's
 * grace ran out on, those a simulation left running, those `ctx.need` waits for).
 *
 * @example
 * ```ts
 * namedJobs([{ id: "3b9f…", kind: "train" }, { id: "c01d…", kind: "eval" }], 1);
 * // "3b9f… (train) and 1 more"
 * ```
 */
export function namedJobs(jobs: readonly { id: string; kind: string }[], most: number): string {
  const named = jobs
    .slice(0, most)
    .map(({ id, kind }) => `${id} (${kind})`)
    .join(", ");
  return jobs.length > most ? `${named} and ${jobs.length - most} more` : named;
}
