/**
 * `simulate` and `simulateSeeds` refuse, before anything runs, the options that would give a
 * false answer: an unknown planted bug (a typo passed), an `until` that failed every seed (-5)
 * or switched liveness off (NaN), more jobs, workers or ranks than a seed can take, a `world`
 * (which draws rank groups) beside `ranks: false` (which leaves them out), handlers that cannot run the graph (naming `handlers`), more
 * threads than fit, an empty range, and what JavaScript can pass that the types refuse (a
 * fault list or a planted bug as a string, an observer that is no function).
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { job } from "../../src/graph/job.ts";
import type { PlantedBug } from "../../src/machines/plantedBugs.ts";
import { SIM_LIMITS } from "../../src/sim/simLimits.ts";
import { type SimulateOptions, simulate } from "../../src/sim/simulate.ts";
import { type DrawnSimulation, simulateSeeds } from "../../src/sim/simulateSeeds.ts";

const nope = ["nope"] as unknown as PlantedBug[];
/** A graph of your own: fetch, then parse. */
const graph = job("parse", null, { after: [job("fetch", 1)] });
const one = () => 1;
/** When rank groups are drawn, as the errors about `world` and `ranks` say it. */
const RULE =
  "rank groups are drawn beside the drawn graph (up to 4 ranks) and not beside a graph of your own; world: N draws them beside either, of up to N ranks, and ranks: false leaves them out";

