import { didYouMeanEach } from "../closestName.ts";
import { GraphError } from "../errors.ts";
import { isThenable } from "../runtime/isThenable.ts";
import { someTakes } from "./canTake.ts";
import { checkJobOptions } from "./checkJobOptions.ts";
import type { Backoff, JobSpec, Json, PlannedJob, Resources } from "./job.ts";
import { jobId } from "./jobId.ts";
import { label, preview } from "./label.ts";
import { MAX_LISTED, noWorkerCanTake } from "./noWorkerCanTake.ts";
import { RESOURCE_NAMES } from "./resourceNames.ts";
import { isJsonPrimitive, toJson } from "./toJson.ts";

/**
 * A validated graph, ready to schedule.
 *
 * @example
 * ```ts
 * const plan = planGraph([parse], { versionOf: () => "1" });
 * for (const planned of plan.jobs.values()) console.log(planned.id, planned.kind, planned.deps);
 * ```
 */
export interface Plan {
  /** Every job once, by id, in topological order: dependencies before dependents. */
  jobs: Map<string, PlannedJob>;
  /**
   * The id planning gave a job of the graph, or the id of a job equal to one of `among` (by
   * default the graph's jobs; a run's result passes its outcomes, which hold the jobs that
   * handlers added with `ctx.need` too); throws `BAD_JOB` for any other.
   */
  idOf(spec: JobSpec, among?: ReadonlyMap<string, unknown>): string;
}

/**
 * What `planGraph` needs to know beyond the jobs.
 *
 * @example
 * ```ts
 * const options: PlanOptions = {
 *   versionOf: (kind) => jobModule.handlers[kind]?.version,
 *   workers: [{ cpus: 8, memory: 16384 }, { cpus: 4, gpus: 1, memory: 8192 }],
 * };
 * ```
 */
export interface PlanOptions {
  /** The handler's version for a kind, or `undefined` when the job module has no such kind. */
  versionOf: (kind: string) => string | undefined;
  /**
   * The job module's kinds: an unknown kind's error lists them, and names the one it is most
   * likely a typo of.
   */
  kinds?: readonly string[];
  /** A kind's default `timeoutMs`, for the jobs of that kind that set none. */
  timeoutOf?: (kind: string) => number | undefined;
  /** What each configured worker offers; when given and non-empty, every job must fit one. */
  workers?: readonly Resources[];
  /**
   * How to have the workers offer `enough` (what every job refused needs, and what the
   * workers offer beyond it), the way out that `UNSATISFIABLE` names, such as "give
   * slurmPool resources { cpus: 4 }" (default: "configure a worker that offers enough").
   */
  offerMore?: ((enough: Resources) => string) | undefined;
  /**
   * Whether a kind launches rank groups (`{ ranks }` in the job module): its jobs must then
   * say how many ranks, and other kinds' jobs must not; `undefined` for a kind whose jobs may
   * do either (a simulation's stand-in for a kind its graph has no job of).
   */
  launchesRanks?: (kind: string) => boolean | undefined;
  /** How messages name the `index`-th job given (default `graph[index]`). */
  rootName?: (index: number) => string;
  /**
   * What an unknown kind's error tells to add a handler to (default "the job module"): a
   * simulation names where its handlers were given (`--handlers`, `simulate`'s `handlers`).
   */
  module?: string | undefined;
}

/** How many times a failed job is tried again unless its `retries` says. */
export const DEFAULT_RETRIES = 3;
/**
 * `deps` of a planned job that runs after none: shared (most jobs of a wide graph), so frozen.
 * Nothing changes a job's deps in place (the board gives a blocked job a new list); a list of
 * its own cost every such job 32 bytes and, where the board leases it, a cache miss.
 */
const NO_DEPS: string[] = Object.freeze([]) as unknown as string[];
/**
 * `requires` of a planned job that requires nothing: shared (most jobs of most graphs), so
 * frozen, as nothing changes a planned job's requirements in place. A copy of its own cost
 * every such job an object that outlives the run's start, so more heap and more to copy
 * for the young generation's collector.
 */
const NO_REQUIREMENTS: Resources = Object.freeze({});
/** A job's position while the walk is still below it. */
const ON_PATH = -1;

