/**
 * `jobBuilder`: `job` typed by a job module. The type checks are compile-time (`npm run
 * typecheck` covers this file): each `@ts-expect-error` line must fail to compile.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import { GraphError, JobModuleError } from "../../src/errors.ts";
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

/** A result declared as an interface, as users often do: not assignable to `Json` as such. */
interface Page {
  url: string;
  words: readonly string[];
  title?: string;
  links: Page[];
}

const shapes = defineJobs({
  page: async (url: string): Promise<Page> => ({ url, words: [], links: [] }),
  lookup: (key: string): string | undefined => (key === "a" ? "found" : undefined),
  tags: (): readonly string[] => ["a"],
  stamped: (): { at: Date } => ({ at: new Date(0) }),
  table: () => new Map<string, number>(),
  opaque: (): unknown => 1,
  optional: (n?: number) => n ?? 0,
  nullable: (n: number | null) => n ?? 0,
});
const shape = jobBuilder(shapes);

describe("jobBuilder", () => {
  it("types an interface, an optional or read-only result as the JSON the run gives", async () => {
    const page = shape("page", "https://example.org");
    const lookup = shape("lookup", "b");
    expectTypeOf(lookup).toEqualTypeOf<JobSpec<string | null>>();
    expectTypeOf(shape("tags")).toEqualTypeOf<JobSpec<string[]>>();
    // Never JSON (the attempt fails), or not known: any JSON in its place.
    expectTypeOf(shape("stamped")).toEqualTypeOf<JobSpec<{ at: Json }>>();
    expectTypeOf(shape("table")).toEqualTypeOf<JobSpec<Json>>();
    expectTypeOf(shape("opaque")).toEqualTypeOf<JobSpec<Json>>();
    // A job whose value is an interface goes in `after` and a JobSpec[] like any other.
    const graph: JobSpec[] = [page, shape("tags", null, { after: [page, lookup] })];
    const result = await createEngine({ jobs: shapes, workers: 1 }).run(graph);
    const value: Page | undefined = result.get(page).value;
    expectTypeOf(value?.links[0]?.title).toEqualTypeOf<string | undefined>();
    expect(value).toEqual({ url: "https://example.org", words: [], links: [] });
    expect(result.get(lookup).value).toBeNull();
  });

  it("makes an input that may be null optional, and an undefined one not (it would be null)", () => {
    expect(shape("nullable").input).toBeNull();
    shape("optional", 1);
    // @ts-expect-error: left out, the input is null, which "optional" does not take
    shape("optional");
    // @ts-expect-error: as above
    shape("optional", undefined);
  });

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
    expect(() => (job as (kind: string) => JobSpec)("doubel")).toThrow(
      '"quadruple", "train"; did you mean "double"?',
    );
    // A key the module inherits is no kind of it.
    expect(() => (job as (kind: string) => JobSpec)("toString")).toThrow(GraphError);
  });

  it("refuses at once a module createEngine would refuse, as a JavaScript graph module may give it", () => {
    const builder = jobBuilder as (jobs: unknown) => unknown;
    const refused: [unknown, string][] = [
      [
        null,
        "a job module must export an object mapping each job kind to a handler function (or { run, version }), not null",
      ],
      [5, "(or { run, version }), not 5"],
      [{}, "the job module defines no job kinds"],
      [
        { default: { double: (n: number) => n * 2 } },
        "a module namespace (import * as jobs) was given",
      ],
      [{ double: 2 }, 'job kind "double" must be a handler function'],
    ];
    for (const [jobs, message] of refused) {
      expect(() => builder(jobs), String(jobs)).toThrow(JobModuleError);
      expect(() => builder(jobs)).toThrow(message);
    }
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