describe("simulate's options", () => {
  it.each([
    [
      { plantedBugs: nope },
      'plantedBugs: unknown planted bug "nope"; give one of lease-running-job',
    ],
    [{ until: -5 }, `until must be a whole number from 1 to ${SIM_LIMITS.virtualMs}, not -5`],
    [
      { until: Number.NaN },
      `until must be a whole number from 1 to ${SIM_LIMITS.virtualMs}, not NaN`,
    ],
    [
      { until: SIM_LIMITS.virtualMs + 1 },
      `until must be a whole number from 1 to ${SIM_LIMITS.virtualMs}, not 2592000001`,
    ],
    [
      { faultsWithin: 0 },
      `faultsWithin must be a whole number from 1 to ${SIM_LIMITS.virtualMs}, not 0`,
    ],
    [
      { faults: [{ kind: "reset", at: 10, target: 0 }], faultsWithin: 3_000 },
      "faultsWithin is when drawn faults start, and faults is a plan of your own, whose faults start when it says: leave faultsWithin out, or give a fault profile",
    ],
    [
      { faults: "none", faultsWithin: 3_000 },
      'faultsWithin is when drawn faults start, and faults "none" draws none: leave faultsWithin out, or give faults "default" or "heavy"',
    ],
    [
      { faults: "apocalyptic" },
      'faults must be one of none, default, heavy or a list of faults, not "apocalyptic"',
    ],
    [
      { faults: [{ kind: "nope", at: 1 }] },
      'faults[0] has an unknown kind "nope"; give one of worker-crash',
    ],
    [
      { faults: [{ kind: "partition", at: -5, target: 0, ms: 10 }] },
      "faults[0] (partition) at must be a whole number of virtual ms from 0 to 2592000000, not -5",
    ],
    [
      { faults: [{ kind: "partition", at: 5000 }] },
      "faults[0] (partition) lacks target: give a whole number of 0 or more",
    ],
    [
      {
        faults: [
          { kind: "reset", at: 0, target: 1 },
          { kind: "coordinator-crash", at: 1, ms: 1e20, torn: true },
        ],
      },
      "faults[1] (coordinator-crash) ms must be a whole number of virtual ms from 0 to 2592000000, not 100000000000000000000",
    ],
    [
      { faults: [{ kind: "worker-crash", at: 5, target: 0, side: "client" }] },
      "faults[0] (worker-crash) takes no side",
    ],
    [
      { faults: "partition@5000:0+20000" },
      'faults must be one of none, default, heavy or a list of faults, not "partition@5000:0+20000"; a fault list as a failure prints it goes through parseFaults: faults: parseFaults("partition@5000:0+20000")',
    ],
    // A string was read letter by letter: 'unknown planted bug "r"'.
    [
      { plantedBugs: "release-lease-twice" },
      'plantedBugs must be a list of planted bugs, such as ["release-lease-twice"], not "release-lease-twice"',
    ],
    // Each crashed the first step with a TypeError ("options.onEvent is not a function").
    [{ onEvent: 5 }, "onEvent must be a function, ({ at, event }) => …, not 5"],
    [
      { onProgress: "x" },
      'onProgress must be a function, ({ virtualMs, ended, jobs }) => …, not "x"',
    ],
    [{ onGroupProgress: true }, "onGroupProgress must be a function, (progress) => …, not true"],
    // JSON.stringify threw on it while the message was made: a TypeError, not the ConfigError.
    [{ faults: 10n }, "faults must be one of none, default, heavy or a list of faults, not 10"],
    [
      { inspect: 5 },
      "inspect must be an XState inspection observer, a function of each inspection event or { next }, not 5",
    ],
    [{ ranks: "no" }, 'ranks must be true or false, not "no"'],
    [{ seed: "1" }, 'seed must be a whole number from 0 to 4294967295, not "1"'],
    [{ wrkers: 3 }, "unknown option wrkers; it takes seed, graph, handlers, jobs, workers"],
    [
      { graph: [], handlers: {} },
      "jobs sizes the drawn graph, and you gave a graph of your own: leave jobs out",
    ],
    [
      { handlers: { fetch: one } },
      "handlers go with a graph of your own (the drawn graph has handlers of its own): give graph too, or leave handlers out",
    ],
    [
      { graph: [graph], jobs: undefined },
      "a graph of your own needs its handlers: give handlers, a job module such as",
    ],
    [
      { graph: [graph], jobs: undefined, handlers: {} },
      "handlers defines no job kinds: give it a handler for each kind of your graph (fetch, parse), e.g. { fetch: async (input, ctx) => … }",
    ],
    [
      { graph: [graph], jobs: undefined, handlers: () => ({}) },
      "the job module your handlers function returned defines no job kinds: give it a handler",
    ],
    [
      { graph: [graph], jobs: undefined, handlers: { fetch: one } },
      "your graph has jobs of kind parse, which handlers does not define (it defines fetch): add a handler for each, or fix the kind",
    ],
    // A kind mistyped in the handlers: the one the graph's kind most likely is, as baton run says.
    [
      { graph: [graph], jobs: undefined, handlers: { fetch: one, prase: one } },
      "your graph has jobs of kind parse, which handlers does not define (it defines fetch, prase; did you mean prase?): add a handler for each, or fix the kind",
    ],
    [
      { graph: [graph], jobs: undefined, handlers: { fetch: 5, parse: one } },
      'handlers: job kind "fetch" must be a handler function, { run, version } or { ranks, version }, not number',
    ],
    [
      // Wrapped as if a handler, it failed each job with "run is not a function" instead.
      { graph: [graph], jobs: undefined, handlers: { fetch: { run: undefined }, parse: one } },
      'handlers: job kind "fetch" must be a handler function, { run, version } or { ranks, version }: its definition has no run function',
    ],
    [
      { graph: [graph], jobs: undefined, handlers: 5 },
      "handlers must be a job module (an object mapping each kind of your graph to its handler) or a function",
    ],
    [
      // A graph's jobs where the handlers go: it said `job kind "0": unknown option kind`.
      { graph: [graph], jobs: undefined, handlers: [graph] },
      "handlers must be a job module (an object mapping each kind of your graph to its handler) or a function of the simulation's tools returning one, not a list (the jobs of a graph?)",
    ],
    [
      { graph: [graph], jobs: undefined, handlers: () => null },
      "the job module your handlers function returned must be an object mapping each kind of your graph (fetch, parse) to its handler, not null",
    ],
    [{ jobs: SIM_LIMITS.jobs + 1 }, `jobs must be a whole number from 1 to ${SIM_LIMITS.jobs}`],
    [{ workers: 100_000 }, `workers must be a whole number from 1 to ${SIM_LIMITS.workers}`],
    [{ world: 100_000 }, `world must be a whole number from 1 to ${SIM_LIMITS.world}`],
    [
      { world: 0 },
      `world must be a whole number from 1 to ${SIM_LIMITS.world}, not 0; to draw no rank groups, leave world out beside a graph of your own, or give ranks: false (${RULE})`,
    ],
    [
      { graph: [graph], jobs: undefined, handlers: { fetch: one, parse: one }, world: 0 },
      `world must be a whole number from 1 to ${SIM_LIMITS.world}, not 0; to draw no rank groups, leave world out beside a graph of your own, or give ranks: false (${RULE})`,
    ],
    [
      { world: 3, ranks: false },
      `world draws rank groups, and ranks: false leaves them out: give one of them (${RULE})`,
    ],
    [
      {
        graph: [graph],
        jobs: undefined,
        handlers: { fetch: one, parse: one },
        world: 3,
        ranks: false,
      },
      `world draws rank groups, and ranks: false leaves them out: give one of them (${RULE})`,
    ],
    [
      { graph: "graph.ts", jobs: undefined, handlers: { fetch: one, parse: one } },
      'graph is your jobs, made with job() (one, or a list), not a module\'s path ("graph.ts"): import the module and give its default export, graph: (await import("graph.ts")).default, or run baton sim GRAPH --handlers SIM with the paths',
    ],
    [
      { graph: [graph], jobs: undefined, handlers: "./sim.ts" },
      'handlers is your handlers, a job module or a function of the simulation\'s tools returning one, not a module\'s path ("./sim.ts"): import the module and give its default export, handlers: (await import("./sim.ts")).default',
    ],
    [{ seed: -1 }, "seed must be a whole number from 0 to 4294967295, not -1"],
    [{ seed: 2 ** 32 }, "seed must be a whole number from 0 to 4294967295, not 4294967296"],
  ])("refuses %o with a ConfigError saying what to give", async (bad, message) => {
    const run = simulate({ seed: 1, jobs: 5, ...(bad as Partial<SimulateOptions>) });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow(`simulate: ${message}`);
  });

  it("takes seed 0 and the largest seed", async () => {
    for (const seed of [0, SIM_LIMITS.seed]) {
      const r = await simulate({ seed, jobs: 2, workers: 1, faults: "none", ranks: false });
      expect(r.ok).toBe(true);
      expect(r.seed).toBe(seed);
    }
  });
});

