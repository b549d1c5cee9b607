import { statSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { BatonError, JobModuleError, ModuleLoadError } from "../errors.ts";
import type { JobSpec } from "../graph/job.ts";
import { commonJsExports, isGraph } from "./commonJsExports.ts";
import { type JobModule, type LoadedJobs, loadJobs } from "./jobModule.ts";
import { moduleLoadFailure } from "./moduleLoadFailure.ts";
import { moduleSource } from "./moduleSource.ts";
import { nearestFile } from "./nearestFile.ts";
import { whereThrown } from "./whereThrown.ts";

/**
 * Imports a user module (TypeScript or JavaScript) by path; a `ModuleLoadError` when it does
 * not load, naming the file at fault, the module or one it imports (one that does not exist
 * or is a directory is a `MODULE_NOT_FOUND`; the others: `moduleLoadFailure`).
 *
 * @example
 * ```ts
 * const mod = await importUserModule("examples/pipeline.graph.ts");
 * ```
 */
export async function importUserModule(path: string): Promise<Record<string, unknown>> {
  const absolute = resolve(path);
  const stats = statSync(absolute, { throwIfNoEntry: false });
  if (stats === undefined) {
    throw new ModuleLoadError(
      "MODULE_NOT_FOUND",
      `${path} does not exist (looked at ${absolute})${nearestFile(path)}`,
      { file: absolute },
    );
  }
  if (stats.isDirectory()) {
    throw new ModuleLoadError(
      "MODULE_NOT_FOUND",
      `${path} is a directory (${absolute}); give the path of the module file in it`,
      { file: absolute },
    );
  }
  try {
    const namespace = await importModule(absolute);
    // A TypeScript module in a CommonJS package (no "type": "module") is compiled to
    // CommonJS: its exports arrive as the default export, marked by the compiler.
    const compiled = namespace.default as { __esModule?: unknown } | undefined;
    if (typeof compiled === "object" && compiled !== null && compiled.__esModule === true) {
      return compiled as Record<string, unknown>;
    }
    return namespace;
  } catch (error) {
    // A module (or one it imports) this user may not read: its open was to read it, which the
    // command line then says this user may not do, and whose the file is (main.ts).
    dropTwinRejection(error);
    if ((error as NodeJS.ErrnoException | undefined)?.code === "EACCES") {
      throw Object.assign(error as Error, { syscall: "read" });
    }
    // `require("baton")` from a CommonJS module: the command's own module hook does not
    // reach require, so baton must be installed beside the module.
    if (((error as Error)?.message ?? "").startsWith("Cannot find module 'baton'")) {
      const commonJsOnly = /\.c[jt]s$/.exec(absolute)?.[0];
      throw new ModuleLoadError(
        "MODULE_LOAD",
        `could not load ${path}: it imports baton, which is not installed where it can find it; install it there (npm install /path/to/baton), or ${commonJsOnly === undefined ? `make its folder an ES module package: add "type": "module" to the package.json beside ${path} (or create one holding {"type": "module"})` : `make it an ES module: a ${commonJsOnly} file is CommonJS wherever it is, a ${commonJsOnly.replace("c", "m")} file an ES module`}`,
        { file: absolute },
        { cause: error },
      );
    }
    throw moduleLoadFailure(error, path, absolute);
  }
}

/**
 * Lets go of the second rejection Node 20 makes of the error a CommonJS module throws while
 * an ES module imports it (nodejs/node#51603): `import()` rejects with it, and an internal
 * promise does too, which no one handles, so the process died of the same error (exit 1, a
 * stack) after the command had said why the module did not load. The twin is dropped by
 * identity, until the next turn of the event loop (Node reports unhandled rejections before
 * it); another unhandled rejection meanwhile is thrown as Node would, unless someone else
 * listens for them.
 */
function dropTwinRejection(error: unknown): void {
  const listener = (reason: unknown) => {
    if (reason === error) return;
    if (process.listenerCount("unhandledRejection") === 1) throw reason;
  };
  process.on("unhandledRejection", listener);
  setImmediate(() => process.off("unhandledRejection", listener));
}

/**
 * Imports a module of the user's by path, with the command's module hooks (bin/registerHooks.mjs:
 * tsx for TypeScript, ES module or CommonJS, and its `import "baton"` resolved to the baton
 * that runs) registered on this thread. From baton's TypeScript sources they are already
 * registered (the `baton` command when its dist/ is not current) or TypeScript loads
 * otherwise (the tests). From the compiled dist/ (the `baton` command, its handler and seed
 * threads, a program of yours run by plain `node`) they are registered here, before the
 * thread's first module of the user's and after baton's own, which they leave alone: tsx's
 * hooks, once registered, see every module the thread loads.
 *
 * A `.cts` module is required, and its namespace made as `import()` makes a CommonJS
 * module's (`module.exports` as the default export, its properties as named ones): tsx hands
 * an imported `.cts` file to Node 20's own CommonJS translator, whose `require` cannot load
 * baton's ES modules (its `require("baton")` failed with "request for './errors.js' is not
 * in cache"); required, it loads through tsx's CommonJS loader, as a `.cjs` file does.
 */
async function importModule(absolute: string): Promise<Record<string, unknown>> {
  if (!import.meta.url.endsWith(".ts")) {
    hooksRegistered ??= import(INDEX)
      .then(() => import(HOOKS))
      .then((hooks) => hooks.registerHooks(true));
    await hooksRegistered;
  }
  if (absolute.endsWith(".cts")) {
    const exports: unknown = createRequire(import.meta.url)(absolute);
    return { ...(exports as object), default: exports };
  }
  return (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
}

const HOOKS = new URL("../../bin/registerHooks.mjs", import.meta.url).href;
/**
 * The compiled baton a user's `import "baton"` gets, loaded before the hooks are registered:
 * through them each of its modules took a round trip to tsx's hooks thread, and a graph
 * module importing baton took about six times as long to load (190 against 30 ms here, and
 * twice the CPU, the hooks thread's included); once loaded, the hooks only resolve it.
 */
const INDEX = new URL("../index.js", import.meta.url).href;
let hooksRegistered: Promise<void> | undefined;

/**
 * The graph a graph module exports: `export default [job(...), …]` (or one job, a promise of
 * either, or a function returning either, possibly async), or the same as a named export
 * `graph`; from a CommonJS module, `module.exports` or its `default` or `graph`
 * (`commonJsExports`).
 */
export async function graphOf(module: Record<string, unknown>, path: string): Promise<JobSpec[]> {
  const exported = commonJsExports(module, "graph");
  let graph = exported.default ?? exported.graph;
  const built = typeof graph === "function" ? "function" : isPromise(graph) ? "promise" : undefined;
  if (built !== undefined) {
    try {
      graph = await (built === "function" ? (graph as () => unknown)() : graph);
    } catch (error) {
      // A baton error the graph function throws (a ConfigError) already says what to do.
      if (error instanceof BatonError) throw error;
      throw new BatonError(
        "GRAPH_FUNCTION",
        `the graph ${built} ${path} exports ${built === "function" ? "threw" : "rejected"}: ${(error as Error)?.message ?? String(error)}${whereThrown(error)}`,
      );
    }
  }
  if (graph === undefined) throw noGraph(exported, path);
  // A job module given where the graph goes (`baton run jobs.ts`): its handlers are no job.
  if (typeof graph === "object" && graph !== null && !isGraph(graph)) {
    // An object of jobs (`export default { fetch, parse }`) was a graph to its author.
    const keys = Object.keys(graph);
    if (keys.length > 0 && Object.values(graph).every(isGraph)) {
      throw new BatonError(
        "NO_GRAPH",
        `${path} exports no graph: its export is an object of jobs (${firstKeys(keys)}), where a graph is a list of jobs or one job; export its values as a list (\`export default Object.values(…).flat()\`, or \`export default [${keys.length > 3 ? "…" : keys.join(", ")}]\`)`,
      );
    }
    if (isJobModuleLike(graph)) {
      throw new BatonError(
        "NO_GRAPH",
        `${path} exports no graph: its export is neither a job nor a list of jobs (a job module? give the graph module, and this file as --jobs)`,
      );
    }
    // Another object (`baton run package.json`) is no job module either: say what a graph is.
    throw new BatonError(
      "NO_GRAPH",
      `${path} exports no graph: its export is ${keys.length === 0 ? "an empty object" : `an object (${firstKeys(keys)})`}, neither a job nor a list of jobs; a graph module exports its jobs: \`export default [job("kind", input), …]\``,
    );
  }
  return (Array.isArray(graph) ? graph : [graph]) as JobSpec[];
}

/**
 * A graph module with neither a default export nor a `graph`: what to add, and the exports it
 * has, so a graph exported under a name of the author's own (`export const pipeline = […]`)
 * is named, with how to export it where baton reads it.
 */
function noGraph(exported: Record<string, unknown>, path: string): BatonError {
  const names = Object.keys(exported).filter((name) => name !== "default");
  const graphs = names.filter((name) => name !== "jobs" && isGraph(exported[name]));
  if (graphs.length > 0) {
    const [name] = graphs as [string, ...string[]];
    const which = graphs.map((name) => `\`${name}\``).join(", ");
    return new BatonError(
      "NO_GRAPH",
      `${path} exports no graph as its default export or \`graph\`, where baton reads it: its export${graphs.length === 1 ? ` ${which} is a graph` : `s ${which} are graphs`}; export the graph as the default (\`export default ${name}\`; in CommonJS, \`module.exports = ${name}\`) or name it \`graph\``,
    );
  }
  const has = names.length === 0 ? "" : ` (it exports ${names.join(", ")})`;
  return new BatonError(
    "NO_GRAPH",
    `${path} exports no graph${has}: add \`export default [job("kind", input), …]\` (in CommonJS, \`module.exports = [job("kind", input), …]\`)`,
  );
}

/** The first three of `keys`, and `…` for the rest. */
function firstKeys(keys: readonly string[]): string {
  return `${keys.slice(0, 3).join(", ")}${keys.length > 3 ? ", …" : ""}`;
}

/** A promise (any thenable), such as an async function's result exported as the graph. */
function isPromise(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * The job module a module exports: a named export `jobs`, or the default export when it
 * is an object of handlers (a job module file); from a CommonJS module, `module.exports` or
 * its `jobs` or `default` (`commonJsExports`). A module compiled to CommonJS given as `jobs`
 * (`export { default as jobs } from "./jobs.ts"` where jobs.ts is CommonJS) gives its
 * default export, as TypeScript reads such an import. A graph module without one is told
 * how to export it or where else to find it (a graph: a list of jobs, one job, or a named
 * `graph`); any other file, how to export one.
 */
export function jobsOf(module: Record<string, unknown>, path: string): JobModule {
  const exported = commonJsExports(module, "jobs");
  const fallback = exported.default;
  const isGraphModule = isGraph(fallback);
  const jobs = compiledDefault(exported.jobs ?? (isGraphModule ? undefined : fallback));
  if (jobs === null || typeof jobs !== "object" || Array.isArray(jobs)) {
    const graphModule = isGraphModule || exported.graph !== undefined;
    // Handlers exported one by one (`export function fetch`) are no kinds: a module's other
    // exports (helpers, constants) would be.
    const named = Object.keys(exported).filter(
      (key) => key !== "default" && typeof exported[key] === "function",
    );
    const kinds = named.length > 0 ? named.join(", ") : "kind: handler, …";
    if (exported.jobs !== undefined) {
      throw new JobModuleError(
        `${path} exports jobs as ${whatItIs(jobs)}, where a job module is the object of handlers itself: export that object as jobs (\`export const jobs = { kind: handler, … }\`)${graphModule ? ", or give the job module's file as --jobs" : ""}`,
      );
    }
    // Handlers exported under another name (`export const handlers = { … }`) were the job
    // module to their author: name the export, as noGraph names a graph exported so.
    const elsewhere = Object.keys(exported).filter(
      (key) => key !== "default" && isJobModuleLike(exported[key]),
    );
    if (elsewhere.length > 0) {
      const [name] = elsewhere as [string, ...string[]];
      throw new JobModuleError(
        `${path} exports no job module as its default export or jobs, where baton reads it: ${elsewhere.length === 1 ? `its export ${name} is an object` : `its exports ${elsewhere.join(", ")} are objects`} of handlers; export ${elsewhere.length === 1 ? "it" : "one"} as jobs (\`export { ${name} as jobs }\`${graphModule ? "" : `, or \`export default ${name}\``})`,
      );
    }
    throw new JobModuleError(
      graphModule
        ? `${path} exports a graph but no job module: export its handlers from it too (\`export { default as jobs } from "./jobs.ts"\`, or \`export const jobs = { kind: handler, … }\`), or give the job module's file as --jobs`
        : `${path} exports no job module${defaultExportIsNot(fallback)}${named.length > 0 ? ` (its named exports ${named.join(", ")} are not read as kinds)` : ""}: make its default export the handlers (\`export default defineJobs({ ${kinds} })\`; in CommonJS, \`module.exports = { ${kinds} }\`), or export them as \`jobs\``,
    );
  }
  return jobs as JobModule;
}

/**
 * Whether `module` exports a job module where a graph module exports its graph (its default
 * export or `graph`): a job module given where the graph goes (`baton sim pipeline.jobs.ts`).
 *
 * @example
 * ```ts
 * exportsJobModuleAsGraph(await importUserModule("pipeline.jobs.ts")); // true
 * ```
 */
export function exportsJobModuleAsGraph(module: Record<string, unknown>): boolean {
  const exported = commonJsExports(module, "graph");
  return isJobModuleLike(exported.default ?? exported.graph);
}

/**
 * Whether `value` looks like a job module: an object, not a graph, whose entries are all
 * handlers (a function, or a definition with a `run` or `ranks` function).
 */
function isJobModuleLike(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Array.isArray(value) || isGraph(value)) {
    return false;
  }
  const entries = Object.values(value);
  return (
    entries.length > 0 &&
    entries.every((entry) => {
      if (typeof entry === "function") return true;
      const definition = entry as { run?: unknown; ranks?: unknown } | null;
      return typeof definition?.run === "function" || typeof definition?.ranks === "function";
    })
  );
}

/** What a value that is no object of handlers is, for a person: "a function", "a list", … */
function whatItIs(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (value === null) return "null";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * What a default export that is no job module is, for a person, else "" (none, or an object):
 * a function, as a graph function or the handlers `baton sim --handlers` takes (a function of
 * its tools) are, given as `--jobs`, where a job module is the object of handlers itself.
 *
 * @example
 * ```ts
 * defaultExportIsNot(({ sleep }) => ({})); // " (its default export is a function, as a graph function or …)"
 * ```
 */
function defaultExportIsNot(exported: unknown): string {
  if (typeof exported === "function") {
    return " (its default export is a function, as a graph function or the handlers of baton sim --handlers are, where a job module is the object of handlers itself)";
  }
  return exported === undefined || typeof exported === "object"
    ? ""
    : ` (its default export is a ${typeof exported})`;
}

/** The default export of a module compiled to CommonJS (marked `__esModule`), else `value`. */
function compiledDefault(value: unknown): unknown {
  const compiled = value as { __esModule?: unknown; default?: unknown } | null | undefined;
  return compiled?.__esModule === true && compiled.default !== undefined ? compiled.default : value;
}

/** A job module loaded from its file, with the source its code hash was taken over. */
export interface LoadedJobsFile extends LoadedJobs {
  /**
   * `moduleSource(path)` as read at load: the file's text and that of the local files it
   * imports. A worker compares it with the files later to tell whether they changed since.
   */
  readonly source: string;
}

/**
 * The job module of the file `path` (`baton worker --jobs FILE`), imported, checked and
 * prepared, its code hash taken over the file and the local files it imports, read once.
 *
 * @example
 * ```ts
 * const jobs = await loadJobsFile("examples/pipeline.jobs.ts");
 * jobs.kinds; // ["count", "fetch", "merge", …]
 * ```
 */
export async function loadJobsFile(path: string): Promise<LoadedJobsFile> {
  const module = jobsOf(await importUserModule(path), path);
  const source = moduleSource(path);
  return { ...loadJobs(module, source), source };
}
