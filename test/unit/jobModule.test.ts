/**
 * `loadJobs`: a job module's shape is checked once, with errors that name the kind, and the
 * loaded module serves handlers, versions, default timeouts and a code hash. `defineJobs`'s
 * type checks are compile-time (`npm run typecheck` covers this file): each
 * `@ts-expect-error` line must fail to compile.
 */
import { describe, expect, it } from "vitest";
import { JobModuleError } from "../../src/errors.ts";
import { defineJobs, loadJobs } from "../../src/runtime/jobModule.ts";

const double = (n: number) => n * 2;

describe("loadJobs", () => {
  it("serves a bare handler at version 0, a definition at its version and default timeout", () => {
    const jobs = loadJobs({
      double,
      fetch: { run: double, version: "3", timeoutMs: 30_000 },
      train: { ranks: () => ["python3", "train.py"], timeoutMs: 600_000 },
    });
    expect(jobs.kinds).toEqual(["double", "fetch", "train"]);
    expect(jobs.handler("double")).toBe(double);
    expect(jobs.handler("nowhere")).toBeUndefined();
    expect(["double", "fetch", "train"].map(jobs.versionOf)).toEqual(["0", "3", "0"]);
    expect(["double", "fetch", "train"].map(jobs.timeoutOf)).toEqual([undefined, 30_000, 600_000]);
  });

  it("takes a definition whose version, timeoutMs or ranks is undefined as one without them", () => {
    const jobs = loadJobs({
      fetch: { run: double, version: undefined, timeoutMs: undefined, ranks: undefined },
    });
    expect(jobs.handler("fetch")).toBe(double);
    expect(jobs.launchesRanks("fetch")).toBe(false);
    expect(jobs.versionOf("fetch")).toBe("0");
    expect(jobs.timeoutOf("fetch")).toBeUndefined();
  });

  it("takes a kind named default that is a definition", () => {
    expect(loadJobs({ default: { run: double } }).kinds).toEqual(["default"]);
    expect(loadJobs({ default: double }).kinds).toEqual(["default"]);
  });

  it("gives another code hash when a version or the source changes", () => {
    const hash = (module: object, source?: string) => loadJobs(module, source).codeHash;
    expect(hash({ double })).toMatch(/^[0-9a-f]{16}$/);
    expect(hash({ double })).toBe(hash({ double }));
    expect(hash({ fetch: { run: double, version: "2" } })).not.toBe(
      hash({ fetch: { run: double, version: "3" } }),
    );
    expect(hash({ double }, "export const a = 1")).not.toBe(hash({ double }, "export const a = 2"));
  });

  it.each([
    [null, "a job module must export an object mapping each job kind to a handler function"],
    [
      {},
      "the job module defines no job kinds: give an object mapping each job kind to its handler, such as { double: (n) => n * 2 }",
    ],
    [
      [double],
      "a job module must export an object mapping each job kind to a handler function (or { run, version }), not an array, whose indexes would be its kinds",
    ],
    [
      new (class Jobs {
        double(n: number) {
          return n * 2;
        }
      })(),
      "(the methods of a Jobs instance are its class's, not kinds of its own)",
    ],
    [
      { default: { double, fetch: { run: double } } },
      'the job module\'s kind "default" is itself a job module (of double, fetch): a module namespace (import * as jobs) was given; give its default export instead (import jobs from "./jobs.js", or jobs.default)',
    ],
    [
      { double: 42 },
      'job kind "double" must be a handler function, { run, version } or { ranks, version }, not number',
    ],
    [{ fetch: { run: double, version: 2 } }, 'the version of job kind "fetch" must be a string'],
    [
      { fetch: { run: double, timeoutMs: 0 } },
      'the timeoutMs of job kind "fetch" must be a finite number of milliseconds > 0, not 0',
    ],
    [
      { fetch: { run: double, timeoutMs: "1m" } },
      'the timeoutMs of job kind "fetch" must be a finite number of milliseconds > 0, not 1m',
    ],
  ])("refuses %j: %s", (module, message) => {
    expect(() => loadJobs(module)).toThrow(JobModuleError);
    expect(() => loadJobs(module)).toThrow(message);
  });

  const launch = () => ["python3", "train.py"];
  it.each([
    [
      { big: { requires: { cpus: 4 }, run: double } },
      'job kind "big": unknown option requires; it takes run, version, timeoutMs; requires is an option of each job, not of its kind: job("big", input, { requires: … })',
    ],
    [
      { big: { run: double, retries: 2 } },
      'job kind "big": unknown option retries; it takes run, version, timeoutMs; retries is an option of each job, not of its kind: job("big", input, { retries: … })',
    ],
    [
      { train: { ranks: launch, after: [] } },
      'job kind "train": unknown option after; it takes ranks, version, timeoutMs; after is an option of each job',
    ],
    [
      { train: { run: double, ranks: 4 } },
      'job kind "train": unknown option ranks; it takes run, version, timeoutMs; ranks, the size of a rank group, is an option of each job (job("train", input, { ranks: … })); a rank job\'s definition is { ranks: (input, ctx) => argv }, without run',
    ],
    [
      { train: { run: double, ranks: launch } },
      'job kind "train": unknown option ranks; it takes run, version, timeoutMs; a definition has run or ranks, not both',
    ],
    [
      { train: { rank: launch } },
      'job kind "train": unknown option rank; it takes run, ranks, version, timeoutMs; did you mean ranks?',
    ],
    [
      { train: { ranks: ["python3", "train.py"] } },
      'job kind "train": ranks must be a function that returns what each rank runs, { ranks: (input, ctx) => ["python3", "train.py"] }, not an array',
    ],
    [
      { train: { ranks: { argv: ["python3"] } } },
      'job kind "train": ranks must be a function that returns what each rank runs, { ranks: (input, ctx) => ["python3", "train.py"] }, not an object',
    ],
    [
      { train: { ranks: 4, version: "2" } },
      'job kind "train": ranks must be a function that returns what each rank runs, { ranks: (input, ctx) => ["python3", "train.py"] }, not 4; the size of a rank group is an option of each job: job("train", input, { ranks: 4 })',
    ],
    [
      { train: { ranks: launch, run: "python3" } },
      'job kind "train": unknown option run; it takes ranks, version, timeoutMs; a definition has run or ranks, not both',
    ],
    [
      { big: { run: double, throttle: 2 } },
      'job kind "big": unknown option throttle; it takes run, version, timeoutMs; throttle is the engine\'s, per kind: createEngine({ jobs, throttle: { "big": 2 } })',
    ],
    [
      { fetch: { run: double, verison: "2" } },
      'job kind "fetch": unknown option verison; it takes run, version, timeoutMs; did you mean version?',
    ],
    [
      { fetch: { run: double, timeout: 30_000 } },
      "unknown option timeout; it takes run, version, timeoutMs; did you mean timeoutMs?",
    ],
    [
      { fetch: { runn: double } },
      'job kind "fetch": unknown option runn; it takes run, ranks, version, timeoutMs; did you mean run?',
    ],
    [
      { fetch: { version: "2" } },
      'job kind "fetch" must be a handler function, { run, version } or { ranks, version }: its definition has no run function',
    ],
  ])("refuses a definition's key it does not take, saying where it goes: %j", (module, message) => {
    expect(() => loadJobs(module)).toThrow(JobModuleError);
    expect(() => loadJobs(module)).toThrow(message);
  });
});

describe("defineJobs", () => {
  it("does not compile a definition's key it does not take, such as a job's option", () => {
    const jobs = defineJobs({ double, fetch: { run: double, version: "1", timeoutMs: 5 } });
    expect(loadJobs(jobs).kinds).toEqual(["double", "fetch"]);
    // @ts-expect-error: requires is each job's option
    defineJobs({ big: { requires: { cpus: 4 }, run: double } });
    // @ts-expect-error: as above, for a number
    defineJobs({ big: { run: double, retries: 2 } });
    // @ts-expect-error: a rank job's definition has no run
    defineJobs({ train: { ranks: () => ["python3"], run: double } });
    // @ts-expect-error: the size of the group is each job's ranks option
    defineJobs({ train: { run: double, ranks: 4 } });
  });
});
