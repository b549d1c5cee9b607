import { jobJson } from "../runtime/jobJson.ts";
import type { RunResult } from "../runtime/run.ts";

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
  const { jobs: _, ...head } = result.toJSON();
  yield `${JSON.stringify(head).slice(0, -1)},"jobs":[`;
  let first = true;
  for (const outcome of result.jobs.values()) {
    yield `${first ? "" : ","}${JSON.stringify(jobJson(outcome))}`;
    first = false;
  }
  yield "]}\n";
}