/**
 * Plans a graph: walks `roots` and, transitively, the jobs they run `after`; validates
 * every job; gives each its id (see `jobId`), dependencies first; and merges identical
 * jobs (same id) into one. Nothing runs. Deep graphs are fine: a chain of 100,000 jobs is
 * walked without recursion.
 *
 * Inputs are copied with `toJson` and `retries` defaults to 3. Every problem is a
 * `GraphError` that says what to change:
 * - `BAD_JOB`: something that is not a job in `roots` or `after`; a kind that is not a
 *   non-empty string; `retries` not a non-negative integer; `ranks` not a positive
 *   integer; `timeoutMs` not a finite number > 0; a `requires` value that is negative or not a finite number, or a key other
 *   than `cpus`, `gpus`, `memory`; a `backoff` with `initialMs`/`maxMs` not finite and
 *   non-negative, `factor` not finite and at least 1, or a key other than those three (a
 *   likely typo of a key is named, as for `requires`); two identical jobs (same id) with
 *   different options (`requires`, `retries`, `backoff`, `timeoutMs`, `ranks`), naming
 *   each that differs and both values (`retries 1 and 5`).
 * - `GRAPH_CYCLE`: a job that (through `after`) runs after itself, possible only when
 *   `after` arrays are mutated after `job()`; found by object identity.
 * - `UNKNOWN_KIND`: every kind `versionOf` does not know, with how many jobs use it (and,
 *   given `kinds`, the module's kinds and the one a typo most likely meant).
 * - `NOT_JSON`: an input that is not JSON (see `toJson`).
 * - `UNSATISFIABLE`: when `workers` is non-empty, a job that no worker can take by
 *   `canTake` — a resource missing on either side counts as 0, so a worker that does not
 *   declare `gpus` takes no job that needs one.
 *
 * @example
 * ```ts
 * const fetch = job("fetch", { url: "https://example.org" });
 * const parse = job("parse", { strict: true }, { after: [fetch, fetch] });
 * const plan = planGraph([parse], { versionOf: (kind) => handlers[kind]?.version });
 * [...plan.jobs.values()].map((j) => j.kind); // ["fetch", "parse"]
 * plan.jobs.get(plan.idOf(parse))?.deps; // [plan.idOf(fetch)]
 * ```
 */
export function planGraph(roots: readonly JobSpec[], options: PlanOptions): Plan {
  const { order, positions } = walk(roots, options.rootName ?? ((i) => `graph[${i}]`));
  const versions = versionsOf(order, options.versionOf, options.kinds, options.module);
  /** The id of each job of `order`, at its position there. */
  const ids: string[] = [];
  const idIn = (spec: JobSpec): string | undefined => {
    const at = positions.get(spec);
    return at === undefined ? undefined : ids[at];
  };
  const jobs = new Map<string, PlannedJob>();
  // What the job module says of a kind, asked again only when the kind changes from the job
  // before (a graph's jobs come in runs of one kind): three lookups a job were one.
  let kind: string | undefined;
  let version = "";
  let launches: boolean | undefined;
  let kindTimeoutMs: number | undefined;
  for (const spec of order) {
    if (spec.kind !== kind) {
      kind = spec.kind;
      version = versions.get(kind)!;
      launches = options.launchesRanks?.(kind);
      kindTimeoutMs = options.timeoutOf?.(kind);
    }
    if (launches !== undefined) checkRanks(spec, launches);
    const { after } = spec;
    const deps =
      after.length === 0
        ? NO_DEPS
        : after.length === 1
          ? [ids[positions.get(after[0])!]!]
          : [...new Set(after.map((dep) => ids[positions.get(dep)!]!))];
    const input = inputOf(spec);
    const id = jobId(spec.kind, input, deps, version);
    const timeoutMs = spec.timeoutMs ?? kindTimeoutMs;
    ids.push(id);
    const planned: PlannedJob = {
      id,
      kind: spec.kind,
      input,
      deps,
      requires: requirementsOf(spec.requires),
      retries: spec.retries ?? DEFAULT_RETRIES,
      ...(spec.backoff !== undefined && { backoff: { ...spec.backoff } }),
      ...(timeoutMs !== undefined && { timeoutMs }),
      ...(spec.ranks !== undefined && { ranks: spec.ranks }),
    };
    const same = jobs.get(id);
    if (same === undefined) jobs.set(id, planned);
    else {
      const differ = differences(same, planned);
      if (differ.length > 0) throw conflict(spec, same, differ);
    }
  }
  if (options.workers !== undefined && options.workers.length > 0) {
    checkSatisfiable(jobs, options.workers, options.offerMore);
  }
  /**
   * The id of a spec that is not itself in the graph (same kind, input and dependencies: one
   * job, as `job` promises), or undefined.
   */
  const sameJobId = (spec: JobSpec): string | undefined => {
    try {
      const version = versions.get(spec.kind) ?? options.versionOf(spec.kind);
      const deps = spec.after.map((dep) => idIn(dep) ?? sameJobId(dep));
      if (version === undefined || deps.includes(undefined)) return undefined;
      const input = inputOf(spec);
      return jobId(spec.kind, input, [...new Set(deps as string[])], version);
    } catch {
      return undefined; // not a job spec, or an input no plan could hold
    }
  };
  return {
    jobs,
    idOf(spec, among = jobs) {
      const id = idIn(spec) ?? sameJobId(spec);
      if (id !== undefined && among.has(id)) return id;
      // A JavaScript caller's `result.get("fetch")` is no job, rather than one of another run.
      checkSpec(spec, () => (among === jobs ? "the job looked up" : "result.get's job"));
      const where =
        among === jobs
          ? "plan; plan a graph that contains it"
          : "run: it is neither in its graph nor a job that a handler needed";
      throw new GraphError("BAD_JOB", `Job ${label(spec)} is not part of this ${where}.`, [
        spec.kind,
      ]);
    },
  };
}

