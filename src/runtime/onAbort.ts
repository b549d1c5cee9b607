import type { JobContext } from "./jobModule.ts";

/**
 * The key of a handler context's own way to be told of its attempt's abort. A context that
 * has it (the runner's) calls the listener when the attempt is aborted without making the
 * attempt's AbortController, which it makes only when the handler reads `ctx.signal`.
 */
export const abortHook = Symbol("baton.abortHook");

/** A context with {@link abortHook}: `false` if already aborted (nothing is registered). */
export interface AbortHook {
  [abortHook](listener: (reason: unknown) => void): boolean;
}

/**
 * Calls `listener`, once, with the reason when `ctx`'s attempt is aborted; `false` (and no
 * call) if it is aborted already. Through the context's {@link abortHook} when it has one,
 * so that a wrapper around handlers that never read `ctx.signal` makes no AbortController
 * for them; else through `ctx.signal`.
 *
 * @example
 * ```ts
 * onAbort(ctx, (reason) => (abortedAt = now()));
 * ```
 */
export function onAbort(ctx: JobContext, listener: (reason: unknown) => void): boolean {
  if (abortHook in ctx) return (ctx as JobContext & AbortHook)[abortHook](listener);
  const { signal } = ctx;
  if (signal.aborted) return false;
  signal.addEventListener("abort", () => listener(signal.reason), { once: true });
  return true;
}
