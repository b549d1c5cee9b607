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

/** The keys of a definition that has neither a `run` nor a `ranks` function: either's. */
const DEFINITION_KEYS: Record<keyof HandlerDefinition | keyof RankJobDefinition, true> = {
  run: true,
  ranks: true,
  version: true,
  timeoutMs: true,
};

/**
 * Refuses a key of a job kind's definition that baton does not read, with a `JobModuleError`
 * naming the kind, the key, the keys that definition takes and where the key belongs: an
 * option of each job (`requires`, `retries`, `ranks` as a number, …) goes to
 * `job(kind, input, { … })`, and `throttle` is the engine's. Such a key was ignored without a
 * word, so a job the user believed needs 4 CPUs went to any worker. A key whose value is
 * `undefined` asks nothing and passes. The keys are a handler's (`{ run, version, timeoutMs }`)
 * when it has a `run` function, a rank job's (`{ ranks, version, timeoutMs }`) when it has a
 * `ranks` function, and either's when it has neither, so that `{ rank: f }` is named as a typo
 * of `ranks` and `{ runn: f }` of `run`; what it then lacks is the caller's to say. A `ranks`
 * that is not a function (argv itself, or the group's size) is refused saying what it takes.
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
  const runs = typeof given.run === "function";
  const launches = typeof given.ranks === "function";
  if (!runs && !launches && given.ranks !== undefined) {
    throw new JobModuleError(notALaunch(kind, given.ranks));
  }
  const keys = runs ? HANDLER_KEYS : launches ? RANK_JOB_KEYS : DEFINITION_KEYS;
  checkOptionNames(`job kind "${kind}"`, given, keys, {
    shape: `{ ${Object.keys(keys).join(", ")} }`,
    hint: (name) => {
      const where = whereItGoes(kind, name, launches);
      return where === undefined ? "" : `; ${where}`;
    },
    fail: (message) => new JobModuleError(message),
  });
}

/** Why a `ranks` that is not a function (argv itself, the group's size) cannot be one. */
function notALaunch(kind: string, ranks: unknown): string {
  const what = Array.isArray(ranks)
    ? "an array"
    : typeof ranks === "string"
      ? `the string ${JSON.stringify(ranks)}`
      : typeof ranks === "object" && ranks !== null
        ? "an object"
        : String(ranks);
  const size =
    typeof ranks === "number"
      ? `; the size of a rank group is an option of each job: job(${JSON.stringify(kind)}, input, { ranks: ${ranks} })`
      : "";
  return `job kind "${kind}": ranks must be a function that returns what each rank runs, { ranks: (input, ctx) => ["python3", "train.py"] }, not ${what}${size}`;
}

/** Where a key that is no definition's belongs, if it is one of baton's elsewhere. */
function whereItGoes(kind: string, name: string, launches: boolean): string | undefined {
  const jobCall = `job(${JSON.stringify(kind)}, input, { ${name}: … })`;
  if (name === "ranks" && launches) return "a definition has run or ranks, not both";
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