/**
 * A job's input as JSON: a primitive as it is, anything else copied by `toJson`, whose label
 * (a string a job) is built only then.
 */
function inputOf(spec: JobSpec): Json {
  return isJsonPrimitive(spec.input)
    ? spec.input
    : toJson(spec.input, `input of job "${spec.kind}"`);
}

/** A copy of a job's `requires`, or the shared {@link NO_REQUIREMENTS} when it has no field. */
function requirementsOf(requires: Resources): Resources {
  for (const key in requires) if (Object.hasOwn(requires, key)) return { ...requires };
  return NO_REQUIREMENTS;
}

/** A rank kind's job says how many ranks; another kind's job does not. */
function checkRanks(spec: JobSpec, launchesRanks: boolean): void {
  if (launchesRanks && spec.ranks === undefined) {
    throw bad(
      `Job ${label(spec)} has no ranks option, but kind "${spec.kind}" launches ranks; say how many: job("${spec.kind}", input, { ranks: 4 }).`,
      [spec.kind],
    );
  }
  if (!launchesRanks && spec.ranks !== undefined) {
    throw bad(
      `Job ${label(spec)} has ranks: ${spec.ranks}, but kind "${spec.kind}" is a plain handler, which would ignore it; define the kind as { ranks: (input) => argv } in the job module, or leave out ranks.`,
      [spec.kind],
    );
  }
}

/**
 * Depth-first walk by object identity; returns every job once, dependencies first, and where
 * each is in that order. One map says both whether a job was reached (-1 while the walk is
 * still below it, for cycles) and its position: planning a 100,000-job graph looked each job
 * up in three.
 */
