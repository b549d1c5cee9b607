/**
 * The check of a job's option values, which `job()` makes at the line that wrote the job
 * and planning makes again for an object that `job()` did not make (a spread copy, a
 * literal) or that was changed since.
 */

import { closestName } from "../closestName.ts";
import { GraphError } from "../errors.ts";
import type { Backoff, JobSpec } from "./job.ts";
import { label, preview } from "./label.ts";
import { RESOURCE_NAMES } from "./resourceNames.ts";

/** The keys of a job's `backoff` (the compiler holds this to `Backoff`). */
const BACKOFF_KEYS: Record<keyof Backoff, true> = { initialMs: true, factor: true, maxMs: true };

/**
 * Throws a `GraphError` (`BAD_JOB`) naming the job and the first option of `spec` whose
 * value it cannot take: `after` that is no array, `requires` that is no object or has a key
 * other than `cpus`, `gpus`, `memory` or a value that is no finite number ≥ 0, `retries`
 * that is no integer ≥ 0, `ranks` no integer ≥ 1, a `backoff` other than
 * `{ initialMs, factor?, maxMs? }` of finite numbers (`factor` ≥ 1), `timeoutMs` that is no
 * finite number > 0. Its kind must already be a non-empty string.
 *
 * @example
 * ```ts
 * checkJobOptions({ kind: "fetch", input: null, after: [], requires: {}, retries: 2 }); // passes
 * checkJobOptions({ kind: "fetch", input: null, after: [], requires: {}, timeoutMs: "30s" });
 * // GraphError: Job fetch has timeoutMs "30s"; timeoutMs must be a finite number of milliseconds > 0 (leave it out for no limit).
 * ```
 */
export function checkJobOptions(spec: JobSpec): void {
  const { after, requires, retries, ranks, backoff, timeoutMs } = spec as {
    [key in keyof JobSpec]: unknown;
  };
  if (!Array.isArray(after)) {
    // One job where the list goes (`after: fetch`), an easy slip without the compiler.
    const one = typeof after === "object" && after !== null && "kind" in after;
    throw badJob(
      spec,
      `after ${preview(after)}`,
      one
        ? "after must be an array of jobs, even of one: { after: [thatJob] }"
        : "after must be an array of jobs",
    );
  }
  if (typeof requires !== "object" || requires === null) {
    throw badJob(spec, `requires ${preview(requires)}`, "requires must be an object");
  }
  const resourceNames: readonly string[] = RESOURCE_NAMES;
  for (const key in requires) {
    if (!Object.hasOwn(requires, key)) continue;
    const value = (requires as Record<string, unknown>)[key];
    if (!resourceNames.includes(key)) {
      throw badJob(
        spec,
        `requires.${key}`,
        `the resources a job can require are cpus, gpus, memory${meantKey(key, resourceNames)}`,
      );
    }
    if (value !== undefined && !isAtLeast(value, 0)) {
      throw badJob(spec, `requires.${key} ${preview(value)}`, "it must be a finite number ≥ 0");
    }
  }
  if (retries !== undefined && !(Number.isInteger(retries) && (retries as number) >= 0)) {
    throw badJob(
      spec,
      `retries ${preview(retries)}`,
      "retries must be an integer ≥ 0 (0: no retry)",
    );
  }
  if (ranks !== undefined && !(Number.isInteger(ranks) && (ranks as number) >= 1)) {
    throw badJob(spec, `ranks ${preview(ranks)}`, "ranks must be an integer ≥ 1");
  }
  if (backoff !== undefined) checkBackoff(spec, backoff);
  if (timeoutMs !== undefined && !(isAtLeast(timeoutMs, 0) && (timeoutMs as number) > 0)) {
    throw badJob(
      spec,
      `timeoutMs ${preview(timeoutMs)}`,
      "timeoutMs must be a finite number of milliseconds > 0 (leave it out for no limit)",
    );
  }
}

function checkBackoff(spec: JobSpec, backoff: unknown): void {
  if (typeof backoff !== "object" || backoff === null) {
    throw badJob(
      spec,
      `backoff ${preview(backoff)}`,
      "backoff must be { initialMs, factor?, maxMs? }",
    );
  }
  for (const key of Object.keys(backoff)) {
    if (!Object.hasOwn(BACKOFF_KEYS, key)) {
      throw badJob(
        spec,
        `backoff.${key}`,
        `backoff takes initialMs, factor, maxMs${meantKey(key, Object.keys(BACKOFF_KEYS))}`,
      );
    }
  }
  const { initialMs, factor, maxMs } = backoff as { [key in keyof Backoff]?: unknown };
  if (!isAtLeast(initialMs, 0)) {
    throw badJob(spec, `backoff.initialMs ${preview(initialMs)}`, "it must be a finite number ≥ 0");
  }
  if (factor !== undefined && !isAtLeast(factor, 1)) {
    throw badJob(spec, `backoff.factor ${preview(factor)}`, "it must be a finite number ≥ 1");
  }
  if (maxMs !== undefined && !isAtLeast(maxMs, 0)) {
    throw badJob(spec, `backoff.maxMs ${preview(maxMs)}`, "it must be a finite number ≥ 0");
  }
}

/** ` (did you mean maxMs?)` for a key that is likely a typo of one of `keys`, else `""`. */
function meantKey(key: string, keys: readonly string[]): string {
  const meant = closestName(key, keys);
  return meant === undefined ? "" : ` (did you mean ${meant}?)`;
}

function isAtLeast(value: unknown, min: number): boolean {
  return typeof value === "number" && Number.isFinite(value) && value >= min;
}

/**
 * The error for a spec whose `what` breaks `rule`. A function of the module rather than a
 * closure each check makes: planning checks every spec, and a closure a spec cost a quarter of
 * planning through tsx's transform (tests, `bench --sources`).
 */
function badJob(spec: JobSpec, what: string, rule: string): GraphError {
  return new GraphError("BAD_JOB", `Job ${label(spec)} has ${what}; ${rule}.`, [spec.kind]);
}
