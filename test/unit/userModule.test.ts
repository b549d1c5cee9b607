import { describe, expect, it } from "vitest";
import { job } from "../../src/graph/job.ts";
import { jobsOf } from "../../src/runtime/userModule.ts";

describe("jobsOf", () => {
  const handlers = { double: (n: number) => n * 2 };

  it("takes the named export jobs, or a default export of handlers", () => {
    expect(jobsOf({ jobs: handlers, default: [job("double", 1)] }, "graph.ts")).toBe(handlers);
    expect(jobsOf({ default: handlers }, "jobs.ts")).toBe(handlers);
  });

  it("tells a graph module without handlers how to export them, or to give --jobs", () => {
    const graphs = [
      { default: [job("double", 1)] },
      { default: job("double", 1) },
      { graph: [job("double", 1)] },
    ];
    for (const module of graphs) {
      expect(() => jobsOf(module, "graph.ts")).toThrow(
        'graph.ts exports a graph but no job module: export its handlers from it too (`export { default as jobs } from "./jobs.ts"`, or `export const jobs = { kind: handler, … }`), or give the job module\'s file as --jobs',
      );
    }
  });

  it("tells another file (a --jobs FILE) how to export handlers, not to pass --jobs again", () => {
    for (const module of [{}, { x: 1 }, { default: "handlers" }, { default: () => handlers }]) {
      expect(() => jobsOf(module, "jobs.ts")).toThrow(
        "jobs.ts exports no job module: make its default export the handlers (`export default defineJobs({ kind: handler, … })`), or export them as `jobs`",
      );
    }
  });
});