function walk(
  roots: readonly JobSpec[],
  rootName: (index: number) => string,
): { order: JobSpec[]; positions: Map<unknown, number> } {
  if (!Array.isArray(roots)) {
    throw bad(`The graph is ${preview(roots)}; pass an array of jobs made with job().`);
  }
  const order: JobSpec[] = [];
  const positions = new Map<unknown, number>();
  const path: { spec: JobSpec; next: number }[] = [];
  // Where the job being entered was found, for checkSpec's message: two closures for the
  // whole walk, reading these, instead of one made for every job.
  let rootAt = 0;
  let depAt = 0;
  let depOf: JobSpec | undefined;
  const fromRoot = () => rootName(rootAt);
  const fromDep = () => `after[${depAt}] of job ${label(depOf!)}`;
  /** A job that runs after none is placed at once: it cannot be on a cycle. */
  const enter = (spec: unknown, from: () => string) => {
    checkSpec(spec, from);
    if (spec.after.length === 0) {
      positions.set(spec, order.length);
      order.push(spec);
      return;
    }
    positions.set(spec, ON_PATH);
    path.push({ spec, next: 0 });
  };
  roots.forEach((root, i) => {
    if (positions.has(root)) return;
    rootAt = i;
    enter(root, fromRoot);
    while (path.length > 0) {
      const frame = path[path.length - 1]!;
      const { spec } = frame;
      if (frame.next === spec.after.length) {
        path.pop();
        positions.set(spec, order.length);
        order.push(spec);
        continue;
      }
      const at = frame.next++;
      const dep: unknown = spec.after[at];
      const position = positions.get(dep);
      if (position === ON_PATH) throw cycle(path, dep as JobSpec);
      if (position === undefined) {
        depAt = at;
        depOf = spec;
        enter(dep, fromDep);
      }
    }
  });
  return { order, positions };
}

function checkSpec(spec: unknown, from: () => string): asserts spec is JobSpec {
  if (typeof spec !== "object" || spec === null) {
    throw bad(
      `${from()} is ${preview(spec)}, not a job; make jobs with job(kind, input, options).`,
    );
  }
  if (Array.isArray(spec)) {
    throw bad(`${from()} is an array, not a job; give the jobs themselves (spread it: ...jobs).`);
  }
  const { kind, after, requires } = spec as Partial<JobSpec>;
  if (kind === undefined) throw bad(`${from()} is ${noJob(spec)}`);
  if (typeof kind !== "string" || kind === "") {
    throw bad(
      `The job at ${from()} has kind ${preview(kind)}; a kind must be a non-empty string ` +
        "naming a handler of the job module.",
    );
  }
  if (after === undefined || requires === undefined) {
    const missing = [after === undefined && "after", requires === undefined && "requires"];
    throw bad(
      `The job at ${from()} (kind ${preview(kind)}) has no ${missing.filter(Boolean).join(" and no ")}: it was not made by job(); make jobs with job(kind, input, options), which fills them in.`,
      [kind],
    );
  }
  checkJobOptions(spec as JobSpec);
}

/**
 * The version of every kind in the graph; throws `UNKNOWN_KIND` listing every unknown one,
 * and the module's `kinds` when known.
 */
function versionsOf(
  order: readonly JobSpec[],
  versionOf: (kind: string) => string | undefined,
  kinds: readonly string[] | undefined,
  module = "the job module",
): Map<string, string> {
  const versions = new Map<string, string>();
  const unknown = new Map<string, number>();
  for (const { kind } of order) {
    if (versions.has(kind)) continue;
    const count = unknown.get(kind);
    if (count !== undefined) {
      unknown.set(kind, count + 1);
      continue;
    }
    const version = versionOf(kind);
    if (version === undefined) unknown.set(kind, 1);
    else versions.set(kind, version);
  }
  if (unknown.size === 0) return versions;
  const list = [...unknown].map(([kind, n]) => `"${kind}" (${n} ${n === 1 ? "job" : "jobs"})`);
  const message =
    unknown.size === 1
      ? `Unknown job kind ${list[0]}. Add a handler for it to ${module}, or fix the kind.`
      : `Unknown job kinds ${list.join(", ")}. Add handlers for them to ${module}, ` +
        "or fix the kinds.";
  throw new GraphError(
    "UNKNOWN_KIND",
    kinds === undefined ? message : `${message} ${moduleKinds([...unknown.keys()], kinds, module)}`,
    [...unknown.keys()],
  );
}

/** What `module` defines, and the kind each unknown one most likely meant. */
function moduleKinds(unknown: readonly string[], kinds: readonly string[], module: string): string {
  const named = `${module[0]!.toUpperCase()}${module.slice(1)}`;
  if (kinds.length === 0) return `${named} defines no kind.`;
  const quoted = kinds.slice(0, MAX_LISTED).map((kind) => `"${kind}"`);
  if (kinds.length > MAX_LISTED) quoted.push(`… (${kinds.length - MAX_LISTED} more)`);
  const guess = didYouMeanEach(unknown, kinds, (kind) => `"${kind}"`) || ".";
  return `${named} defines ${quoted.join(", ")}${guess}`;
}

