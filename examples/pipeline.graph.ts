/**
 * The Quick start graph: 55 jobs with fan-out and fan-in.
 *
 *   16 × fetch → tokenize → count ─┐
 *                                  ├→ 4 × merge (4 counts each) → merge all → report → publish
 *
 * `publish` fails on its first attempt and succeeds on the retry.
 * Run it with `npx baton run examples/pipeline.graph.ts`.
 */
import { jobBuilder } from "baton";
import jobs from "./pipeline.jobs.ts";

export { jobs };

/** `job`, typed by the job module: a wrong kind or input does not compile. */
const job = jobBuilder(jobs);

const DOCS = 16;

const counts = Array.from({ length: DOCS }, (_, doc) => {
  const fetched = job("fetch", { doc });
  const tokens = job("tokenize", { doc }, { after: [fetched] });
  return job("count", { doc }, { after: [tokens] });
});
const groups = Array.from({ length: 4 }, (_, group) =>
  job("merge", { group }, { after: counts.slice(group * 4, group * 4 + 4) }),
);
const total = job("merge", { group: "all" }, { after: groups });
const report = job("report", null, { after: [total] });

export default [job("publish", null, { after: [report] })];
