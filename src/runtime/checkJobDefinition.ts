import { JobModuleError } from "../errors.ts";
import { JOB_OPTIONS } from "../graph/job.ts";
import { checkOptionNames } from "../optionNames.ts";
import type { HandlerDefinition, RankJobDefinition } from "./jobModule.ts";

/** The keys of a handler's definition (the compiler holds this to `HandlerDefinition`). */
const HANDLER_KEYS: Record<keyof HandlerDefinition, true> = {
  run: true,
  version: true,
  timeoutMs: true,
};

/** The keys of a rank job's definition (the compiler holds this to `RankJobDefinition`). */
const RANK_JOB_KEYS: Record<keyof RankJobDefinition, true> = {
  ranks: true,
  version: true,
  timeoutMs: true,
};

/**
 * Refuses a key of a job kind's definition (`{ run, version, timeoutMs }`, or `{ ranks, … }`
 * for a rank job) that baton does not read, with a `JobModuleError` naming the kind, the key,
 * the keys a definition takes and where the key belongs: an option of each job (`requires`,
 * `retries`, `ranks` as a number, …) goes to `job(kind, input, { … })`, and `throttle` is the
 * engine's. Such a key was ignored without a word, so a job the user believed needs 4 CPUs
 * went to any worker. A key whose value is `undefined` asks nothing and passes. An object
 * with neither a `run` nor a `ranks` function is checked as a handler's definition, so that
 * `{ handler: f }` or `{ runn: f }` is named; what it then lacks is the caller's to say.
 *
 * @example
 * ```ts
 * checkJobDefinition("big", { run, requires: { cpus: 4 } });
 * // JobModuleError: job kind "big": unknown option requires; it takes run, version, timeoutMs;
 * // requires is an option of each job, not of its kind: job("big", input, { requires: … })
 * ```
 */
export function checkJobDefinition(kind: string, definition: object): void {
  const given = Object.fromEntries(
    Object.entries(definition).filter(([, value]) => value !== undefined),
  );
  const rankJob = typeof given.ranks === "function" && typeof given.run !== "function";
  checkOptionNames(`job kind "${kind}"`, given, rankJob ? RANK_JOB_KEYS : HANDLER_KEYS, {
    shape: "{ run, version, timeoutMs }",
    hint: (name) => {
      const where = whereItGoes(kind, name);
      return where === undefined ? "" : `; ${where}`;
    },
    fail: (message) => new JobModuleError(message),
  });
}

/** Where a key that is no definition's belongs, if it is one of baton's elsewhere. */
function whereItGoes(kind: string, name: string): string | undefined {
  const jobCall = `job(${JSON.stringify(kind)}, input, { ${name}: … })`;
  if (name === "ranks") {
    return `ranks, the size of a rank group, is an option of each job (${jobCall}); a rank job's definition is { ranks: (input, ctx) => argv }, without run`;
  }
  if (name === "run") return "a definition has run or ranks, not both";
  if (Object.hasOwn(JOB_OPTIONS, name)) {
    return `${name} is an option of each job, not of its kind: ${jobCall}`;
  }
  if (name === "throttle") {
    return `throttle is the engine's, per kind: createEngine({ jobs, throttle: { ${JSON.stringify(kind)}: 2 } })`;
  }
  return undefined;
}
