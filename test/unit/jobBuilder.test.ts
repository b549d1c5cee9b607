/**
 * `jobBuilder`: `job` typed by a job module. The type checks are compile-time (`npm run
 * typecheck` covers this file): each `@ts-expect-error` line must fail to compile.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { GraphError } from "../../src/errors.ts";
import { type JobSpec, type Json, job as plainJob } from "../../src/graph/job.ts";
import { jobBuilder } from "../../src/graph/jobBuilder.ts";
import { createEngine, defineJobs } from "../../src/index.ts";
import type { RankJobResult } from "../../src/runtime/rankJob.ts";

const jobs = defineJobs({
  double: (n: number) => n * 2,
  greet: async ({ name }: { name: string }) => `hello ${name}`,
  nothing: () => {},
  versioned: { run: (xs: number[]) => xs.length, version: "2" },
  asDate: () => new Date(0),
  // A handler that makes jobs of its own module with the builder declares what it returns,
  // or the module's type would depend on itself.
  quadruple: (n: number, ctx): number => {
    const [twice] = ctx.need(job("double", n));
    expectTypeOf(twice).toEqualTypeOf<number>();
    return twice * 2;
  },
  train: { ranks: (_: { steps: number }) => ["/bin/true"] },
});
const job = jobBuilder(jobs);

describe("jobBuilder", () => {
  it("types a job's input by its kind, and its value by what the handler returns", () => {
    expectTypeOf(job("double", 21)).toEqualTypeOf<JobSpec<number>>();
    expectTypeOf(job("greet", { name: "ada" })).toEqualTypeOf<JobSpec<string>>();
    expectTypeOf(job("nothing")).toEqualTypeOf<JobSpec<null>>();
    expectTypeOf(job("versioned", [1, 2])).toEqualTypeOf<JobSpec<number>>();
    // A Date reaches the run as its JSON: any JSON, not a Date.
    expectTypeOf(job("asDate")).toEqualTypeOf<JobSpec<Json>>();
    expectTypeOf(job("train", { steps: 3 }, { ranks: 2 })).toEqualTypeOf<JobSpec<RankJobResult>>();
    // A plain job is any JSON, and jobs of both kinds make one graph.
    const graph: JobSpec[] = [plainJob("double", 1), job("double", 2, { after: [plainJob("x")] })];
    expect(graph).toHaveLength(2);

    // @ts-expect-error: the module has no kind "triple"
    expect(() => job("triple", 1)).toThrow(GraphError);
    // @ts-expect-error: "double" takes a number
    job("double", "21");
    // @ts-expect-error: "double" needs its input
    job("double");
  });

  it("makes the same jobs as job(), and refuses a kind the module does not define", () => {
    expect(job("double", 21, { retries: 1 })).toEqual(plainJob("double", 21, { retries: 1 }));
    expect(job("nothing")).toEqual(plainJob("nothing"));
    const unknown = () => (job as (kind: string) => JobSpec)("tripple");
    expect(unknown).toThrow(GraphError);
    expect(unknown).toThrow(
      'unknown job kind "tripple": the job module defines "double", "greet", "nothing", "versioned", "asDate", "quadruple", "train"',
    );
    // A key the module inherits is no kind of it.
    expect(() => (job as (kind: string) => JobSpec)("toString")).toThrow(GraphError);
  });

  it("gives result.get and ctx.need the handler's type, with the values a run gives", async () => {
    const a = job("quadruple", 5);
    const b = job("greet", { name: "ada" });
    const result = await createEngine({ jobs, workers: 2 }).run([a, b]);
    const four: number | undefined = result.get(a).value;
    const hello: string | undefined = result.get(b).value;
    expect([four, hello]).toEqual([20, "hello ada"]);
    expectTypeOf(result.get(plainJob("double", 5)).value).toEqualTypeOf<Json | undefined>();
  });
});
