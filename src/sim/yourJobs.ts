import { didYouMeanEach } from "../closestName.ts";
import { ConfigError, GraphError, JobModuleError } from "../errors.ts";
import type { JobSpec } from "../graph/job.ts";
import { planGraph } from "../graph/planGraph.ts";
import {
  type JobContext,
  type JobModule,
  type LoadedJobs,
  loadJobs,
} from "../runtime/jobModule.ts";
import type { RealWorkWatch } from "./realWorkWatch.ts";
import type { SimTools } from "./simGraph.ts";
import { handlersFunction, handlersModule, messagePrefix } from "./simModules.ts";

/**
 * `simulate`'s `handlers` as a simulated engine runs them: the job module given, or the one
 * the function of `tools` returns, with what `around` puts around it (the trace's notes of
 * handlers that ran on after their abort), each handler watched by `watch` for real timers
 * and I/O.
 * What cannot run `graph` is a `ConfigError` that names `handlers` and says what to give: a
 * module with no kinds (`handlers: {}` got the engine's "the job module defines no job
 * kinds", which did not say which option), one that is not a module, and a graph with a kind
 * the module does not define (the engine said to add it "to the job module"). Handlers loaded
 * from a module (`handlersModule`) name it instead: "the --handlers module sim.ts defines no
 * job kinds", "the job module the function of the --handlers module sim.ts returned must be
 * an object" (they said `handlers` and "your handlers function", which `baton sim` has not). A plain handler
 * of a kind whose graph jobs have `ranks` stands in for the rank group (planning refused it
 * with `BAD_JOB`); a kind defined `{ ranks }`, which launched real processes, is refused.
 * A `ctx.need` of a kind the handlers lack fails its job saying to add a handler to where they
 * were given: the `--handlers` module (`baton sim`), the `modules.handlers` module
 * (`simulateSeeds`), or the `handlers` option of `simulate` (it said "to the job module"); a
 * kind of the graph they lack names the module too.
 *
 * @example
 * ```ts
 * yourJobs({}, tools, watch, yourGraph([job("fetch", 1)]));
 * // ConfigError: simulate: handlers defines no job kinds: give it a handler for each kind of your graph (fetch), …
 * ```
 */
export function yourJobs(
  handlers: JobModule | ((tools: SimTools) => JobModule),
  tools: SimTools,
  watch: RealWorkWatch,
  { kinds, rankKinds }: YourGraph,
  around: (module: JobModule) => JobModule = (module) => module,
  contextOf?: (ctx: JobContext) => JobContext,
): LoadedJobs {
  const made = typeof handlers === "function";
  const module: unknown = made ? handlers(tools) : handlers;
  /** The module they were loaded from, as a kind the graph or a `ctx.need` lacks names it. */
  const source = handlersModule(handlers);
  const maker = handlersFunction(handlers);
  const what = made ? `the job module ${maker} returned` : "handlers";
  /** What messages about the job module name: the module it came from, if any. */
  const named = source ?? what;
  const says = messagePrefix(handlers);
  const listed = kinds.length > 0 ? ` (${kinds.join(", ")})` : "";
  // An async handlers function: its Promise has no keys, and was said to define no job kinds.
  if (module instanceof Promise) {
    throw new ConfigError(
      `${says}${maker} returned a Promise: it must return the job module itself${listed}, as the simulation starts each coordinator at a point in virtual time (leave out async, and await inside the handlers)`,
    );
  }
  if (module === null || typeof module !== "object") {
    throw new ConfigError(
      `${says}${what} must be an object mapping each kind of your graph${listed} to its handler, not ${module === null ? "null" : typeof module}`,
    );
  }
  if (Object.keys(module).length === 0) {
    throw new ConfigError(
      `${says}${named} defines no job kinds: give it a handler for each kind of your graph${listed}, e.g. { ${kinds[0] ?? "fetch"}: async (input, ctx) => … }`,
    );
  }
  refuseRankLaunches(module as JobModule, named, says);
  let jobs: LoadedJobs;
  try {
    jobs = loadJobs(watch.wrap(around(module as JobModule), contextOf));
  } catch (error) {
    if (error instanceof JobModuleError) {
      throw new ConfigError(`${says}${named}: ${error.message}`, { cause: error });
    }
    throw error;
  }
  const missing = kinds.filter((kind) => jobs.versionOf(kind) === undefined);
  if (missing.length > 0) {
    throw new ConfigError(
      `${says}your graph has jobs of kind ${missing.join(", ")}, which ${named} does not define (it defines ${jobs.kinds.join(", ")}${didYouMeanEach(missing, jobs.kinds)}): add a handler for each, or fix the kind`,
    );
  }
  // A plain handler of a kind whose jobs have `ranks` stands in for the group it would launch;
  // one of a kind only `ctx.need` adds may or may not (its needed jobs were refused, saying
  // to define the kind as { ranks }, which the simulation refuses).
  return {
    ...jobs,
    // A `ctx.need` of a kind they lack says where to add it (the engine's "the job module").
    name: source ?? "the handlers option of simulate",
    launchesRanks: (kind) =>
      rankKinds.has(kind) ? true : kinds.includes(kind) ? false : undefined,
  };
}

/**
 * Refuses a kind defined `{ ranks }`: its handler would launch a real rank group (real
 * processes, real files under the state dir) from inside virtual time, which hung the seed
 * until its liveness bound. The simulation takes a plain handler for it instead.
 */
function refuseRankLaunches(module: JobModule, what: string, says: string): void {
  const launching = Object.entries(module).find(
    ([, entry]) =>
      entry !== null &&
      typeof entry === "object" &&
      typeof Reflect.get(entry, "ranks") === "function",
  );
  if (launching === undefined) return;
  const [kind] = launching;
  throw new ConfigError(
    `${says}${what} defines kind "${kind}" as { ranks }, which launches real processes, and the simulation starts none: give a plain handler that stands in for the group instead, e.g. ${kind}: async (input, ctx) => { await sleep(60_000); return { worldSize: ctx.job.ranks } } (its jobs keep their ranks option; what it returns is the job's result, and a throw fails the job as a failing rank does)`,
  );
}

/** What the simulation knows of a graph of your own before it runs it (see `yourGraph`). */
export interface YourGraph {
  /** Its jobs, the roots and what they run after, as planning merges them. */
  jobs: number;
  /** The kinds of its jobs, in the order planning meets them. */
  kinds: string[];
  /** The kinds whose jobs have `ranks`: their plain handlers stand in for their groups. */
  rankKinds: Set<string>;
}

/**
 * Plans `graph` once, as the engine will: its jobs and their kinds. A graph the engine refuses
 * (a cycle, a bad job), which it does with a message of its own, counts its roots and no kinds.
 *
 * @example
 * ```ts
 * yourGraph([job("parse", null, { after: [job("fetch", 1)] })]);
 * // { jobs: 2, kinds: ["fetch", "parse"], rankKinds: Set {} }
 * ```
 */
export function yourGraph(graph: readonly JobSpec[]): YourGraph {
  try {
    const jobs = [...planGraph(graph, { versionOf: () => "0" }).jobs.values()];
    return {
      jobs: jobs.length,
      kinds: [...new Set(jobs.map((job) => job.kind))],
      rankKinds: new Set(jobs.filter((job) => job.ranks !== undefined).map((job) => job.kind)),
    };
  } catch (error) {
    if (error instanceof GraphError) return { jobs: graph.length, kinds: [], rankKinds: new Set() };
    throw error;
  }
}
