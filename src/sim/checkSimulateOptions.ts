import { ConfigError } from "../errors.ts";
import { checkPlantedBugs } from "../machines/checkPlantedBugs.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import { checkInspectOption } from "../runtime/guardInspect.ts";
import { requireWhole } from "../runtime/requireWhole.ts";
import { RANK_GROUPS_RULE } from "./drawnRankGroups.ts";
import { checkFaults, FAULT_PROFILES, type FaultProfile } from "./faultPlan.ts";
import { checkSimLaunches } from "./simLaunch.ts";
import { SIM_LIMITS } from "./simLimits.ts";
import type { SimulateOptions } from "./simulate.ts";

/** Every option `simulate` takes (the compiler holds this to `SimulateOptions`). */
export const SIMULATE_OPTIONS: Record<keyof SimulateOptions, true> = {
  seed: true,
  graph: true,
  handlers: true,
  jobs: true,
  workers: true,
  faults: true,
  faultsWithin: true,
  until: true,
  failFast: true,
  plantedBugs: true,
  inspect: true,
  onEvent: true,
  onGroupProgress: true,
  onProgress: true,
  ranks: true,
  world: true,
  launches: true,
};

/**
 * Refuses, with a `ConfigError` naming `where` and the option, the simulation options that
 * would give a false answer or none: options that are not an object, an unknown option (a typo such as `wrkers` ran on the
 * default 8), a seed that is not an unsigned 32-bit integer, jobs or workers or a world out of
 * `SIM_LIMITS`, `jobs` beside a graph of your own (which it does not size), a module's path as
 * `graph` or `handlers` (`baton sim` takes paths; `simulate` what they export), a graph without
 * handlers (the drawn handlers ran it, and the engine said to add kinds "to the job module")
 * or handlers without a graph (they ran the drawn graph), handlers that are neither a job
 * module nor a function (what a module cannot run is `yourJobs`'s to say), `world` beside
 * `ranks: false` (`world` draws the rank groups `ranks: false` leaves out: `RANK_GROUPS_RULE`;
 * `world: 0` drew groups of one rank, so it is refused too, saying how to draw none), an `until` that is
 * not a whole number of milliseconds up to `SIM_LIMITS.virtualMs` (-5 failed every seed, NaN
 * switched the liveness bound off), faults that are neither a profile nor a plan of valid
 * faults (a fault list as text gets told of `parseFaults`), a `faultsWithin` that is no whole
 * number of ms up to `SIM_LIMITS.virtualMs` or comes beside a plan (whose faults have their
 * own times), a `ranks` that is not a boolean, `launches` that `checkSimLaunches` refuses or
 * that come beside `world` (which sizes drawn groups) or `ranks: false`,
 * an unknown planted bug (a typo passed) or planted bugs that are no list, and observers that
 * are no functions. `simulate` and `simulateSeeds` check before they start.
 *
 * @example
 * ```ts
 * checkSimulateOptions("simulate", { seed: 1, until: Number.NaN });
 * // ConfigError: simulate: until must be a whole number from 1 to 2592000000, not NaN
 * ```
 */
