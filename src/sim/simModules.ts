import { fileURLToPath } from "node:url";
import { ConfigError } from "../errors.ts";
import { graphOf, importUserModule } from "../runtime/userModule.ts";
import { whatHandlersAreNot } from "./checkSimulateOptions.ts";
import type { SimulateOptions } from "./simulate.ts";

/**
 * A graph of your own and its handlers given as the paths of their modules (`baton sim
 * GRAPH.ts --handlers SIM.ts`): plain data a seed thread can be handed, where the graph and
 * handlers themselves (functions) cannot cross threads. Each thread imports them itself.
 */
export interface SimModules {
  /**
   * A graph module, as `baton run` takes it (its default export: the jobs): a path from the
   * working directory, or a `file:` URL (`new URL("./graph.ts", import.meta.url).href`, beside
   * the test that names it).
   */
  graph: string;
  /**
   * A module whose default export is `simulate`'s `handlers`: a function of the tools, or a job
   * module. A path or a `file:` URL, as `graph`.
   */
  handlers: string;
}

/**
 * `SimModules` as `baton sim` gives them (`handlersFlag`): what a seed says of its handlers
 * names the flag, where a program's `modules` are named `modules.handlers`. Plain data too,
 * handed to each seed thread with the rest.
 */
export interface FlaggedSimModules extends SimModules {
  handlersFlag?: "--handlers" | undefined;
}

/** What a thread has loaded, by module paths: a range imports and builds them once per thread. */
const loaded = new Map<string, Promise<Required<Pick<SimulateOptions, "graph" | "handlers">>>>();

/** The handlers a thread loaded, and the modules (and flag) they came from. */
const loadedFrom = new WeakMap<object, FlaggedSimModules>();

/**
 * How messages name the module `handlers` were loaded from (`the --handlers module sim.ts`,
 * `the modules.handlers module sim.ts`), or undefined for handlers given in code.
 *
 * @example
 * ```ts
 * const { handlers } = await loadSimModules({ graph: "g.ts", handlers: "sim.ts" });
 * handlersModule(handlers); // "the modules.handlers module sim.ts"
 * ```
 */
export function handlersModule(handlers: object): string | undefined {
  const from = loadedFrom.get(handlers);
  return from && `the ${from.handlersFlag ?? "modules.handlers"} module ${from.handlers}`;
}

/**
 * How messages name the function `handlers` is: `the function of the --handlers module sim.ts`
 * for one loaded from a module (`handlersModule`), else `your handlers function`.
 *
 * @example
 * ```ts
 * handlersFunction(({ sleep }) => ({ fetch: () => sleep(1) })); // "your handlers function"
 * ```
 */
export function handlersFunction(handlers: object): string {
  const source = handlersModule(handlers);
  return source === undefined ? "your handlers function" : `the function of ${source}`;
}

/**
 * How a refusal of `handlers` begins: with the library's function (`simulate: `), or with
 * nothing for handlers `baton sim` loaded (`--handlers`), whose errors the command prints
 * after its own name (it read `baton sim: simulate: seed 1: …`).
 *
 * @example
 * ```ts
 * messagePrefix({ fetch: async () => 1 }); // "simulate: "
 * ```
 */
export function messagePrefix(handlers: object): string {
  return loadedByCommand(handlers) ? "" : "simulate: ";
}

/**
 * Whether `baton sim` loaded `handlers` (`--handlers`): its messages name its flags
 * (`--until T`), not `simulate`'s options (`until`).
 */
export function loadedByCommand(handlers: object | undefined): boolean {
  return handlers !== undefined && loadedFrom.get(handlers)?.handlersFlag !== undefined;
}

/**
 * The graph and handlers the modules of `modules` export, imported once per thread. A path
 * that does not exist is a `MODULE_NOT_FOUND`, a graph module that exports no graph a
 * `NO_GRAPH`, and a handlers module whose default export is neither a function nor a job
 * module a `ConfigError` saying what to export.
 *
 * @example
 * ```ts
 * const { graph, handlers } = await loadSimModules({ graph: "g.ts", handlers: "sim.ts" });
 * await simulate({ seed: 1, graph, handlers });
 * ```
 */
export function loadSimModules(
  modules: FlaggedSimModules,
): Promise<Required<Pick<SimulateOptions, "graph" | "handlers">>> {
  const key = JSON.stringify([modules.graph, modules.handlers]);
  let load = loaded.get(key);
  if (load === undefined) {
    load = importSimModules(modules);
    loaded.set(key, load);
    // A failed load is tried again next time (the file may be fixed between two calls).
    load.catch(() => loaded.delete(key));
  }
  return load;
}

/**
 * The path a module is given by: a `file:` URL as its path (a test names modules beside it
 * with `import.meta.url`, which was looked for as a file named `file:` in the working directory).
 */
function pathOf(module: string): string {
  return module.startsWith("file:") ? fileURLToPath(module) : module;
}

/**
 * Imports both modules, and checks the handlers before the graph is built: a graph function
 * is called, so a handlers module given as the graph (the two swapped) would be called
 * without the tools and throw, where the handlers module's list of jobs says what happened.
 */
async function importSimModules(modules: FlaggedSimModules) {
  const graphModule = await importUserModule(pathOf(modules.graph));
  const handlers = (await importUserModule(pathOf(modules.handlers))).default;
  const notHandlers = whatHandlersAreNot(handlers);
  if (notHandlers !== undefined) {
    const swapped =
      Array.isArray(handlers) && typeof graphModule.default === "function"
        ? `; ${modules.graph}, given as the graph, exports a function (the handlers?): were the two swapped? baton sim ${modules.handlers} --handlers ${modules.graph}`
        : "";
    throw new ConfigError(
      `${modules.handlers} exports no handlers: give it \`export default ({ sleep, now, random }) => ({ kind: async (input, ctx) => …, … })\`, the handlers simulate takes (README: Simulation), not ${notHandlers}${swapped}`,
    );
  }
  const graph = await graphOf(graphModule, pathOf(modules.graph));
  loadedFrom.set(handlers as object, modules);
  return { graph, handlers: handlers as NonNullable<SimulateOptions["handlers"]> };
}
