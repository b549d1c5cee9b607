import { ConfigError, GraphError, JobModuleError } from "../errors.ts";
import type { JobSpec } from "../graph/job.ts";
import { planGraph } from "../graph/planGraph.ts";
import { type JobModule, type LoadedJobs, loadJobs } from "../runtime/jobModule.ts";
import type { RealWorkWatch } from "./realWorkWatch.ts";
import type { SimTools } from "./simGraph.ts";

/**
 * `simulate`'s `handlers` as a simulated engine runs them: the job module given, or the one
 * the function of `tools` returns, each handler watched by `watch` for real timers and I/O.
 * What cannot run `graph` is a `ConfigError` that names `handlers` and says what to give: a
 * module with no kinds (`handlers: {}` got the engine's "the job module defines no job
 * kinds", which did not say which option), one that is not a module, and a graph with a kind
 * the module does not define (the engine said to add it "to the job module").
 *
 * @example
 * ```ts
 * yourJobs({}, tools, watch, [job("fetch", 1)]);
 * // ConfigError: simulate: handlers defines no job kinds: give it a handler for each kind of your graph (fetch), …
 * ```
 */
export function yourJobs(
  handlers: JobModule | ((tools: SimTools) => JobModule),
  tools: SimTools,
  watch: RealWorkWatch,
  graph: readonly JobSpec[],
): LoadedJobs {
  const made = typeof handlers === "function";
  const module: unknown = made ? handlers(tools) : handlers;
  const what = made ? "the job module your handlers function returned" : "handlers";
  const kinds = graphKinds(graph);
  const listed = kinds.length > 0 ? ` (${kinds.join(", ")})` : "";
  if (module === null || typeof module !== "object") {
    throw new ConfigError(
      `simulate: ${what} must be an object mapping each kind of your graph${listed} to its handler, not ${module === null ? "null" : typeof module}`,
    );
  }
  if (Object.keys(module).length === 0) {
    throw new ConfigError(
      `simulate: ${what} defines no job kinds: give it a handler for each kind of your graph${listed}, e.g. { ${kinds[0] ?? "fetch"}: async (input, ctx) => … }`,
    );
  }
  let jobs: LoadedJobs;
  try {
    jobs = loadJobs(watch.wrap(module as JobModule));
  } catch (error) {
    if (error instanceof JobModuleError) {
      throw new ConfigError(`simulate: ${what}: ${error.message}`, { cause: error });
    }
    throw error;
  }
  const missing = kinds.filter((kind) => jobs.versionOf(kind) === undefined);
  if (missing.length > 0) {
    throw new ConfigError(
      `simulate: your graph has jobs of kind ${missing.join(", ")}, which ${what} does not define (it defines ${jobs.kinds.join(", ")}): add a handler for each, or fix the kind`,
    );
  }
  return jobs;
}

/**
 * The kinds of `graph`'s jobs, in the order planning meets them; none for a graph the engine
 * refuses (a cycle, a bad job), which it does with a message of its own.
 */
function graphKinds(graph: readonly JobSpec[]): string[] {
  try {
    const plan = planGraph(graph, { versionOf: () => "0" });
    return [...new Set([...plan.jobs.values()].map((job) => job.kind))];
  } catch (error) {
    if (error instanceof GraphError) return [];
    throw error;
  }
}
