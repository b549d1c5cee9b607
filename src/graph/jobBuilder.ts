import { didYouMean } from "../closestName.ts";
import { GraphError } from "../errors.ts";
import { type JobContext, type JobModule, loadJobs } from "../runtime/jobModule.ts";
import type { RankJobResult } from "../runtime/rankJob.ts";
import { type JobOptions, type JobSpec, type Json, job } from "./job.ts";

/** The function of a job module's entry that takes the input: the handler, `run` or `ranks`. */
type EntryFunction<E> = E extends { run: infer F } ? F : E extends { ranks: infer F } ? F : E;

/** The input a job module's entry takes. */
type InputOf<E> = EntryFunction<E> extends (input: infer I, ctx: JobContext) => unknown ? I : never;

/**
 * A result as the run reports it: returning nothing (`undefined`, `void`) is `null`, and a
 * type that cannot be JSON (a `Date`, a `Map`, a class with methods: the attempt fails) or is
 * not known (`unknown`, `any`) is any JSON.
 */
type ResultOf<T> = unknown extends T
  ? Json
  : // biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing returns void
    [T] extends [void]
    ? null
    : JsonOf<Exclude<T, void>> | (undefined extends T ? null : never);

/**
 * A value's type as JSON: a type that is JSON as written stays itself (its name included);
 * interfaces become the object types they are (an interface is not assignable to `Json`,
 * which would make its jobs unfit for `after` or a `JobSpec[]`), read-only arrays become
 * arrays, and an object with a method is any JSON.
 */
type JsonOf<T> = [T] extends [Json]
  ? T
  : T extends string | number | boolean | null
    ? T
    : T extends readonly unknown[]
      ? { -readonly [I in keyof T]: JsonOf<T[I]> }
      : T extends object
        ? [Extract<T | T[keyof T], (...args: never[]) => unknown>] extends [never]
          ? { -readonly [K in keyof T as K & string]: JsonOf<Exclude<T[K], undefined>> }
          : Json
        : Json;

/** The value a job module's entry completes with. */
type OutputOf<E> = E extends { ranks: unknown }
  ? RankJobResult
  : EntryFunction<E> extends (...args: never[]) => infer R
    ? ResultOf<Awaited<R>>
    : Json;

/**
 * A job's input may be left out when its handler takes none (or takes `null`): the input is
 * then `null`. `undefined` is not JSON, so a handler's optional parameter (`x?: number`)
 * does not make the input optional; such a handler takes `x: number | null`.
 */
type InputArgs<I> = unknown extends I
  ? [input?: I, options?: JobOptions]
  : null extends I
    ? [input?: Exclude<I, undefined>, options?: JobOptions]
    : [input: Exclude<I, undefined>, options?: JobOptions];

/** `job`, typed by a job module: see `jobBuilder`. */
export type JobBuilder<M extends JobModule> = <K extends keyof M & string>(
  kind: K,
  ...args: InputArgs<InputOf<M[K]>>
) => JobSpec<OutputOf<M[K]>>;

/**
 * `job`, typed by a job module: a kind the module does not define, or an input its handler
 * does not take, is a compile error, and `result.get(spec).value` and `ctx.need(spec)` have
 * the type the handler returns (when that is JSON). At run time it also refuses a kind the
 * module does not define, with a `GraphError` (UNKNOWN_KIND) that lists the ones it does, and
 * a module `createEngine` would refuse (`null`, one of no kinds, a kind that is no handler)
 * with the same `JobModuleError`, at once.
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
  // What createEngine would refuse (no object, no kinds, a module namespace, a kind that is no
  // handler) is refused here, where a JavaScript graph module first names the module.
  loadJobs(jobs);
  const kinds = Object.keys(jobs);
  return ((kind: string, input?: unknown, options?: JobOptions) => {
    if (!Object.hasOwn(jobs, kind)) {
      throw new GraphError(
        "UNKNOWN_KIND",
        `unknown job kind "${kind}": the job module defines ${kinds
          .map((k) => `"${k}"`)
          .join(", ")}${didYouMean(kind, kinds, (meant) => `"${meant}"`)}`,
        [kind],
      );
    }
    return job(kind, input, options);
  }) as JobBuilder<JobModule> as JobBuilder<M>;
}
