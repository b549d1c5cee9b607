import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { createEngine, type EngineOptions } from "../../src/runtime/engine.ts";
import { inProcessPool } from "../../src/runtime/inProcessPool.ts";
import { localPool } from "../../src/runtime/localPool.ts";

const jobs = { noop: () => null };

/** An object no JSON can hold. */
function circular(): object {
  const self: Record<string, unknown> = {};
  self.self = self;
  return self;
}

describe("createEngine's options", () => {
  it.each([
    [{ workers: 0 }, "workers must be a whole number of 1 or more, not 0"],
    [{ workers: Number.NaN }, "workers must be a whole number of 1 or more, not NaN"],
    [{ workers: { count: 1.5 } }, "workers.count must be a whole number of 1 or more, not 1.5"],
    [{ throttle: { noop: 0 } }, "throttle.noop must be a whole number of 1 or more, not 0"],
    [
      { throttle: { nope: 2 } },
      "throttle.nope names a kind the job module does not define, so it would limit nothing; throttle one of its kinds: noop",
    ],
    [
      { throttle: { Noop: 2 } },
      "throttle.Noop names a kind the job module does not define, so it would limit nothing; throttle one of its kinds: noop; did you mean noop?",
    ],
    [{ maxLost: -1 }, "maxLost must be a whole number of 1 or more, not -1"],
    [{ maxFrameBytes: 0 }, "maxFrameBytes must be a whole number of 1 or more, not 0"],
    [{ keepLogs: 0 }, "keepLogs must be a whole number from 1 to 10000, not 0"],
    [{ keepLogs: 1e12 }, "keepLogs must be a whole number from 1 to 10000, not 1000000000000"],
    [
      { leaseTimeoutMs: Number.NaN },
      "leaseTimeoutMs must be a finite number of milliseconds above 0, not NaN",
    ],
    [{ heartbeatMs: -5 }, "heartbeatMs must be a finite number of milliseconds above 0, not -5"],
    [
      { progressIntervalMs: Number.POSITIVE_INFINITY },
      "progressIntervalMs must be a finite number of milliseconds above 0, not Infinity",
    ],
    [
      { store: "" },
      "store is an empty path, which would fill the current directory with the run's folders; give a directory, or leave store out to keep no results",
    ],
    [
      { storeReadOnly: true },
      "storeReadOnly reuses the results of a store without writing to it: give that store's directory as store",
    ],
    [
      { store: "/data/.baton", storeReadOnly: true, force: true },
      "storeReadOnly reuses a store's results and force reuses none, so together they keep and reuse nothing: leave out store, storeReadOnly and force for that",
    ],
    [
      { storeFullWaitMs: 0 },
      "storeFullWaitMs must be a finite number of milliseconds above 0, not 0",
    ],
    [
      { batonDir: "" },
      "batonDir is an empty path, which would fill the current directory with the run's folders; give a directory",
    ],
    [
      { leaseTimeoutMs: 3_000 },
      "leaseTimeoutMs (3000 ms) must be more than heartbeatMs (5000 ms, the default), the time between two pings: every lease would expire before its first renewal; raise leaseTimeoutMs or lower heartbeatMs (twice heartbeatMs leaves room for a slow answer)",
    ],
    [
      { heartbeatMs: 30_000 },
      "leaseTimeoutMs (20000 ms, the default) must be more than heartbeatMs (30000 ms)",
    ],
    [
      { heartbeatMs: 1_000, deadAfterMs: 1_000 },
      "deadAfterMs (1000 ms) must be more than heartbeatMs (1000 ms), the time between two pings: every worker would be judged dead before its next ping",
    ],
    [
      { secretFile: "" },
      "secretFile is an empty path; give the file that keeps the secret from run to run, or leave secretFile out for a new secret each run",
    ],
    [
      { logsDir: "" },
      "logsDir is an empty path, which would fill the current directory with the run's folders; give a directory",
    ],
  ])("refuses %o with a ConfigError naming the option", (bad, message) => {
    expect(() => createEngine({ jobs, ...bad })).toThrow(ConfigError);
    expect(() => createEngine({ jobs, ...bad })).toThrow(`createEngine: ${message}`);
  });

  // What a program in JavaScript can pass, which the types would have refused: each used to
  // throw a TypeError from inside baton, or (a typo) to be ignored.
  it.each([
    [
      undefined,
      "createEngine: the options must be an object, { jobs, workers, store, … }, not undefined",
    ],
    [[], "createEngine: the options must be an object, { jobs, workers, store, … }, not an array"],
    [
      {},
      "createEngine: jobs must be the job module, an object mapping each job kind to its handler (import it, or write { double: (n) => n * 2 }), not undefined",
    ],
    [
      { jobs: null },
      "createEngine: jobs must be the job module, an object mapping each job kind to its handler (import it, or write { double: (n) => n * 2 }), not null",
    ],
    [
      { jobs: "./jobs.ts" },
      'not "./jobs.ts"; a pool of worker processes takes its path, as localPool({ jobsModule })',
    ],
    [
      { jobs, workers: "4" },
      'createEngine: workers must be a count of in-process workers, { count, resources }, or a pool such as inProcessPool(…), localPool(…) or slurmPool(…), not "4"',
    ],
    [
      { jobs, workers: localPool },
      "not a function (a pool is made by calling one: localPool({ … }))",
    ],
    [{ jobs, workers: null }, "createEngine: workers must be a count of in-process workers"],
    [
      { jobs, failfast: true },
      "createEngine: unknown option failfast; it takes jobs, workers, store,",
    ],
    // Each of these rejected the run with a TypeError from inside baton.
    [
      { jobs, store: 5 },
      "createEngine: store must be the path of the result store's directory, not 5",
    ],
    [
      { jobs, store: {} },
      "createEngine: store must be the path of the result store's directory, not an object",
    ],
    [{ jobs, batonDir: 5 }, "createEngine: batonDir must be the path of a directory, not 5"],
    [{ jobs, secretFile: 5 }, "createEngine: secretFile must be the path of a file, not 5"],
    [
      // What console has, and no child().
      { jobs, logger: { debug() {}, info() {}, warn() {}, error() {} } },
      'createEngine: logger must be a pino logger, such as pino({ level: "info" }) or your service\'s own (baton calls its child, debug, info, warn, error as pino\'s: log.info({ job }, "message")); it has no child()',
    ],
    [
      { jobs, logger: "info" },
      'createEngine: logger must be a pino logger, such as pino({ level: "info" })',
    ],
    [
      { jobs, onCoordinator: 5 },
      "createEngine: onCoordinator must be a function, (coordinator) => …, not 5",
    ],
    [{ jobs, clock: 5 }, "createEngine: clock must be a Clock, such as nodeClock(), not 5"],
    [
      { jobs, net: {} },
      "createEngine: net must be a Net, such as wsNet() or memoryNet(); it has no listen()",
    ],
    [
      { jobs, entropy: { random: Math.random } },
      "createEngine: entropy must be an Entropy, such as nodeEntropy(); it has no id()",
    ],
    [
      { jobs, listen: 7000 },
      'createEngine: listen must be an address such as "127.0.0.1:7000", not 7000',
    ],
    [
      { jobs, listen: "localhost" },
      'createEngine: listen "localhost" is not an address baton can use: write HOST:PORT',
    ],
    // Refused, but its text unquoted (not 10s), where every other option's is quoted.
    [
      { jobs, cancelGraceMs: "10s" },
      'createEngine: cancelGraceMs must be a finite number of milliseconds above 0, not "10s"',
    ],
    // Each of these was taken without a word.
    [{ jobs, logsDir: 5 }, "createEngine: logsDir must be the path of a directory, not 5"],
    [{ jobs, files: 5 }, "createEngine: files must be a Files, such as nodeFiles(), not 5"],
    [{ jobs, failFast: "yes" }, 'createEngine: failFast must be true or false, not "yes"'],
    [{ jobs, force: "false" }, 'createEngine: force must be true or false, not "false"'],
    [
      { jobs, inspect: 5 },
      "createEngine: inspect must be an XState inspection observer, a function of each inspection event or { next }, not 5",
    ],
    // JSON.stringify threw on each while the message was made: a TypeError, not the ConfigError.
    [
      { jobs, inspect: 10n },
      "createEngine: inspect must be an XState inspection observer, a function of each inspection event or { next }, not 10",
    ],
    [
      { jobs, plantedBugs: circular() },
      'createEngine: plantedBugs must be a list of planted bugs, such as ["release-lease-twice"], not [object Object]',
    ],
    [
      { jobs, throttle: 5 },
      "createEngine: throttle must be an object of the most jobs of each kind running at once, such as { fetch: 4 }, not 5",
    ],
    [{ jobs, throttle: [1] }, "createEngine: throttle must be an object of the most jobs"],
    [{ jobs, plantedBugs: ["nope"] }, 'createEngine: plantedBugs: unknown planted bug "nope"'],
    [
      { jobs, plantedBugs: "release-lease-twice" },
      'createEngine: plantedBugs must be a list of planted bugs, such as ["release-lease-twice"], not "release-lease-twice"',
    ],
  ])(
    "refuses options %o that are not an engine's with a ConfigError saying what it takes",
    (bad, message) => {
      const create = () => createEngine(bad as unknown as EngineOptions);
      expect(create).toThrow(ConfigError);
      expect(create).toThrow(message);
    },
  );

  it("refuses storeReadOnly with worker processes whose own files would go into the store, and takes it otherwise", () => {
    const processes = localPool({
      jobsModule: fileURLToPath(new URL("../fixtures/worker.jobs.ts", import.meta.url)),
    });
    const readOnly = { jobs, storeReadOnly: true, workers: processes };
    expect(() => createEngine({ ...readOnly, store: ".baton" })).toThrow(
      new ConfigError(
        `createEngine: storeReadOnly writes nothing in the store .baton, but batonDir (by default .baton in the working directory), where the run's worker processes get their files, is that store: give batonDir a directory outside the store`,
      ),
    );
    expect(() =>
      createEngine({
        ...readOnly,
        store: "/data/store",
        batonDir: "/tmp/own",
        logsDir: "/data/store/logs/mine",
      }),
    ).toThrow(
      "createEngine: storeReadOnly writes nothing in the store /data/store, but logsDir, where the run's worker processes get their files, is in it: give logsDir a directory outside the store",
    );
    expect(() =>
      createEngine({ ...readOnly, store: "/data/store", batonDir: "/data/store/own" }),
    ).toThrow("but batonDir, where the run's worker processes get their files, is in it");
    expect(() => createEngine({ ...readOnly, store: "/data/store" })).not.toThrow();
    expect(() =>
      createEngine({ ...readOnly, store: ".baton", batonDir: "/tmp/own" }),
    ).not.toThrow();
    // In-process workers need no files of the run's.
    expect(() => createEngine({ jobs, storeReadOnly: true, store: ".baton" })).not.toThrow();
  });

  it("refuses a pool's connect without listen, where no connect names the port it listens on, as baton run does", () => {
    const jobsModule = fileURLToPath(new URL("../fixtures/worker.jobs.ts", import.meta.url));
    const elsewhere = localPool({ jobsModule, connect: "login1:7000" });
    expect(() => createEngine({ jobs, workers: elsewhere })).toThrow(
      new ConfigError(
        `createEngine: the pool's connect login1:7000 is where workers reach this run's listen address by another name, and without listen the run listens on a free port of 127.0.0.1: give listen too, such as createEngine({ listen: "0.0.0.0:7000", workers: localPool({ connect: "login1:7000", … }) })`,
      ),
    );
    expect(() => createEngine({ jobs, workers: elsewhere, listen: "0.0.0.0:7000" })).not.toThrow();
    expect(() => createEngine({ jobs, workers: localPool({ jobsModule }) })).not.toThrow();
  });

  it("takes an inProcessPool with defaults, and refuses one of no workers, which waited for good", async () => {
    expect(() => inProcessPool({ count: 0 })).toThrow(
      "inProcessPool: count must be a whole number of 1 or more, not 0",
    );
    expect(() => inProcessPool({ count: 1, restartBudget: -1 })).toThrow(ConfigError);
    expect(() => inProcessPool({ cout: 2 } as never)).toThrow(
      "inProcessPool: unknown option cout; it takes count, resources, restartBudget",
    );
    expect(() =>
      inProcessPool({ count: 1, restartBudget: Number.POSITIVE_INFINITY }),
    ).not.toThrow();
    const result = await createEngine({ jobs, workers: inProcessPool({ count: 2 }) }).run([]);
    expect(result.ok).toBe(true);
    expect(inProcessPool().offers).toHaveLength(1);
  });

  it("says, for no in-process workers, how to run only workers started elsewhere, and that way is taken", () => {
    const advice =
      "for a run that only workers started elsewhere join (baton worker --connect …), give workers: localPool({ jobsModule, count: 0 }) instead, and listen for workers on other hosts";
    expect(() => createEngine({ jobs, workers: 0 })).toThrow(advice);
    expect(() => createEngine({ jobs, workers: { count: 0 } })).toThrow(advice);
    expect(() => inProcessPool({ count: 0 })).toThrow(advice);
    expect(() => createEngine({ jobs, workers: -1 })).not.toThrow(advice);
    const jobsModule = fileURLToPath(new URL("../fixtures/worker.jobs.ts", import.meta.url));
    expect(() =>
      createEngine({ jobs, workers: localPool({ jobsModule, count: 0 }), listen: "0.0.0.0:0" }),
    ).not.toThrow();
  });

  it("takes sensible values and leaves unset ones to the defaults", () => {
    expect(() =>
      createEngine({
        jobs,
        workers: { count: 2 },
        throttle: { noop: 1 },
        maxLost: 3,
        leaseTimeoutMs: 2_500,
        heartbeatMs: 1_000,
      }),
    ).not.toThrow();
    expect(() => createEngine({ jobs })).not.toThrow();
  });
});
