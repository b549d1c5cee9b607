import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { JobModuleError } from "../errors.ts";
import type { JobSpec, Json } from "../graph/job.ts";
import { preview } from "../graph/label.ts";
import { checkJobDefinition } from "./checkJobDefinition.ts";
import { type RankLaunch, runRankJob } from "./rankJob.ts";

/** What a handler can do besides computing its result. */
export interface JobContext {
  /** This job's id, kind, attempt number (from 1) and, for a rank job, its number of ranks. */
  readonly job: {
    readonly id: string;
    readonly kind: string;
    readonly attempt: number;
    readonly ranks?: number | undefined;
  };
  /**
   * Results of the jobs this one runs after, in the order of `after`. Once a `ctx.need` has
   * stopped the job, the attempts after it also get the results of the needed jobs and of the jobs
   * they run after (each after its dependencies'), following these: read a needed job's value
   * from what `need` returns.
   */
  readonly results: readonly Json[];
  /** The same results, by job id. */
  readonly deps: Readonly<Record<string, Json>>;
  /**
   * Aborted when the run is cancelled, the attempt runs past its `timeoutMs`, or the worker's
   * connection to the coordinator closes; its `reason` says which.
   */
  readonly signal: AbortSignal;
  /**
   * Reports progress; shown by the CLI and emitted by `Run`. It takes an object of these
   * alone: anything else, such as `ctx.progress(0.5)`, is a `ConfigError` that fails the
   * attempt, not retried.
   */
  progress(update: {
    done?: number | undefined;
    total?: number | undefined;
    message?: string | undefined;
  }): void;
  readonly log: Logger;
  /**
   * Results of jobs discovered while running. When they are all done, returns their values;
   * otherwise the handler stops here, the jobs join the graph and this job runs again
   * after them (so code before `need` must be safe to repeat).
   */
  need<const Specs extends readonly JobSpec<unknown>[]>(...jobs: Specs): NeededValues<Specs>;
}

/** The values `ctx.need` gives, one per job, typed as the jobs are (see `jobBuilder`). */
export type NeededValues<Specs extends readonly JobSpec<unknown>[]> = {
  -readonly [I in keyof Specs]: Specs[I] extends JobSpec<infer Value> ? Value : never;
};

/** A handler: takes the job's input and a context, returns (or resolves to) a JSON value. */
// biome-ignore lint/suspicious/noExplicitAny: inputs are typed by the user's handler signature
export type Handler = (input: any, ctx: JobContext) => unknown;

/** A handler with a version: bump it when the handler's output changes, to recompute. */
export interface HandlerDefinition {
  run: Handler;
  version?: string | undefined;
  /** The `timeoutMs` of every job of this kind that does not set its own. */
  timeoutMs?: number | undefined;
}

/**
 * A rank job's handler: what each rank of the job's group runs, as argv or a `RankLaunch`.
 * The worker that leases the job launches the group (the job's `ranks` option is its size)
 * and the group's outcome is the job's result; see `runRankJob`.
 */
export interface RankJobDefinition {
  // biome-ignore lint/suspicious/noExplicitAny: inputs are typed by the user's handler signature
  ranks: (input: any, ctx: JobContext) => RankLaunch | readonly string[];
  version?: string | undefined;
  /** The `timeoutMs` of every job of this kind that does not set its own. */
  timeoutMs?: number | undefined;
}

/** A job module: kind → handler. */
export type JobModule = Readonly<Record<string, Handler | HandlerDefinition | RankJobDefinition>>;

/**
 * Declares a job module; the identity function, there for types and editor help.
 *
 * @example
 * ```ts
 * export default defineJobs({
 *   double: (n: number) => n * 2,
 *   fetch: {
 *     version: "2",
 *     timeoutMs: 30_000,
 *     run: async (url: string, ctx) => (await fetch(url, { signal: ctx.signal })).text(),
 *   },
 * });
 * ```
 */
export function defineJobs<T extends JobModule>(module: T & OnlyDefinitionKeys<T>): T {
  return module;
}

/**
 * A job module whose definitions have no key a definition does not take: `defineJobs`'s
 * generic parameter escapes the compiler's excess property check, so each other key is typed
 * as `NotADefinitionKey`, which no value is, and the compiler's error names it.
 */
type OnlyDefinitionKeys<T> = {
  [Kind in keyof T]: T[Kind] extends Handler
    ? T[Kind]
    : {
        [Key in Exclude<
          keyof T[Kind],
          T[Kind] extends { run: unknown } ? keyof HandlerDefinition : keyof RankJobDefinition
        >]: NotADefinitionKey;
      };
};

/** What a key a definition does not take must be: a sentence saying so, as a property no value has. */
interface NotADefinitionKey {
  "is not a key of a job definition, which takes run (or ranks), version and timeoutMs; a job's options (requires, retries, ranks, …) go to job(kind, input, { … })": never;
}

/**
 * Why `module` is a module namespace rather than the job module its default export is: an
 * `import * as jobs` of a file that `export default`s its handlers, passed as `jobs`, has a
 * kind "default" whose definition is the job module itself (it was refused as a definition
 * with an unknown option named after the first kind). A kind "default" with a `run` or a
 * `ranks` is a kind like any other.
 */
