import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import {
  createEngine,
  inProcessPool,
  type LocalWorkersOptions,
  localPool,
} from "../../src/index.ts";

const jobs = { double: (n: number) => n * 2 };

describe("a pool given an option value its workers cannot take", () => {
  // Each of these used to be taken, and surfaced only once a run started: workers that exit 2
  // (PoolError WORKER_CANNOT_START), a hello refused three times (WORKER_CRASH_LOOP), or a
  // job no worker can take (GraphError UNSATISFIABLE, "cpus -1" offered).
  it.each<[Partial<Record<keyof LocalWorkersOptions, unknown>>, string]>([
    [
      { logLevel: "verbose" },
      'localPool: logLevel must be one of trace, debug, info, warn, error, fatal, silent, not "verbose"',
    ],
    [{ handlerThread: "yes" }, 'localPool: handlerThread must be true or false, not "yes"'],
    [{ resources: { cpus: -1 } }, "localPool: resources.cpus must be a finite number ≥ 0, not -1"],
    [
      { resources: { cpu: 4 } },
      "localPool: resources.cpu is no resource; a worker offers cpus, gpus and memory (MiB)",
    ],
    [{ maxRestarts: -1 }, "localPool: maxRestarts must be a whole number of 0 or more, not -1"],
    [{ maxRestarts: 1.5 }, "localPool: maxRestarts must be a whole number of 0 or more, not 1.5"],
    [{ windowMs: 0 }, "localPool: windowMs must be a whole number of 1 or more, not 0"],
    [
      { abortGraceMs: "30s" },
      'localPool: abortGraceMs must be a whole number of 1 or more, not "30s"',
    ],
  ])("localPool refuses %o when it is made", (option, message) => {
    const make = () =>
      localPool({ jobsModule: "jobs.ts", count: 1, ...option } as LocalWorkersOptions);
    expect(make).toThrow(ConfigError);
    expect(make).toThrow(message);
  });

  it("inProcessPool, and createEngine's { count, resources }, refuse an offer that is no resources", () => {
    expect(() => inProcessPool({ resources: { gpus: "2" as unknown as number } })).toThrow(
      'inProcessPool: resources.gpus must be a finite number ≥ 0, not "2"',
    );
    expect(() => createEngine({ jobs, workers: { count: 1, resources: { memory: -5 } } })).toThrow(
      "inProcessPool: resources.memory must be a finite number ≥ 0, not -5",
    );
  });

  it("inProcessPool refuses an abortGraceMs that is not a whole number of 1 or more, as localPool does", () => {
    expect(() => inProcessPool({ abortGraceMs: 0 })).toThrow(
      "inProcessPool: abortGraceMs must be a whole number of 1 or more, not 0",
    );
    expect(() => inProcessPool({ abortGraceMs: 30_000 })).not.toThrow();
  });

  it("takes every valid value, and undefined for each", () => {
    expect(() =>
      localPool({
        jobsModule: "jobs.ts",
        count: 0,
        resources: { cpus: 0.5, gpus: 0, memory: undefined },
        handlerThread: false,
        logLevel: "silent",
        maxRestarts: 0,
        windowMs: 1,
      }),
    ).not.toThrow();
    expect(() =>
      localPool({
        jobsModule: "jobs.ts",
        count: 0,
        resources: undefined,
        handlerThread: undefined,
        logLevel: undefined,
        maxRestarts: undefined,
        windowMs: undefined,
      }),
    ).not.toThrow();
    expect(() => inProcessPool({ count: 1, resources: { cpus: 1 } })).not.toThrow();
  });
});
