/**
 * Jobs as users write them. A job is a kind, a JSON input and options; its id is computed
 * when the graph is planned (see `planGraph`), from the kind, the canonical JSON of the
 * input, the ids of its dependencies and the handler's version.
 */

import { GraphError } from "../errors.ts";
import { checkOptionNames } from "../optionNames.ts";
import { checkJobOptions } from "./checkJobOptions.ts";
import { preview } from "./label.ts";

/** A JSON value: what inputs and results are made of. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What a job needs from a worker, or what a worker offers. `memory` is in MiB. */
export interface Resources {
  cpus?: number | undefined;
  gpus?: number | undefined;
  memory?: number | undefined;
}

/** Delay before a retry: `initialMs * factor^(failures - 1)`, capped at `maxMs`. */
export interface Backoff {
  initialMs: number;
  factor?: number | undefined;
  maxMs?: number | undefined;
}

/** How a job runs: the third argument of `job(kind, input, options)`. */
export interface JobOptions {
  /** Jobs that must complete first; their results reach the handler as `ctx.deps`. */
  after?: readonly JobSpec[] | undefined;
  /** Resources a worker must offer to take this job. */
  requires?: Resources | undefined;
  /** Failed attempts retried before the job is terminal (default 3: at most 4 attempts). */
  retries?: number | undefined;
  backoff?: Backoff | undefined;
  /**
   * Longest time one attempt may run, in ms (absent: no limit). When it is over, the
   * coordinator tells the worker to stop (the handler's AbortSignal fires) and counts the
   * attempt as failed with a `JobTimeout` error, then retries as for any failure.
   */
  timeoutMs?: number | undefined;
  /** Number of cooperating processes (a rank group); absent for an ordinary job. */
  ranks?: number | undefined;
}

/** The key of `JobSpec`'s type-only record of its result's type. */
declare const output: unique symbol;

/**
 * A job as written by a user, before planning gives it an id. `Output` is the type of the
 * value it completes with, known when it was made by a `jobBuilder`; plain JSON otherwise.
 */
export interface JobSpec<Output = Json> {
  readonly kind: string;
  readonly input: unknown;
  readonly after: readonly JobSpec[];
  readonly requires: Resources;
  readonly retries?: number | undefined;
  readonly backoff?: Backoff | undefined;
  readonly timeoutMs?: number | undefined;
  readonly ranks?: number | undefined;
  /** Type only, never set: the type of the value the job completes with. */
  readonly [output]?: Output | undefined;
}

/** A planned job: what the coordinator schedules and what crosses the wire. */
export interface PlannedJob {
  id: string;
  kind: string;
  input: Json;
  /** Ids of the jobs that must complete first. */
  deps: string[];
  requires: Resources;
  retries: number;
  backoff?: Backoff;
  timeoutMs?: number;
  ranks?: number;
}

/** Every option `job` takes (the compiler holds this to `JobOptions`). */
export const JOB_OPTIONS: Record<keyof JobOptions, true> = {
  after: true,
  requires: true,
  retries: true,
  backoff: true,
  timeoutMs: true,
  ranks: true,
};

/**
 * Makes a job. Nothing runs until the graph is handed to `engine.run`. A kind that is not a
 * non-empty string (`job(undefined, …)`, a kind read from a config key that is not there),
 * options that are not an object, a name that is no option (a typo such as `retires`, which
 * went unnoticed) or a value an option cannot take (`retries: "3"`, `timeoutMs: "30s"`,
 * `after: fetch` for `after: [fetch]`; see `checkJobOptions`) are a `GraphError` (`BAD_JOB`)
 * at once, from the call that made the job.
 *
 * @example
 * ```ts
 * const fetch = job("fetch", { url: "https://example.org" });
 * const parse = job("parse", { strict: true }, { after: [fetch], retries: 1, timeoutMs: 60_000 });
 * await engine.run([parse]); // runs fetch, then parse
 * ```
 */
export function job(kind: string, input: unknown = null, options: JobOptions = {}): JobSpec {
  if (typeof kind !== "string" || kind === "") {
    throw new GraphError(
      "BAD_JOB",
      `job(${preview(kind)}, …): the kind must be a non-empty string naming a handler of the job module, such as job("fetch", input)`,
      [String(kind)],
    );
  }
  checkOptionNames(`job(${JSON.stringify(kind)}, …)`, options, JOB_OPTIONS, {
    shape: "such as { after: [...], retries: 2 }",
    fail: (message) => new GraphError("BAD_JOB", message, [kind]),
  });
  const spec: JobSpec = {
    kind,
    input,
    after: options.after ?? [],
    requires: options.requires ?? {},
    ...(options.retries !== undefined && { retries: options.retries }),
    ...(options.backoff !== undefined && { backoff: options.backoff }),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    ...(options.ranks !== undefined && { ranks: options.ranks }),
  };
  checkJobOptions(spec);
  return spec;
}
