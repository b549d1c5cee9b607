import { GraphError } from "../errors.ts";
import type { JobContext, JobModule } from "../runtime/jobModule.ts";
import type { RankJobResult } from "../runtime/rankJob.ts";
import { type JobOptions, type JobSpec, type Json, job } from "./job.ts";

/** The function of a job module's entry that takes the input: the handler, `run` or `ranks`. */
type EntryFunction<E> = E extends { run: infer F } ? F : E extends { ranks: infer F } ? F : E;

/** The input a job module's entry takes. */
type InputOf<E> = EntryFunction<E> extends (input: infer I, ctx: JobContext) => unknown ? I : never;

/** A result as the run reports it: nothing is `null`; a type that is not JSON is any JSON. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing returns void
type ResultOf<T> = [T] extends [void] ? null : [T] extends [Json] ? T : Json;

/** The value a job module's entry completes with. */
type OutputOf<E> = E extends { ranks: unknown }
  ? RankJobResult
  : EntryFunction<E> extends (...args: never[]) => infer R
    ? ResultOf<Awaited<R>>
    : Json;

/** A job's input may be left out when its handler takes none (or takes `null`). */
type InputArgs<I> = unknown extends I
  ? [input?: I, options?: JobOptions]
  : null extends I
    ? [input?: I, options?: JobOptions]
    : [input: I, options?: JobOptions];

/** `job`, typed by a job module: see `jobBuilder`. */
export type JobBuilder<M extends JobModule> = <K extends keyof M & string>(
  kind: K,
  ...args: InputArgs<InputOf<M[K]>>
) => JobSpec<OutputOf<M[K]>>;

/**
 * `job`, typed by a job module: a kind the module does not define, or an input its handler
 * does not take, is a compile error, and `result.get(spec).value` and `ctx.need(spec)` have
 * the type the handler returns (when that is JSON). At run time it also refuses a kind the
 * module does not define, with a `GraphError` (UNKNOWN_KIND) that lists the ones it does.
 *
 * @example
 * ```ts
 * const jobs = defineJobs({ double: (n: number) => n * 2 });
 * const job = jobBuilder(jobs);
 * const a = job("double", 21); // job("double", "21") and job("triple", 1) do not compile
 * const result = await createEngine({ jobs }).run([a]);
 * const value: number | undefined = result.get(a).value; // 42
 * ```
 */
export function jobBuilder<M extends JobModule>(jobs: M): JobBuilder<M> {
  return ((kind: string, input?: unknown, options?: JobOptions) => {
    if (!Object.hasOwn(jobs, kind)) {
      throw new GraphError(
        "UNKNOWN_KIND",
        `unknown job kind "${kind}": the job module defines ${Object.keys(jobs)
          .map((k) => `"${k}"`)
          .join(", ")}`,
        [kind],
      );
    }
    return job(kind, input, options);
  }) as JobBuilder<JobModule> as JobBuilder<M>;
}
