/**
 * `loadJobs`: a job module's shape is checked once, with errors that name the kind, and the
 * loaded module serves handlers, versions, default timeouts and a code hash.
 */
import { describe, expect, it } from "vitest";
import { JobModuleError } from "../../src/errors.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";

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
    [{}, "the job module defines no job kinds"],
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
});