describe("simulateSeeds' range and options", () => {
  it.each([
    [5, 1, {}, "simulateSeeds: first (5) is after last (1); give the lower seed first"],
    [1, 2 ** 32, {}, "simulateSeeds: last must be a whole number from 0 to 4294967295"],
    [-1, 2, {}, "simulateSeeds: first must be a whole number from 0 to 4294967295"],
    [1, 2, { plantedBugs: nope }, 'simulateSeeds: plantedBugs: unknown planted bug "nope"'],
    [1, 2, { until: Number.NaN }, "simulateSeeds: until must be a whole number from 1 to"],
    [
      1,
      2,
      { faults: [{ kind: "slow", at: 0, ms: 10 }] } as unknown as DrawnSimulation,
      "simulateSeeds: faults[0] (slow) lacks by: give a whole number of virtual ms",
    ],
  ])("refuses %d..%d %o at the call", (first, last, simulation, message) => {
    expect(() => simulateSeeds(first, last, simulation)).toThrow(ConfigError);
    expect(() => simulateSeeds(first, last, simulation)).toThrow(message);
  });

  it.each([
    [
      { graph: [] },
      "graph cannot cross threads; for a graph of your own, give modules: { graph, handlers } (the paths of their modules",
    ],
    [
      { modules: { graph: "g.ts" } },
      "modules must be { graph, handlers }, the paths of your graph module and of the module",
    ],
    [
      { modules: { graph: "g.ts", handlers: "sim.ts" }, jobs: 5 },
      "jobs sizes the drawn graph, and you gave a graph of your own (modules): leave jobs out",
    ],
    [{ handlers: {} }, "handlers cannot cross threads"],
    [{ onEvent: () => {} }, "onEvent cannot cross threads"],
    [{ onProgress: () => {} }, "onProgress cannot cross threads"],
    [{ worker: 4 }, "unknown option worker; a drawn simulation takes jobs, workers, faults"],
  ])("refuses %o, which a drawn simulation does not take, at the call", (simulation, message) => {
    const seeds = () => simulateSeeds(1, 2, simulation as DrawnSimulation, { threads: 2 });
    expect(seeds).toThrow(ConfigError);
    expect(seeds).toThrow(`simulateSeeds: ${message}`);
  });

  // What JavaScript can pass that the types refuse: each threw a TypeError from inside
  // ("Cannot destructure property 'modules'"), or (a number, a misplaced option) was ignored.
  it.each([
    [
      [1, 2, null],
      "simulateSeeds: its third argument is the simulation, { jobs, workers, faults, … } (or { modules: { graph, handlers } } for a graph of your own), not null",
    ],
    [
      [1, 2, 5],
      "simulateSeeds: its third argument is the simulation, { jobs, workers, faults, … }",
    ],
    [
      [1, 2, {}, { workers: 2 }],
      "simulateSeeds: unknown option workers; it takes threads, callingThread, checkDeterminism, traces, onSeedEnded (workers belongs to the simulation, its third argument)",
    ],
    [
      [1, 2, {}, { onSeedEnded: 5 }],
      "simulateSeeds: onSeedEnded must be a function, (result) => …, not 5",
    ],
    [[1, 2, {}, { traces: "no" }], 'simulateSeeds: traces must be true or false, not "no"'],
    [[1, 2, {}, { callingThread: 0 }], "simulateSeeds: callingThread must be true or false, not 0"],
    [
      [1, 2, {}, { checkDeterminism: 1 }],
      "simulateSeeds: checkDeterminism must be true or false, not 1",
    ],
    [
      [1, 2, {}, "fast"],
      'simulateSeeds: the options must be an object, { threads, callingThread, checkDeterminism, traces, onSeedEnded } (its fourth argument), not "fast"',
    ],
  ])("refuses simulateSeeds(%o) at the call", (args, message) => {
    const seeds = () => (simulateSeeds as (...args: unknown[]) => unknown)(...args);
    expect(seeds).toThrow(ConfigError);
    expect(seeds).toThrow(message);
  });

  it("draws its simulations with the defaults when given only the seeds", async () => {
    const results = [];
    for await (const result of simulateSeeds(3, 3)) results.push(result);
    expect(results.map((result) => [result.seed, result.ok])).toEqual([[3, true]]);
  });

  it("refuses simulate() without an object of options", async () => {
    await expect(simulate(undefined as never)).rejects.toThrow(
      "simulate: the options must be an object, { seed, jobs, workers, faults, … }, not undefined",
    );
  });

  it.each([0, 0.5, Number.NaN, SIM_LIMITS.threads + 1])(
    "refuses %d threads at the call",
    (threads) => {
      expect(() => simulateSeeds(1, 2, {}, { threads })).toThrow(
        `simulateSeeds: threads must be a whole number from 1 to ${SIM_LIMITS.threads}`,
      );
    },
  );
});
