import type { JobOutcome } from "./run.ts";

/**
 * One job's outcome as `baton run --json` writes it (and `baton sim --seed S --json`, in
 * its `outcomes`): times rounded to whole ms, and empty fields left out.
 *
 * @example
 * ```ts
 * jobJson(result.get(answer)); // { id: "3f2a…", kind: "double", status: "completed", attempts: 1, cached: false, value: 42, … }
 * ```
 */
export function jobJson(o: JobOutcome): object {
  return {
    id: o.id,
    kind: o.kind,
    status: o.status,
    attempts: o.attempts,
    cached: o.cached,
    ...(o.value !== undefined && { value: o.value }),
    ...(o.error !== undefined && { error: o.error }),
    ...(o.cause !== undefined && { cause: o.cause }),
    ...(o.lostWorkers.length > 0 && { lostWorkers: o.lostWorkers }),
    ...(o.lostWhy.length > 0 && { lostWhy: o.lostWhy }),
    ...(o.worker !== undefined && { worker: o.worker }),
    ...(o.startedAt !== undefined && { startedAt: Math.round(o.startedAt) }),
    ...(o.finishedAt !== undefined && { finishedAt: Math.round(o.finishedAt) }),
  };
}
