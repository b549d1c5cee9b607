import { describe, expect, it } from "vitest";
import { GraphError } from "../../src/errors.ts";
import { type JobSpec, job, type Resources } from "../../src/graph/job.ts";
import { type PlanOptions, planGraph } from "../../src/graph/planGraph.ts";

const versions: Record<string, string> = { fetch: "1", parse: "1", train: "2", step: "1" };
const known: PlanOptions = { versionOf: (kind) => versions[kind] };

function errorOf(roots: readonly JobSpec[], options: PlanOptions = known): GraphError {
  try {
    planGraph(roots, options);
  } catch (err) {
    expect(err).toBeInstanceOf(GraphError);
    return err as GraphError;
  }
  throw new Error("expected planGraph to throw");
}

function badJob(spec: unknown): string {
  const err = errorOf([spec as JobSpec]);
  expect(err.code).toBe("BAD_JOB");
  return err.message;
}

/**
 * A job as a spread copy makes it, `{ ...job(kind, input), ...options }`, whose options
 * `job()` never saw: planning checks them.
 */
function copy(kind: string, input: unknown, options: Record<string, unknown>): JobSpec {
  return { ...job(kind, input), ...options } as JobSpec;
}

describe("planGraph", () => {
  it("plans jobs with their ids, deps, copied inputs and default retries", () => {
    const input = { url: "https://example.org" };
    const fetch = job("fetch", input, { requires: { cpus: 1 } });
    const parse = job("parse", { strict: true }, { after: [fetch], retries: 0, ranks: 2 });
    const plan = planGraph([parse], known);
    const fetched = plan.jobs.get(plan.idOf(fetch))!;
    expect(fetched).toEqual({
      id: plan.idOf(fetch),
      kind: "fetch",
      input,
      deps: [],
      requires: { cpus: 1 },
      retries: 3,
    });
    expect(fetched.input).not.toBe(input);
    expect(plan.jobs.get(plan.idOf(parse))).toEqual({
      id: plan.idOf(parse),
      kind: "parse",
      input: { strict: true },
      deps: [plan.idOf(fetch)],
      requires: {},
      retries: 0,
      ranks: 2,
    });
  });

  it("gives the jobs that run after none one shared, frozen deps list (32 bytes a job less)", () => {
    const a = job("fetch", "a");
    const b = job("fetch", "b");
    const plan = planGraph([a, b, job("parse", "c", { after: [a] })], known);
    const [first, second, third] = [...plan.jobs.values()];
    expect(first!.deps).toEqual([]);
    expect(second!.deps).toBe(first!.deps);
    expect(Object.isFrozen(first!.deps)).toBe(true);
    expect(third!.deps).toEqual([plan.idOf(a)]);
    expect(Object.isFrozen(third!.deps)).toBe(false);
  });

  it("gives the jobs that require nothing one shared, frozen requires, and a copy to the others", () => {
    const needs = { cpus: 2 };
    const a = job("fetch", "a");
    const b = job("fetch", "b", { requires: {} });
    const c = job("fetch", "c", { requires: needs });
    const plan = planGraph([a, b, c], known);
    const [first, second, third] = [...plan.jobs.values()];
    expect(first!.requires).toEqual({});
    expect(second!.requires).toBe(first!.requires);
    expect(Object.isFrozen(first!.requires)).toBe(true);
    expect(third!.requires).toEqual({ cpus: 2 });
    expect(third!.requires).not.toBe(needs);
    needs.cpus = 8;
    expect(third!.requires).toEqual({ cpus: 2 });
  });

  it("keeps the backoff", () => {
    const spec = job("fetch", 1, { backoff: { initialMs: 100, factor: 2, maxMs: 1000 } });
    const plan = planGraph([spec], known);
    expect(plan.jobs.get(plan.idOf(spec))!.backoff).toEqual({
      initialMs: 100,
      factor: 2,
      maxMs: 1000,
    });
  });

  it("lists jobs in topological order, dependencies first", () => {
    const a = job("fetch", "a");
    const b = job("fetch", "b", { after: [a] });
    const c = job("parse", "c", { after: [a] });
    const d = job("parse", "d", { after: [c, b] });
    const e = job("train", "e", { after: [d, a] });
    const plan = planGraph([e, c], known);
    const order = [...plan.jobs.keys()];
    expect(order).toHaveLength(5);
    for (const [index, id] of order.entries()) {
      for (const dep of plan.jobs.get(id)!.deps) expect(order.indexOf(dep)).toBeLessThan(index);
    }
    expect(order.at(-1)).toBe(plan.idOf(e));
  });

  it("merges identical jobs, also when they are distinct objects", () => {
    const a1 = job("fetch", { url: "x" });
    const a2 = job("fetch", { url: "x" });
    const b1 = job("parse", null, { after: [a1] });
    const b2 = job("parse", null, { after: [a2, a1] });
    const plan = planGraph([b1, b2, a2], known);
    expect(plan.jobs.size).toBe(2);
    expect(plan.idOf(a1)).toBe(plan.idOf(a2));
    expect(plan.idOf(b1)).toBe(plan.idOf(b2));
    expect(plan.jobs.get(plan.idOf(b2))!.deps).toEqual([plan.idOf(a1)]);
  });

  it("gives a job a new id when its handler's version changes", () => {
    const spec = job("parse", { strict: true });
    const before = planGraph([spec], known).idOf(spec);
    expect(planGraph([spec], { versionOf: () => "2" }).idOf(spec)).not.toBe(before);
  });

  it("rejects merging identical jobs with different options", () => {
    const err = errorOf([job("fetch", "x", { retries: 1 }), job("fetch", "x", { retries: 5 })]);
    expect(err.code).toBe("BAD_JOB");
    expect(err.message).toMatch(
      /^Job fetch "x" appears twice with different options: retries 1 and 5\. Identical jobs are merged into one \(id [0-9a-f]{16}\)/,
    );
  });

  // It listed every option of both, resources that neither required as "cpus 0, gpus 0,
  // memory 0 MiB", for the reader to find what differed.
  it.each([
    [{ requires: { memory: 512 } }, {}, "requires.memory 512 MiB and 0 MiB"],
    [
      { requires: { cpus: 2, gpus: 1 } },
      { requires: { cpus: 1 } },
      "requires.cpus 2 and 1; requires.gpus 1 and 0",
    ],
    [{ timeoutMs: 5_000 }, {}, "timeoutMs 5000 and none"],
    [
      { backoff: { initialMs: 100, factor: 2 } },
      { backoff: { factor: 3, initialMs: 100 } },
      "backoff { initialMs: 100, factor: 2 } and { initialMs: 100, factor: 3 }",
    ],
    [
      { retries: 0, backoff: { initialMs: 10 } },
      {},
      "retries 0 and 3; backoff { initialMs: 10 } and none",
    ],
  ])(
    "names only the options that differ between merged jobs, with both values (%#)",
    (first, second, differ) => {
      const err = errorOf([job("fetch", "x", first), job("fetch", "x", second)]);
      expect(err.message).toContain(`appears twice with different options: ${differ}. Identical`);
    },
  );

  it("accepts identical jobs whose options differ only in spelling", () => {
    const plan = planGraph(
      [job("fetch", "x", { requires: { gpus: 0 } }), job("fetch", "x")],
      known,
    );
    expect(plan.jobs.size).toBe(1);
  });

  it("names every unknown kind and how many jobs use it", () => {
    const one = errorOf([job("fetch", 1, { after: [job("fecth", 1), job("fecth", 2)] })]);
    expect(one.code).toBe("UNKNOWN_KIND");
    expect(one.message).toBe(
      'Unknown job kind "fecth" (2 jobs). Add a handler for it to the job module, or fix the kind.',
    );
    expect(one.jobs).toEqual(["fecth"]);
    const two = errorOf([job("prase", 1, { after: [job("fecth", 1)] }), job("prase", 2)]);
    expect(two.message).toBe(
      'Unknown job kinds "fecth" (1 job), "prase" (2 jobs). Add handlers for them to the job ' +
        "module, or fix the kinds.",
    );
  });

  it("given the module's kinds, lists them and names the kind a typo most likely meant", () => {
    const withKinds: PlanOptions = { ...known, kinds: Object.keys(versions) };
    const listed = Object.keys(versions)
      .map((kind) => `"${kind}"`)
      .join(", ");
    expect(errorOf([job("fecth", 1)], withKinds).message).toBe(
      'Unknown job kind "fecth" (1 job). Add a handler for it to the job module, or fix the ' +
        `kind. The job module defines ${listed}; did you mean "fetch"?`,
    );
    expect(
      errorOf([job("prase", 1, { after: [job("fecth", 1)] }), job("zzz", 1)], withKinds).message,
    ).toBe(
      'Unknown job kinds "fecth" (1 job), "prase" (1 job), "zzz" (1 job). Add handlers for them ' +
        `to the job module, or fix the kinds. The job module defines ${listed}; did you mean ` +
        '"fetch" for "fecth", "parse" for "prase"?',
    );
    expect(errorOf([job("zzz", 1)], withKinds).message).toMatch(
      / The job module defines "[^;]*\.$/,
    );
    expect(errorOf([job("zzz", 1)], { ...known, kinds: [] }).message).toMatch(
      / The job module defines no kind\.$/,
    );
  });

  it("tells to add an unknown kind to the module it is given the name of", () => {
    const named: PlanOptions = {
      ...known,
      kinds: ["fetch"],
      module: "the --handlers module sim.ts",
    };
    expect(errorOf([job("fecth", 1)], named).message).toBe(
      'Unknown job kind "fecth" (1 job). Add a handler for it to the --handlers module sim.ts, ' +
        'or fix the kind. The --handlers module sim.ts defines "fetch"; did you mean "fetch"?',
    );
  });

  it("rejects a cycle made by mutating after, printing it with kinds and inputs", () => {
    const a = job("fetch", { url: "x" });
    const b = job("parse", null, { after: [a] });
    const c = job("train", { epochs: 3 }, { after: [b] });
    (a.after as JobSpec[]).push(c);
    const err = errorOf([job("step", 0, { after: [c] })]);
    expect(err.code).toBe("GRAPH_CYCLE");
    expect(err.message).toBe(
      'The graph has a cycle (each job runs after the next): train {"epochs":3} → parse → ' +
        'fetch {"url":"x"} → train {"epochs":3}. A job cannot run after itself; remove one ' +
        "of these jobs from the other's after.",
    );
    expect(err.jobs).toEqual(["train", "parse", "fetch"]);
  });

  it("rejects a job that runs after itself", () => {
    const a = job("fetch", "x");
    (a.after as JobSpec[]).push(a);
    expect(errorOf([a]).message).toMatch(/: fetch "x" → fetch "x"\. /);
  });

  it("shortens long inputs in messages", () => {
    const a = job("fetch", { text: "y".repeat(100) });
    (a.after as JobSpec[]).push(a);
    expect(errorOf([a]).message).toContain(`fetch {"text":"${"y".repeat(30)}… → `);
  });

  it("rejects an input that is not JSON, naming the job and the path", () => {
    const err = errorOf([job("parse", { items: [{ fn: () => 1 }] })]);
    expect(err.code).toBe("NOT_JSON");
    expect(err.message).toMatch(
      /^The input of job "parse" is not JSON: input\.items\[0\]\.fn is a function\./,
    );
  });

  it("rejects a job no worker can take, naming it, its needs and every distinct offer", () => {
    const train = job("train", { epochs: 3 }, { requires: { cpus: 4, gpus: 2 } });
    const fits = job("fetch", 1, { requires: { cpus: 2, memory: 1024 } });
    const workers = [
      { cpus: 8, memory: 4096 },
      { cpus: 2, gpus: 1 },
      { cpus: 8, memory: 4096 },
    ];
    const err = errorOf([train, fits], { ...known, workers });
    expect(err.code).toBe("UNSATISFIABLE");
    const id = planGraph([train], known).idOf(train);
    expect(err.message).toBe(
      "No configured worker can take this job:\n" +
        `  job ${id} (train {"epochs":3}) requires cpus 4, gpus 2\n` +
        "The workers offer:\n" +
        "  cpus 8, gpus 0, memory 4096 MiB\n" +
        "  cpus 2, gpus 1, memory 0 MiB\n" +
        "Lower what the job requires, or configure a worker that offers enough " +
        "(a resource a worker does not declare counts as 0).",
    );
    expect(err.jobs).toEqual([id]);
  });

  it("names the workers' own way out, given what every refused job needs and the workers offer", () => {
    const wide = job("train", 1, { requires: { cpus: 4 } });
    const deep = job("train", 2, { requires: { memory: 8192 } });
    const asked: Resources[] = [];
    const offerMore = (enough: Resources) => {
      asked.push(enough);
      return "give the pool more";
    };
    const err = errorOf([wide, deep], { ...known, workers: [{ cpus: 1, gpus: 1 }], offerMore });
    expect(err.code).toBe("UNSATISFIABLE");
    expect(asked).toEqual([{ cpus: 4, gpus: 1, memory: 8192 }]);
    expect(err.message).toMatch(
      /\nLower what the job requires, or give the pool more \(a resource a worker does not declare counts as 0\)\.$/,
    );
  });

  it("lists at most ten jobs no worker can take", () => {
    const jobs = Array.from({ length: 12 }, (_, i) => job("fetch", i, { requires: { gpus: 1 } }));
    const err = errorOf(jobs, { ...known, workers: [{ cpus: 1 }] });
    expect(err.message).toMatch(/^No configured worker can take these 12 jobs:\n/);
    expect(err.message).toContain("\n  … and 2 more\n");
    expect(err.jobs).toHaveLength(12);
  });

  it("carries timeoutMs to the planned job, and not into its id", () => {
    const timed = planGraph([job("fetch", "x", { timeoutMs: 1_500 })], known);
    const plain = planGraph([job("fetch", "x")], known);
    expect([...timed.jobs.values()][0]).toMatchObject({ timeoutMs: 1_500 });
    expect([...timed.jobs.keys()]).toEqual([...plain.jobs.keys()]);
  });

  it("gives a job without a timeoutMs its kind's default; a job's own wins", () => {
    const plan = planGraph([job("fetch", "a"), job("fetch", "b", { timeoutMs: 5 })], {
      ...known,
      timeoutOf: (kind) => (kind === "fetch" ? 1_000 : undefined),
    });
    expect([...plan.jobs.values()].map((j) => j.timeoutMs)).toEqual([1_000, 5]);
  });

  it("asks the job module about a kind once for each run of jobs of that kind", () => {
    const asked: string[] = [];
    const plan = planGraph(
      [job("fetch", 1), job("fetch", 2), job("parse", 3), job("parse", 4), job("fetch", 5)],
      {
        ...known,
        timeoutOf: (kind) => {
          asked.push(`timeout ${kind}`);
          return kind === "parse" ? 2_000 : undefined;
        },
        launchesRanks: (kind) => {
          asked.push(`ranks ${kind}`);
          return false;
        },
      },
    );
    expect(asked).toEqual([
      "ranks fetch",
      "timeout fetch",
      "ranks parse",
      "timeout parse",
      "ranks fetch",
      "timeout fetch",
    ]);
    expect([...plan.jobs.values()].map((j) => j.timeoutMs)).toEqual([
      undefined,
      undefined,
      2_000,
      2_000,
      undefined,
    ]);
  });

  it("checks resources only when workers are given", () => {
    const spec = job("train", null, { requires: { gpus: 8 } });
    expect(planGraph([spec], known).jobs.size).toBe(1);
    expect(planGraph([spec], { ...known, workers: [] }).jobs.size).toBe(1);
    expect(planGraph([spec], { ...known, workers: [{ gpus: 8 }] }).jobs.size).toBe(1);
  });

  it("rejects bad options of a job that job() did not check (a spread copy) with a message naming the job", () => {
    expect(badJob(copy("fetch", "x", { retries: -1 }))).toBe(
      'Job fetch "x" has retries -1; retries must be an integer ≥ 0 (0: no retry).',
    );
    expect(badJob(copy("fetch", null, { retries: 1.5 }))).toMatch(/^Job fetch has retries 1\.5;/);
    expect(badJob(copy("fetch", null, { ranks: 0 }))).toBe(
      "Job fetch has ranks 0; ranks must be an integer ≥ 1.",
    );
    expect(badJob(copy("fetch", null, { requires: { cpus: -1 } }))).toBe(
      "Job fetch has requires.cpus -1; it must be a finite number ≥ 0.",
    );
    expect(badJob(copy("fetch", null, { requires: { memory: Number.POSITIVE_INFINITY } }))).toMatch(
      /^Job fetch has requires\.memory Infinity;/,
    );
    expect(badJob(copy("fetch", null, { requires: { gpus: Number.NaN } }))).toMatch(
      /^Job fetch has requires\.gpus NaN;/,
    );
    expect(badJob(copy("fetch", null, { requires: { gpu: 1 } }))).toBe(
      "Job fetch has requires.gpu; the resources a job can require are cpus, gpus, memory (did you mean gpus?).",
    );
    expect(badJob(copy("fetch", null, { requires: { disk: 1 } }))).toBe(
      "Job fetch has requires.disk; the resources a job can require are cpus, gpus, memory.",
    );
    // A typo's value (a cap of 1 s on the delay) used to be ignored: the delay grew without one.
    expect(badJob(copy("fetch", null, { backoff: { initialMs: 5, max: 1000 } }))).toBe(
      "Job fetch has backoff.max; backoff takes initialMs, factor, maxMs.",
    );
    expect(badJob(copy("fetch", null, { backoff: { initialMs: 5, maxMS: 1000 } }))).toBe(
      "Job fetch has backoff.maxMS; backoff takes initialMs, factor, maxMs (did you mean maxMs?).",
    );
    expect(badJob(copy("fetch", null, { backoff: { initialMs: -5 } }))).toMatch(
      /^Job fetch has backoff\.initialMs -5; it must be a finite number ≥ 0\./,
    );
    expect(badJob(copy("fetch", null, { backoff: { initialMs: 5, factor: 0.5 } }))).toMatch(
      /^Job fetch has backoff\.factor 0\.5; it must be a finite number ≥ 1\./,
    );
    for (const timeoutMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(badJob(copy("fetch", null, { timeoutMs }))).toBe(
        `Job fetch has timeoutMs ${timeoutMs}; timeoutMs must be a finite number of milliseconds > 0 (leave it out for no limit).`,
      );
    }
    expect(badJob({ ...job("fetch"), after: "none" })).toBe(
      'Job fetch has after "none"; after must be an array of jobs.',
    );
    expect(badJob({ ...job("parse"), after: job("fetch") as never })).toMatch(
      /^Job parse has after \{"kind":"fetch",.*; after must be an array of jobs, even of one: \{ after: \[thatJob\] \}\.$/,
    );
    expect(badJob({ kind: "fetch", input: 2 } as never)).toBe(
      'The job at graph[0] (kind "fetch") has no after and no requires: it was not made by job(); make jobs with job(kind, input, options), which fills them in.',
    );
    expect(badJob({ kind: "fetch", input: 2, after: [] } as never)).toMatch(
      /^The job at graph\[0\] \(kind "fetch"\) has no requires: it was not made by job\(\);/,
    );
  });

  it("rejects a kind that is not a non-empty string", () => {
    // Made without job(), which refuses such a kind itself.
    const made = (kind: unknown) => ({ kind, input: null, after: [], requires: {} }) as never;
    expect(badJob(made(""))).toBe(
      'The job at graph[0] has kind ""; a kind must be a non-empty string naming a handler of ' +
        "the job module.",
    );
    expect(badJob(made(42))).toMatch(/^The job at graph\[0\] has kind 42;/);
    expect(badJob([job("fetch")] as never)).toBe(
      "graph[0] is an array, not a job; give the jobs themselves (spread it: ...jobs).",
    );
  });

  it("rejects something that is not a job, saying where it is", () => {
    const parse = job("parse", { strict: true }, { after: [undefined as never] });
    expect(badJob(parse)).toBe(
      'after[0] of job parse {"strict":true} is undefined, not a job; make jobs with ' +
        "job(kind, input, options).",
    );
    // Deeper in the graph: the root's index, and the dependency's place among its job's.
    const fetch = job("fetch", 1);
    const deep = job("parse", 2, {
      after: [fetch, job("parse", 3, { after: [fetch, 7 as never] })],
    });
    expect(errorOf([job("fetch", 0), deep]).message).toBe(
      "after[1] of job parse 3 is 7, not a job; make jobs with job(kind, input, options).",
    );
    expect(errorOf([fetch, "x" as never]).message).toBe(
      'graph[1] is "x", not a job; make jobs with job(kind, input, options).',
    );
    // What JavaScript may pass for jobs, each named as what it is, where each was "The job at
    // graph[1] has kind undefined".
    expect(errorOf([fetch, Promise.resolve(fetch) as never]).message).toBe(
      "graph[1] is a promise, not a job; await it first",
    );
    expect(errorOf([new Map([["fetch", fetch]]) as never]).message).toBe(
      "graph[0] is a Map, not a job; give an array of the jobs ([...jobs.values()])",
    );
    expect(errorOf([fetch, { job: "fetch" } as never]).message).toBe(
      'graph[1] is {"job":"fetch"}, an object with no kind, not a job; make jobs with job(kind, input, options).',
    );
  });

  it("refuses a rank kind's job without ranks and a plain kind's job with ranks, before anything runs", () => {
    const options: PlanOptions = { ...known, launchesRanks: (kind) => kind === "fetch" };
    const missing = errorOf([job("fetch", 1)], options);
    expect(missing.code).toBe("BAD_JOB");
    expect(missing.message).toBe(
      'Job fetch 1 has no ranks option, but kind "fetch" launches ranks; say how many: job("fetch", input, { ranks: 4 }).',
    );
    expect(errorOf([job("parse", 1, { ranks: 2 })], options).message).toMatch(
      /^Job parse 1 has ranks: 2, but kind "parse" is a plain handler, which would ignore it;/,
    );
    expect(planGraph([job("fetch", 1, { ranks: 2 }), job("parse", 1)], options).jobs.size).toBe(2);
  });

  it("rejects idOf for a job that is not in the plan, and finds one equal to a job that is", () => {
    const fetch = job("fetch", 1);
    const plan = planGraph([job("parse", "x", { after: [fetch] })], known);
    expect(() => plan.idOf(job("fetch", 2))).toThrow(
      "Job fetch 2 is not part of this plan; plan a graph that contains it.",
    );
    // Identical jobs are one job: a spec made again, dependencies and all, names the same one.
    expect(plan.idOf(job("fetch", 1))).toBe(plan.idOf(fetch));
    const again = job("parse", "x", { after: [job("fetch", 1)] });
    expect(plan.jobs.get(plan.idOf(again))?.deps).toEqual([plan.idOf(fetch)]);
    expect(() => plan.idOf(job("parse", "x", { after: [job("fetch", 2)] }))).toThrow(
      "is not part of this plan",
    );
  });

  it("plans a chain of 100,000 jobs", () => {
    const size = 100_000;
    let last = job("step", 0);
    const first = last;
    for (let i = 1; i < size; i++) last = job("step", i, { after: [last] });
    const started = performance.now();
    const plan = planGraph([last], known);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(plan.jobs.size).toBe(size);
    expect(plan.jobs.keys().next().value).toBe(plan.idOf(first));
    expect(plan.jobs.get(plan.idOf(last))!.input).toBe(size - 1);
  });
});
