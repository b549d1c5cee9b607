import { ConfigError } from "../errors.ts";
import { preview } from "../graph/label.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import { requireWhole } from "../runtime/requireWhole.ts";
import { checkSimulateOptions } from "./checkSimulateOptions.ts";
import type { inSeedOrder } from "./inSeedOrder.ts";
import { SIM_LIMITS } from "./simLimits.ts";
import type { SimModules } from "./simModules.ts";
import type { SimulateOptions, SimulationResult } from "./simulate.ts";

/**
 * A simulation without its seed, as plain data so that a thread can be handed it: drawn, or
 * of a graph of your own and its handlers given as module paths (`modules`: each thread
 * imports them). The graph, handlers and observers themselves cannot cross threads.
 */
export type DrawnSimulation = Pick<
  SimulateOptions,
  Exclude<(typeof DRAWN_OPTIONS)[number], "modules">
> & {
  /** Your graph and handlers, as the paths of their modules; not beside `jobs`. */
  modules?: SimModules | undefined;
};

/** The options of a drawn simulation: plain data a thread can be handed. */
const DRAWN_OPTIONS = [
  "jobs",
  "workers",
  "faults",
  "faultsWithin",
  "until",
  "failFast",
  "plantedBugs",
  "ranks",
  "world",
  "modules",
] as const satisfies readonly (keyof SimulateOptions | "modules")[];

/** How `simulateSeeds` runs its seeds (its fourth argument): threads, and what each result keeps. */
export interface SimulateSeedsOptions {
  /**
   * Threads running seeds side by side (default: the machine's cores, at most one per
   * seed). Seeds are independent, so each gives the trace it gives alone; 1 runs every
   * seed on the calling thread (on one helper, with `callingThread: false`). A helper takes seeds once it has loaded baton and your
   * modules (a second or more); the calling thread runs them from the first until then, so a
   * short range may run on it alone. With a thread per core, Node started with
   * `--no-parallel-scavenge` runs about an eighth more seeds a second (V8's young-generation
   * collector then takes no core from another seed; `baton sim` sets it, a library does not).
   */
  threads?: number | undefined;
  /**
   * Whether the calling thread runs seeds too (default `true`). With `false` every seed runs on
   * `threads` helper threads (one with `threads: 1`), and the calling thread is left to its own
   * work: its CPU to a server or dashboard of yours, at the cost of the first seed, which waits
   * for a helper to load. It also proves what a helper gives: a short range otherwise ends on
   * the calling thread before a helper has loaded.
   */
  callingThread?: boolean | undefined;
  /**
   * Run each seed that passed again and fail it (invariant 0) when the two traces differ, as
   * `baton sim --check-determinism` does (default false: a passing seed costs twice the time).
   */
  checkDeterminism?: boolean | undefined;
  /**
   * Keep the trace of a passed seed too. By default only a failed seed keeps its trace
   * (a passed one has `trace: []`): a trace is thousands of lines to copy between threads.
   */
  traces?: boolean | undefined;
  /**
   * Called on the calling thread as each seed ends, on whichever thread ran it, in the order
   * they end (the iteration yields them in seed order, so a slow first seed holds the others
   * back): a long range's progress (`baton sim --seeds` draws it on a terminal). What it
   * throws ends the iteration with that error, after the seeds before its seed.
   */
  onSeedEnded?: ((result: SimulationResult) => void) | undefined;
}

/**
 * Simulates the seeds `first..last` of a drawn simulation, or of your graph and handlers given
 * as module paths (`modules`), on several threads (this one and
 * `threads − 1` helpers, or `threads` helpers with `callingThread: false`) and yields their results in seed order, as each is ready. Stopping
 * early (a `break`) stops the threads. Options no simulation can use, and a range that is
 * empty or not of seeds (0 to 4294967295), are a `ConfigError` at the call. An error thrown by
 * a simulation (not a broken invariant: a crash of the simulator itself) ends the iteration
 * with that error (the first seed's in seed order, on any thread); so does a module of yours
 * that does not load or cannot run the graph, as the baton error (`MODULE_NOT_FOUND`,
 * `ConfigError`, …) it is on any thread.
 *
 * @example
 * ```ts
 * for await (const r of simulateSeeds(1, 1000, { jobs: 100, workers: 8, faults: "heavy" })) {
 *   if (!r.ok) console.log(`seed ${r.seed}: ${r.violation!.message}`, r.trace.slice(-20));
 * }
 * ```
 */
