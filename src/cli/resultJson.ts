import type { JobOutcome, RunResult } from "../runtime/run.ts";

/**
 * `baton run --json`: the result as one line of JSON (the shape the README documents), in
 * pieces of one job each. Each job's value may be up to a frame's 64 MiB, so the whole line
 * can pass the longest string V8 can make (about 512 MiB): written piece by piece, it never
 * has to be one string.
 *
 * @example
 * ```ts
 * for (const piece of resultJson(result)) process.stdout.write(piece);
 * // {"run":"k3x9…","ok":true,"durationMs":412,"counts":{…},"jobs":[{"id":"3f2a…",…},…]}
 * ```
 */
export function* resultJson(result: RunResult): Generator<string> {
  const head = JSON.stringify({
    run: result.run,
    ok: result.ok,
    durationMs: Math.round(result.durationMs),
    counts: result.counts,
  });
  yield `${head.slice(0, -1)},"jobs":[`;
  let first = true;
  for (const outcome of result.jobs.values()) {
    yield `${first ? "" : ","}${JSON.stringify(jobJson(outcome))}`;
    first = false;
  }
  yield "]}\n";
}

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
    ...(o.startedAt !== undefined && { startedAt: Math.round(o.startedAt) }),
    ...(o.finishedAt !== undefined && { finishedAt: Math.round(o.finishedAt) }),
  };
}
