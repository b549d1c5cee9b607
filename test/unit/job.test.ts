import { describe, expect, it } from "vitest";
import { GraphError } from "../../src/errors.ts";
import { type JobOptions, type JobSpec, job } from "../../src/graph/job.ts";
import { planGraph } from "../../src/graph/planGraph.ts";

/** The GraphError `job(...args)` throws. */
function refusal(...args: unknown[]): GraphError {
  try {
    (job as (...args: unknown[]) => unknown)(...args);
  } catch (err) {
    expect(err).toBeInstanceOf(GraphError);
    expect((err as GraphError).code).toBe("BAD_JOB");
    return err as GraphError;
  }
  throw new Error("expected job to throw");
}

describe("job", () => {
  it("refuses an option it does not know, which used to be dropped unnoticed", () => {
    expect(refusal("fetch", "x", { retires: 5 }).jobs).toEqual(["fetch"]);
    expect(refusal("fetch", "x", { retires: 5 }).message).toBe(
      'job("fetch", …): unknown option retires; it takes after, requires, retries, backoff, timeoutMs, ranks; did you mean retries?',
    );
  });

  it("refuses a kind that is not a non-empty string at the call that made the job, not when it runs", () => {
    expect(refusal(undefined, 1).message).toBe(
      'job(undefined, …): the kind must be a non-empty string naming a handler of the job module, such as job("fetch", input)',
    );
    expect(refusal("").message).toMatch(/^job\("", …\): the kind must be/);
    expect(refusal(42).message).toMatch(/^job\(42, …\): the kind must be/);
  });

  it("refuses options that are not an object, saying what they are", () => {
    expect(refusal("fetch", "x", null).message).toBe(
      'job("fetch", …): the options must be an object, such as { after: [...], retries: 2 }, not null',
    );
    expect(refusal("fetch", "x", "fast").message).toMatch(/, not "fast"$/);
    expect(refusal("parse", 1, [job("fetch")]).message).toMatch(/, not an array$/);
  });

  it("takes every option of JobOptions, and undefined ones as left out", () => {
    const options: Required<JobOptions> = {
      after: [job("fetch")],
      requires: { cpus: 1 },
      retries: 2,
      backoff: { initialMs: 10 },
      timeoutMs: 1_000,
      ranks: 2,
    };
    expect(job("train", null, options)).toMatchObject({ retries: 2, timeoutMs: 1_000, ranks: 2 });
    expect(job("fetch", null, { retries: undefined })).toEqual(job("fetch"));
  });

  it("refuses option values of the wrong type at the call that made the job, with planning's message for them", () => {
    const cases: [string, unknown, Record<string, unknown>][] = [
      ["fetch", "x", { retries: "3" }],
      ["fetch", null, { timeoutMs: "30s" }],
      ["parse", 1, { after: job("fetch") }],
      ["fetch", null, { requires: { gpu: 1 } }],
      ["fetch", null, { backoff: { initialMs: 5, maxMS: 1000 } }],
      ["fetch", null, { ranks: 0 }],
    ];
    for (const [kind, input, options] of cases) {
      // What planning says of a spread copy with these options, which job() never saw.
      const copy = { ...job(kind, input), ...options } as JobSpec;
      let planned: unknown;
      try {
        planGraph([copy], { versionOf: () => "1" });
      } catch (err) {
        planned = (err as Error).message;
      }
      expect(refusal(kind, input, options).message).toBe(planned);
    }
    expect(refusal("fetch", null, { timeoutMs: "30s" }).message).toBe(
      'Job fetch has timeoutMs "30s"; timeoutMs must be a finite number of milliseconds > 0 (leave it out for no limit).',
    );
  });
});
