import { statSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { BatonError, JobModuleError } from "../errors.ts";
import type { JobSpec } from "../graph/job.ts";
import { type JobModule, type LoadedJobs, loadJobs } from "./jobModule.ts";
import { moduleSource } from "./moduleSource.ts";

/**
 * Imports a user module (TypeScript or JavaScript) by path, with errors that name the file
 * (one that does not exist or is a directory is a `MODULE_NOT_FOUND`).
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
    throw new BatonError("MODULE_NOT_FOUND", `${path} does not exist (looked at ${absolute})`);
  }
  if (stats.isDirectory()) {
    throw new BatonError(
      "MODULE_NOT_FOUND",
      `${path} is a directory (${absolute}); give the path of the module file in it`,
    );
  }
  try {
    const namespace = await importModule(pathToFileURL(absolute).href);
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
    if ((error as NodeJS.ErrnoException).code === "EACCES") {
      throw Object.assign(error as Error, { syscall: "read" });
    }
    let message = (error as Error).message ?? String(error);
    // `require("baton")` from a CommonJS module: the command's own module hook does not
    // reach require, so baton must be installed beside the module.
    if (message.startsWith("Cannot find module 'baton'")) {
      message = `it imports baton, which is not installed where it can find it; install it there (npm install /path/to/baton), or make its folder an ES module package: add "type": "module" to the package.json beside ${path} (or create one holding {"type": "module"})`;
    }
    throw new BatonError("MODULE_LOAD", `could not load ${path}: ${message}${whereThrown(error)}`);
  }
}

/**
 * Imports a module of the user's by URL, with the command's module hooks (bin/registerHooks.mjs:
 * tsx for TypeScript, ES module or CommonJS, and its `import "baton"` resolved to the baton
 * that runs) registered on this thread. From baton's TypeScript sources they are already
 * registered (the `baton` command when its dist/ is not current) or TypeScript loads
 * otherwise (the tests). From the compiled dist/ (the `baton` command, its handler and seed
 * threads, a program of yours run by plain `node`) they are registered here, before the
 * thread's first module of the user's and after baton's own, which they leave alone: tsx's
 * hooks, once registered, see every module the thread loads.
 */
async function importModule(url: string): Promise<Record<string, unknown>> {
  if (!import.meta.url.endsWith(".ts")) {
    hooksRegistered ??= import(HOOKS).then((hooks) => hooks.registerHooks(true));
    await hooksRegistered;
  }
  return (await import(url)) as Record<string, unknown>;
}

const HOOKS = new URL("../../bin/registerHooks.mjs", import.meta.url).href;
let hooksRegistered: Promise<void> | undefined;

/**
 * The graph a graph module exports: `export default [job(...), …]` (or one job, or a
 * function returning either, possibly async), or the same as a named export `graph`.
 */
export async function graphOf(module: Record<string, unknown>, path: string): Promise<JobSpec[]> {
  let graph = module.default ?? module.graph;
  if (typeof graph === "function") {
    try {
      graph = await (graph as () => unknown)();
    } catch (error) {
      // A baton error the graph function throws (a ConfigError) already says what to do.
      if (error instanceof BatonError) throw error;
      throw new BatonError(
        "GRAPH_FUNCTION",
        `the graph function ${path} exports threw: ${(error as Error)?.message ?? String(error)}${whereThrown(error)}`,
      );
    }
  }
  if (graph === undefined) {
    throw new BatonError(
      "NO_GRAPH",
      `${path} exports no graph: add \`export default [job("kind", input), …]\``,
    );
  }
  // A job module given where the graph goes (`baton run jobs.ts`): its handlers are no job.
  if (typeof graph === "object" && graph !== null && !Array.isArray(graph) && !("kind" in graph)) {
    throw new BatonError(
      "NO_GRAPH",
      `${path} exports no graph: its export is neither a job nor a list of jobs (a job module? give the graph module, and this file as --jobs)`,
    );
  }
  return (Array.isArray(graph) ? graph : [graph]) as JobSpec[];
}

/**
 * The job module a module exports: a named export `jobs`, or the default export when it
 * is an object of handlers (a job module file). A graph module without one is told how to
 * export it or where else to find it (a graph: a list of jobs, one job, or a named `graph`);
 * any other file, how to export one.
 */
export function jobsOf(module: Record<string, unknown>, path: string): JobModule {
  const fallback = module.default;
  const isGraph =
    Array.isArray(fallback) ||
    (typeof fallback === "object" && fallback !== null && "after" in fallback);
  const jobs = module.jobs ?? (isGraph ? undefined : fallback);
  if (jobs === null || typeof jobs !== "object" || Array.isArray(jobs)) {
    const graphModule = isGraph || module.graph !== undefined;
    throw new JobModuleError(
      graphModule
        ? `${path} exports a graph but no job module: export its handlers from it too (\`export { default as jobs } from "./jobs.ts"\`, or \`export const jobs = { kind: handler, … }\`), or give the job module's file as --jobs`
        : `${path} exports no job module: make its default export the handlers (\`export default defineJobs({ kind: handler, … })\`), or export them as \`jobs\``,
    );
  }
  return jobs as JobModule;
}

/**
 * Where `error` was thrown in the user's code (its first stack frame outside Node and baton).
 *
 * @example
 * ```ts
 * whereThrown(new TypeError("x is undefined")); // " (at /home/me/sim.ts:3:27)"
 * ```
 */
export function whereThrown(error: unknown): string {
  const frames = ((error as Error)?.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line));
  const user = frames.find((line) => !/node:|node_modules|\/src\/cli\//.test(line));
  const at = user?.trim().replace(/^at (?:.* \()?(.*?)\)?$/, "$1");
  return at ? ` (at ${at})` : "";
}

/**
 * The job module of the file `path` (`baton worker --jobs FILE`), imported, checked and
 * prepared, its code hash taken over the file and the local files it imports.
 *
 * @example
 * ```ts
 * const jobs = await loadJobsFile("examples/pipeline.jobs.ts");
 * jobs.kinds; // ["count", "fetch", "merge", …]
 * ```
 */
export async function loadJobsFile(path: string): Promise<LoadedJobs> {
  return loadJobs(jobsOf(await importUserModule(path), path), moduleSource(path));
}