export function simulateSeeds(
  first: number,
  last: number,
  simulation: DrawnSimulation = {},
  options: SimulateSeedsOptions = {},
): AsyncGenerator<SimulationResult> {
  checkDrawn(simulation);
  checkSeedsOptions(options);
  requireWhole("simulateSeeds", "first", first, 0, SIM_LIMITS.seed);
  requireWhole("simulateSeeds", "last", last, 0, SIM_LIMITS.seed);
  const { modules, ...drawn } = simulation;
  checkSimulateOptions("simulateSeeds", { ...drawn, seed: first });
  if (modules !== undefined && drawn.jobs !== undefined) {
    throw new ConfigError(
      "simulateSeeds: jobs sizes the drawn graph, and you gave a graph of your own (modules): leave jobs out",
    );
  }
  if (options.threads !== undefined)
    requireWhole("simulateSeeds", "threads", options.threads, 1, SIM_LIMITS.threads);
  if (first > last) {
    throw new ConfigError(
      `simulateSeeds: first (${first}) is after last (${last}); give the lower seed first`,
    );
  }
  return seedsOnFirstNext(first, last, simulation, options);
}

/**
 * Refuses what cannot cross threads: a graph, handlers or observers of your own (functions:
 * on several threads they failed with a DataCloneError, on one the graph ran; your graph and
 * handlers go as `modules`), `modules` that are not two paths, and unknown options, which
 * would be ignored.
 */
function checkDrawn(simulation: DrawnSimulation): void {
  if (typeof simulation !== "object" || simulation === null || Array.isArray(simulation)) {
    throw new ConfigError(
      `simulateSeeds: its third argument is the simulation, { jobs, workers, faults, … } (or { modules: { graph, handlers } } for a graph of your own), not ${Array.isArray(simulation) ? "an array" : String(simulation)}`,
    );
  }
  const { modules } = simulation;
  if (
    modules !== undefined &&
    (typeof modules?.graph !== "string" || typeof modules?.handlers !== "string")
  ) {
    throw new ConfigError(
      "simulateSeeds: modules must be { graph, handlers }, the paths of your graph module and of the module whose default export is its handlers",
    );
  }
  for (const name of Object.keys(simulation)) {
    if ((DRAWN_OPTIONS as readonly string[]).includes(name)) continue;
    const own = [
      "graph",
      "handlers",
      "inspect",
      "onEvent",
      "onGroupProgress",
      "onProgress",
    ].includes(name);
    throw new ConfigError(
      own
        ? `simulateSeeds: ${name} cannot cross threads; for a graph of your own, give modules: { graph, handlers } (the paths of their modules, which each thread imports), or call simulate({ seed, graph, handlers }) once per seed`
        : `simulateSeeds: unknown option ${name}; a drawn simulation takes ${DRAWN_OPTIONS.join(", ")}`,
    );
  }
}

/** Every option of how `simulateSeeds` runs (the compiler holds this to `SimulateSeedsOptions`). */
export const SEEDS_OPTIONS: Record<keyof SimulateSeedsOptions, true> = {
  threads: true,
  callingThread: true,
  checkDeterminism: true,
  traces: true,
  onSeedEnded: true,
};

/**
 * Refuses a fourth argument that is not an object of `SimulateSeedsOptions`, or names another,
 * and an `onSeedEnded` that is no function or a check that is no boolean (`onSeedEnded: 5`
 * ended the iteration at the first seed with a TypeError; `traces: "no"` kept every trace).
 */
function checkSeedsOptions(options: SimulateSeedsOptions): void {
  checkOptionNames("simulateSeeds", options, SEEDS_OPTIONS, {
    shape:
      "{ threads, callingThread, checkDeterminism, traces, onSeedEnded } (its fourth argument)",
    hint: (name) =>
      (DRAWN_OPTIONS as readonly string[]).includes(name)
        ? ` (${name} belongs to the simulation, its third argument)`
        : "",
  });
  requireOptionalFunction("simulateSeeds", "onSeedEnded", "(result) => …", options.onSeedEnded);
  for (const name of ["callingThread", "checkDeterminism", "traces"] as const) {
    const value = options[name];
    if (value !== undefined && typeof value !== "boolean") {
      throw new ConfigError(`simulateSeeds: ${name} must be true or false, not ${preview(value)}`);
    }
  }
}

/**
 * `inSeedOrder`, which loads with the simulator and its threads at the first `next()`: checking
 * the arguments at the call needs neither, and `import "baton"` loads neither until a program
 * simulates.
 */
async function* seedsOnFirstNext(
  ...range: Parameters<typeof inSeedOrder>
): AsyncGenerator<SimulationResult> {
  yield* (await import("./inSeedOrder.ts")).inSeedOrder(...range);
}