export function checkSimulateOptions(where: string, options: SimulateOptions): void {
  checkOptionNames(where, options, SIMULATE_OPTIONS, {
    shape: "{ seed, jobs, workers, faults, … }",
  });
  requireWhole(where, "seed", options.seed, 0, SIM_LIMITS.seed);
  for (const name of ["jobs", "workers"] as const) {
    if (options[name] !== undefined) requireWhole(where, name, options[name], 1, SIM_LIMITS[name]);
  }
  if (options.graph !== undefined && options.jobs !== undefined) {
    throw new ConfigError(
      `${where}: jobs sizes the drawn graph, and you gave a graph of your own: leave jobs out`,
    );
  }
  refuseModulePaths(where, options);
  if ((options.graph === undefined) !== (options.handlers === undefined)) {
    throw new ConfigError(
      options.graph === undefined
        ? `${where}: handlers go with a graph of your own (the drawn graph has handlers of its own): give graph too, or leave handlers out`
        : `${where}: a graph of your own needs its handlers: give handlers, a job module such as { fetch: async (input, ctx) => … } or a function of the simulation's tools ({ sleep, now, random }) returning one`,
    );
  }
  const { handlers } = options;
  const notHandlers = handlers === undefined ? undefined : whatHandlersAreNot(handlers);
  if (notHandlers !== undefined) {
    throw new ConfigError(
      `${where}: handlers must be a job module (an object mapping each kind of your graph to its handler) or a function of the simulation's tools returning one, not ${notHandlers}`,
    );
  }
  if (options.world !== undefined) {
    if (options.world === 0) {
      throw new ConfigError(
        `${where}: world must be a whole number from 1 to ${SIM_LIMITS.world}, not 0; to draw no rank groups, leave world out beside a graph of your own, or give ranks: false (${RANK_GROUPS_RULE})`,
      );
    }
    requireWhole(where, "world", options.world, 1, SIM_LIMITS.world);
    if (options.ranks === false) {
      throw new ConfigError(
        `${where}: world draws rank groups, and ranks: false leaves them out: give one of them (${RANK_GROUPS_RULE})`,
      );
    }
  }
  if (options.launches !== undefined) {
    checkSimLaunches(where, options.launches);
    const against =
      options.ranks === false
        ? "ranks: false leaves rank groups out"
        : options.world !== undefined
          ? "world sizes drawn ones"
          : undefined;
    if (against !== undefined) {
      throw new ConfigError(
        `${where}: launches gives the rank groups to launch, and ${against}: give one of them`,
      );
    }
  }
  if (options.until !== undefined) {
    requireWhole(where, "until", options.until, 1, SIM_LIMITS.virtualMs);
  }
  const { faults } = options;
  if (faults !== undefined && !FAULT_PROFILES.includes(faults as FaultProfile)) {
    checkFaults(where, faults);
  }
  if (options.faultsWithin !== undefined) {
    requireWhole(where, "faultsWithin", options.faultsWithin, 1, SIM_LIMITS.virtualMs);
    if (Array.isArray(faults)) {
      throw new ConfigError(
        `${where}: faultsWithin is when drawn faults start, and faults is a plan of your own, whose faults start when it says: leave faultsWithin out, or give a fault profile`,
      );
    }
    if (faults === "none") {
      throw new ConfigError(
        `${where}: faultsWithin is when drawn faults start, and faults "none" draws none: leave faultsWithin out, or give faults "default" or "heavy"`,
      );
    }
  }
  if (options.failFast !== undefined && typeof options.failFast !== "boolean") {
    throw new ConfigError(
      `${where}: failFast must be true or false, not ${JSON.stringify(options.failFast)}`,
    );
  }
  if (options.ranks !== undefined && typeof options.ranks !== "boolean") {
    throw new ConfigError(
      `${where}: ranks must be true or false, not ${JSON.stringify(options.ranks)}`,
    );
  }
  checkPlantedBugs(`${where}: plantedBugs`, options.plantedBugs ?? []);
  checkObservers(where, options);
}

/** What `graph` and `handlers` are, for a message that refuses a path given instead. */
const MODULES = {
  graph: "your jobs, made with job() (one, or a list)",
  handlers: "your handlers, a job module or a function of the simulation's tools returning one",
} as const;

/**
 * Refuses a module's path given as `graph` or `handlers`, as `baton sim GRAPH --handlers SIM`
 * takes them: the graph's path was "graph[0] is "graph.ts", not a job", and the handlers' said
 * "not string", neither saying to import the module.
 */
function refuseModulePaths(where: string, options: SimulateOptions): void {
  for (const [name, what] of Object.entries(MODULES)) {
    const path: unknown = options[name as keyof typeof MODULES];
    if (typeof path !== "string") continue;
    throw new ConfigError(
      `${where}: ${name} is ${what}, not a module's path (${JSON.stringify(path)}): import the module and give its default export, ${name}: (await import(${JSON.stringify(path)})).default, or run baton sim GRAPH --handlers SIM with the paths`,
    );
  }
}

/** What each observer of `simulate` is called with, for its message. */
const OBSERVERS = {
  onEvent: "({ at, event }) => …",
  onGroupProgress: "(progress) => …",
  onProgress: "({ virtualMs, ended, jobs }) => …",
} as const;

/**
 * Refuses an observer that is not a function, and an `inspect` that is neither a function nor
 * an observer object: each was called at the simulation's first step and crashed it with a
 * TypeError (`options.onEvent is not a function`), or, for `inspect`, was ignored.
 */
function checkObservers(where: string, options: SimulateOptions): void {
  for (const [name, shape] of Object.entries(OBSERVERS)) {
    requireOptionalFunction(where, name, shape, options[name as keyof typeof OBSERVERS]);
  }
  checkInspectOption(where, options.inspect);
}

/**
 * What `handlers` is when it can be no job module nor a function returning one (`undefined`
 * when it can): a list among them, which is a graph's jobs (a graph module given as the
 * handlers module), where the job module's check said `job kind "0": unknown option kind`.
 *
 * @example
 * ```ts
 * whatHandlersAreNot([job("fetch", 1)]); // "a list (the jobs of a graph?)"
 * ```
 */
export function whatHandlersAreNot(handlers: unknown): string | undefined {
  if (Array.isArray(handlers)) return "a list (the jobs of a graph?)";
  if (handlers === null) return "null";
  return typeof handlers === "function" || typeof handlers === "object"
    ? undefined
    : typeof handlers;
}