function nestedModule(module: object): string | undefined {
  const inner: unknown = (module as Record<string, unknown>).default;
  if (inner === null || typeof inner !== "object" || "run" in inner || "ranks" in inner) {
    return undefined;
  }
  const kinds = Object.keys(inner);
  return `the job module's kind "default" is itself a job module (of ${kinds.length === 0 ? "no kinds" : kinds.join(", ")}): a module namespace (import * as jobs) was given; give its default export instead (import jobs from "./jobs.js", or jobs.default)`;
}

/** A job module checked once and ready to serve: handlers, versions and a code hash. */
export interface LoadedJobs {
  handler(kind: string): Handler | undefined;
  versionOf(kind: string): string | undefined;
  /** The kind's default `timeoutMs`, if its definition sets one. */
  timeoutOf(kind: string): number | undefined;
  /**
   * Whether the kind launches rank groups (`{ ranks }`): its jobs need the `ranks` option;
   * `undefined` when its jobs may have it or not (a simulation's handler for a kind its graph
   * has no job of, which stands in for a group only if the job has ranks).
   */
  launchesRanks(kind: string): boolean | undefined;
  readonly kinds: readonly string[];
  /**
   * What a `ctx.need` of a kind the module lacks tells to add a handler to (default "the job
   * module"): a simulation's names where its handlers were given.
   */
  readonly name?: string | undefined;
  /** Identifies the code: workers with a different hash are refused by the coordinator. */
  readonly codeHash: string;
}

/**
 * Checks a job module's shape and prepares it. `source` is what the code hash is taken
 * over (`moduleSource(file)` when loaded from a file: its text and that of the local files
 * it imports; the handlers' source otherwise).
 *
 * @example
 * ```ts
 * const jobs = loadJobs({ double: (n: number) => n * 2 });
 * jobs.versionOf("double"); // "0"
 * ```
 */
export function loadJobs(module: unknown, source?: string): LoadedJobs {
  if (module === null || typeof module !== "object" || Array.isArray(module)) {
    throw new JobModuleError(
      `a job module must export an object mapping each job kind to a handler function (or { run, version }), not ${Array.isArray(module) ? "an array, whose indexes would be its kinds" : preview(module)}`,
    );
  }
  const nested = nestedModule(module);
  if (nested !== undefined) throw new JobModuleError(nested);
  const handlers = new Map<string, Handler>();
  const versions = new Map<string, string>();
  const timeouts = new Map<string, number>();
  /** What the code hash covers for kinds whose handler baton made (rank jobs). */
  const sources = new Map<string, string>();
  for (const [kind, entry] of Object.entries(module)) {
    if (typeof entry === "function") {
      handlers.set(kind, entry as Handler);
      versions.set(kind, "0");
    } else if (entry !== null && typeof entry === "object" && !Array.isArray(entry)) {
      checkJobDefinition(kind, entry);
      if (
        typeof (entry as HandlerDefinition).run !== "function" &&
        typeof (entry as RankJobDefinition).ranks !== "function"
      ) {
        throw new JobModuleError(
          `job kind "${kind}" must be a handler function, { run, version } or { ranks, version }: its definition has no run function`,
        );
      }
      if (entry.version !== undefined && typeof entry.version !== "string") {
        throw new JobModuleError(`the version of job kind "${kind}" must be a string`);
      }
      const timeoutMs: unknown = entry.timeoutMs;
      if (timeoutMs !== undefined) {
        if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
          throw new JobModuleError(
            `the timeoutMs of job kind "${kind}" must be a finite number of milliseconds > 0, not ${String(timeoutMs)}`,
          );
        }
        timeouts.set(kind, timeoutMs);
      }
      if (typeof (entry as RankJobDefinition).ranks === "function") {
        const launch = (entry as RankJobDefinition).ranks;
        handlers.set(kind, (input, ctx) => {
          const declared = launch(input, ctx);
          return runRankJob(
            Array.isArray(declared) ? { argv: declared } : (declared as RankLaunch),
            ctx,
          );
        });
        sources.set(kind, String(launch));
      } else {
        handlers.set(kind, entry.run);
      }
      versions.set(kind, entry.version ?? "0");
    } else {
      throw new JobModuleError(
        `job kind "${kind}" must be a handler function, { run, version } or { ranks, version }, not ${typeof entry}`,
      );
    }
  }
  if (handlers.size === 0) {
    const proto: unknown = Object.getPrototypeOf(module);
    throw new JobModuleError(
      `the job module defines no job kinds: give an object mapping each job kind to its handler, such as { double: (n) => n * 2 }${proto === Object.prototype || proto === null ? "" : ` (the methods of a ${(module as object).constructor?.name ?? "class"} instance are its class's, not kinds of its own)`}`,
    );
  }
  const kinds = [...handlers.keys()].sort();
  const hash = createHash("sha256");
  for (const kind of kinds) hash.update(`${kind}@${versions.get(kind)}\n`);
  hash.update(source ?? kinds.map((k) => sources.get(k) ?? String(handlers.get(k))).join("\n"));
  return {
    handler: (kind) => handlers.get(kind),
    versionOf: (kind) => versions.get(kind),
    timeoutOf: (kind) => timeouts.get(kind),
    launchesRanks: (kind) => sources.has(kind),
    kinds,
    codeHash: hash.digest("hex").slice(0, 16),
  };
}
