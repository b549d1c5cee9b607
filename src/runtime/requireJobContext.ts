import { argumentError } from "../argumentError.ts";
import { requireObject } from "../requireObject.ts";
import { LOGGER_METHODS } from "./checkEngineOptions.ts";
import type { JobContext } from "./jobModule.ts";
import { requireMethods } from "./requireMethods.ts";

/** What a function that must be given a handler's `ctx` says it takes. */
const A_CONTEXT = "the JobContext its handler was given (its second argument, ctx)";

/**
 * Refuses, with a `ConfigError`, what is no {@link JobContext} for `where`, a public function a
 * handler calls with its own `ctx`: none at all, or one without the parts it uses (its job,
 * its AbortSignal, `progress`, its logger), each a TypeError from inside (`ctx.job` of
 * undefined, `ctx.log.child is not a function`) once a handler passed another value.
 *
 * @example
 * ```ts
 * requireJobContext("runRankJob", undefined);
 * // ConfigError: runRankJob: ctx must be the JobContext its handler was given (its second argument, ctx), not undefined
 * ```
 */
export function requireJobContext(where: string, ctx: unknown): asserts ctx is JobContext {
  requireMethods(where, "ctx", ctx, ["progress"], A_CONTEXT);
  const { job, signal, log } = ctx as Partial<Record<keyof JobContext, unknown>>;
  requireObject(where, "ctx.job", `the job of ${A_CONTEXT}`, job);
  if (!(signal instanceof AbortSignal)) {
    throw argumentError(where, "ctx.signal", `the AbortSignal of ${A_CONTEXT}`, signal);
  }
  requireMethods(where, "ctx.log", log, LOGGER_METHODS, `the pino logger of ${A_CONTEXT}`);
}