function checkSatisfiable(
  jobs: Map<string, PlannedJob>,
  workers: readonly Resources[],
  offerMore: ((enough: Resources) => string) | undefined,
): void {
  // One pass that keeps only the jobs refused: no copy of every job first.
  const stuck: PlannedJob[] = [];
  for (const j of jobs.values()) if (!someTakes(workers, j.requires)) stuck.push(j);
  if (stuck.length === 0) return;
  throw new GraphError(
    "UNSATISFIABLE",
    noWorkerCanTake(stuck, workers, offerMore),
    stuck.map((j) => j.id),
  );
}

/**
 * What must agree between two jobs merged because they have the same id, each option by its
 * name and its value as a message shows it: a resource not required is 0 of it (`requires: {
 * gpus: 0 }` and no `requires` agree), an option not given is "none".
 */
function optionValues(job: PlannedJob): [name: string, value: string][] {
  const { requires: r, backoff: b } = job;
  return [
    ...RESOURCE_NAMES.map((name): [string, string] => [
      `requires.${name}`,
      `${r[name] ?? 0}${name === "memory" ? " MiB" : ""}`,
    ]),
    ["retries", String(job.retries)],
    ["ranks", String(job.ranks ?? "none")],
    ["timeoutMs", String(job.timeoutMs ?? "none")],
    ["backoff", b === undefined ? "none" : formatBackoff(b)],
  ];
}

/** A backoff as a message shows it, its fields in one order: `{ initialMs: 100, factor: 2 }`. */
function formatBackoff(b: Backoff): string {
  const fields = [
    `initialMs: ${b.initialMs}`,
    ...(b.factor === undefined ? [] : [`factor: ${b.factor}`]),
    ...(b.maxMs === undefined ? [] : [`maxMs: ${b.maxMs}`]),
  ];
  return `{ ${fields.join(", ")} }`;
}

/**
 * Each option on which two jobs merged because they have the same id disagree, with both
 * values (`retries 1 and 5`); empty when they agree.
 */
function differences(first: PlannedJob, second: PlannedJob): string[] {
  const theirs = optionValues(second);
  return optionValues(first).flatMap(([name, value], i) =>
    value === theirs[i]![1] ? [] : [`${name} ${value} and ${theirs[i]![1]}`],
  );
}

function conflict(spec: JobSpec, first: PlannedJob, differ: readonly string[]): GraphError {
  return bad(
    `Job ${label(spec)} appears twice with different options: ${differ.join("; ")}. ` +
      `Identical jobs are merged into one (id ${first.id}); give both the same options, or ` +
      "make them differ in kind, input or dependencies.",
    [first.id],
  );
}

function cycle(path: readonly { spec: JobSpec }[], back: JobSpec): GraphError {
  const from = path.findIndex((frame) => frame.spec === back);
  const specs = [...path.slice(from).map((frame) => frame.spec), back];
  return new GraphError(
    "GRAPH_CYCLE",
    `The graph has a cycle (each job runs after the next): ${specs.map(label).join(" → ")}. ` +
      "A job cannot run after itself; remove one of these jobs from the other's after.",
    [...new Set(specs.map((spec) => spec.kind))],
  );
}

/**
 * What an object with no kind is, as a JavaScript caller may pass it: a promise of the jobs
 * not awaited, a collection of them that is no array, or any other object.
 */
function noJob(value: object): string {
  if (isThenable(value)) return "a promise, not a job; await it first";
  if (value instanceof Set || value instanceof Map) {
    return `a ${value.constructor.name}, not a job; give an array of the jobs ([...jobs${value instanceof Map ? ".values()" : ""}])`;
  }
  return `${preview(value)}, an object with no kind, not a job; make jobs with job(kind, input, options).`;
}

function bad(message: string, jobs: readonly string[] = []): GraphError {
  return new GraphError("BAD_JOB", message, jobs);
}
