import { resolve } from "node:path";
import { didYouMean } from "../closestName.ts";
import { ConfigError } from "../errors.ts";
import { checkPlantedBugs } from "../machines/checkPlantedBugs.ts";
import { DEFAULT_DEAD_AFTER_MS, DEFAULT_HEARTBEAT_MS } from "../machines/connection.ts";
import { DEFAULT_LEASE_TIMEOUT_MS } from "../machines/jobBoard.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import { checkConnectListens } from "./coordinatorAddress.ts";
import type { EngineOptions } from "./engine.ts";
import { checkInspectOption } from "./guardInspect.ts";
import { requireInProcessCount } from "./inProcessPool.ts";
import { isWithin } from "./isWithin.ts";
import type { LoadedJobs } from "./jobModule.ts";
import { MOST_KEPT_LOGS } from "./mostKeptLogs.ts";
import type { Clock, Entropy, Files, Net } from "./ports.ts";
import { requireMethods } from "./requireMethods.ts";
import { requireWhole } from "./requireWhole.ts";
import { ResultStore } from "./resultStore.ts";
import { checkWorkerCount } from "./workerCountLimit.ts";
import { parseListenAddress } from "./wsNet.ts";

/** Every option `createEngine` takes (the compiler holds this to `EngineOptions`). */
export const ENGINE_OPTIONS: Record<keyof EngineOptions, true> = {
  jobs: true,
  workers: true,
  store: true,
  batonDir: true,
  logsDir: true,
  keepLogs: true,
  cancelGraceMs: true,
  storeFullWaitMs: true,
  secretFile: true,
  failFast: true,
  force: true,
  storeReadOnly: true,
  listen: true,
  logger: true,
  inspect: true,
  onCoordinator: true,
  maxLost: true,
  throttle: true,
  leaseTimeoutMs: true,
  maxFrameBytes: true,
  progressIntervalMs: true,
  clock: true,
  entropy: true,
  net: true,
  files: true,
  plantedBugs: true,
  helloTimeoutMs: true,
  heartbeatMs: true,
  deadAfterMs: true,
};

/** Options that are text: a path, or where to listen. */
const TEXTS = {
  store: "the path of the result store's directory",
  batonDir: "the path of a directory",
  logsDir: "the path of a directory",
  secretFile: "the path of a file",
  listen: 'an address such as "127.0.0.1:7000"',
} as const;
/** Options that are switched on or off. */
const SWITCHES = ["failFast", "force", "storeReadOnly"] as const;
/**
 * The logger's methods that baton calls, as pino's: `log.child({ run })`,
 * `log.info({ job }, "message")`.
 */
export const LOGGER_METHODS = ["child", "debug", "info", "warn", "error"];
/** Each port's methods (the compiler holds each to its interface) and what makes one. */
const PORTS = {
  clock: [
    // `restartTimeout` is optional: a clock without it is cleared and set instead.
    { now: true, setTimeout: true, clearTimeout: true } satisfies Record<
      Exclude<keyof Clock, "restartTimeout">,
      true
    >,
    "a Clock, such as nodeClock()",
  ],
  entropy: [
    { random: true, id: true, bytes: true } satisfies Record<keyof Entropy, true>,
    "an Entropy, such as nodeEntropy()",
  ],
  net: [
    { listen: true, connect: true } satisfies Record<keyof Net, true>,
    "a Net, such as wsNet() or memoryNet()",
  ],
  files: [
    {
      writeAtomic: true,
      createExclusive: true,
      read: true,
      readMany: true,
      list: true,
      modifiedAt: true,
      remove: true,
      removeDir: true,
      owner: true,
      sameFile: true,
      mkdirp: true,
    } satisfies Record<keyof Files, true>,
    "a Files, such as nodeFiles()",
  ],
} as const;

/** Options counted in whole things, at least 1 (and `keepLogs`, at most `MOST_KEPT_LOGS`). */
const WHOLE = ["maxLost", "maxFrameBytes"] as const;
/** Options in milliseconds, more than 0. */
const DURATIONS = [
  "leaseTimeoutMs",
  "heartbeatMs",
  "helloTimeoutMs",
  "deadAfterMs",
  "progressIntervalMs",
  "cancelGraceMs",
  "storeFullWaitMs",
] as const;

/**
 * Refuses, with a `ConfigError` naming the option, the engine options no run could use:
 * options that are not an object, an unknown option (a typo such as `failfast` was ignored),
 * a value of the wrong type (`checkValueTypes`),
 * no `jobs` or a path given as `jobs` (it takes the module itself), `workers` that are neither
 * a count, `{ count, resources }` nor a pool, a count of in-process workers more than this machine's memory holds (`workerCountLimit`;
 * `localPool` bounds its worker processes itself), a count of workers, a throttle,
 * `maxLost`, `maxFrameBytes` or `keepLogs` that is not a whole number of at least 1 (`keepLogs`
 * at most `MOST_KEPT_LOGS`, 10,000), a throttle on a kind the job module does not define (a typo there
 * limited nothing), a duration that is not a finite number of milliseconds above 0, a
 * `leaseTimeoutMs` or `deadAfterMs` not above `heartbeatMs`, a `store`, `batonDir` or `logsDir`
 * that is an empty path, `storeReadOnly` without a store's directory or with `force`, or with
 * worker processes whose `batonDir` or `logsDir` is in the store (it would be written). Such a value used to hang a run (no worker, a throttle of 0), fail
 * every job as lost (a NaN timeout, a lease that expires before its first renewal) or write
 * `results/`, `logs/` and `run/` into the current directory (an unset variable read as `""`).
 *
 * @example
 * ```ts
 * checkEngineOptions({ jobs, workers: 0 });
 * // ConfigError: createEngine: workers must be a whole number of 1 or more, not 0
 * ```
 */
export function checkEngineOptions(options: EngineOptions): void {
  checkOptionNames("createEngine", options, ENGINE_OPTIONS, {
    shape: "{ jobs, workers, store, … }",
  });
  if (options.jobs === undefined || options.jobs === null || typeof options.jobs === "string") {
    throw new ConfigError(
      `createEngine: jobs must be the job module, an object mapping each job kind to its handler (import it, or write { double: (n) => n * 2 }), not ${shown(options.jobs)}${typeof options.jobs === "string" ? "; a pool of worker processes takes its path, as localPool({ jobsModule })" : ""}`,
    );
  }
  checkValueTypes(options);
  const { workers } = options;
  if (
    workers !== undefined &&
    typeof workers !== "number" &&
    (typeof workers !== "object" || workers === null || Array.isArray(workers))
  ) {
    throw new ConfigError(
      `createEngine: workers must be a count of in-process workers, { count, resources }, or a pool such as inProcessPool(…), localPool(…) or slurmPool(…), not ${shown(workers)}`,
    );
  }
  const whole = (name: string, value: unknown) => requireWhole("createEngine", name, value);
  const [name, count] =
    typeof workers === "number"
      ? ["workers", workers]
      : workers !== undefined && !("start" in workers)
        ? ["workers.count", workers.count]
        : [];
  if (name !== undefined && count !== undefined) {
    requireInProcessCount("createEngine", name, count);
    checkWorkerCount(`createEngine: ${name}`, count, "inProcess");
  }
  for (const name of WHOLE) if (options[name] !== undefined) whole(name, options[name]);
  if (options.keepLogs !== undefined) {
    requireWhole("createEngine", "keepLogs", options.keepLogs, 1, MOST_KEPT_LOGS);
  }
  for (const name of DURATIONS) {
    const value = options[name];
    if (
      value !== undefined &&
      !(typeof value === "number" && Number.isFinite(value) && value > 0)
    ) {
      throw new ConfigError(
        `createEngine: ${name} must be a finite number of milliseconds above 0, not ${shown(value)}`,
      );
    }
  }
  const kinds = kindsOf(options.jobs);
  for (const [kind, most] of Object.entries(options.throttle ?? {})) {
    whole(`throttle.${kind}`, most);
    if (kinds !== undefined && !kinds.includes(kind)) {
      throw new ConfigError(
        `createEngine: throttle.${kind} names a kind the job module does not define, so it would limit nothing; throttle one of its kinds: ${kinds.join(", ")}${didYouMean(kind, kinds)}`,
      );
    }
  }
  // A busy worker renews its lease with each answered ping, once every heartbeatMs.
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  for (const [name, value, fallback, what] of [
    [
      "leaseTimeoutMs",
      options.leaseTimeoutMs,
      DEFAULT_LEASE_TIMEOUT_MS,
      "every lease would expire before its first renewal",
    ],
    [
      "deadAfterMs",
      options.deadAfterMs,
      DEFAULT_DEAD_AFTER_MS,
      "every worker would be judged dead before its next ping",
    ],
  ] as const) {
    if ((value ?? fallback) <= heartbeatMs) {
      throw new ConfigError(
        `createEngine: ${name} (${msOf(value, fallback)}) must be more than heartbeatMs (${msOf(options.heartbeatMs, heartbeatMs)}), the time between two pings: ${what}; raise ${name} or lower heartbeatMs (twice heartbeatMs leaves room for a slow answer)`,
      );
    }
  }
  if (options.secretFile === "") {
    throw new ConfigError(
      "createEngine: secretFile is an empty path; give the file that keeps the secret from run to run, or leave secretFile out for a new secret each run",
    );
  }
  if (options.storeReadOnly && typeof options.store !== "string") {
    throw new ConfigError(
      "createEngine: storeReadOnly reuses the results of a store without writing to it: give that store's directory as store",
    );
  }
  if (options.storeReadOnly && options.force) {
    throw new ConfigError(
      "createEngine: storeReadOnly reuses a store's results and force reuses none, so together they keep and reuse nothing: leave out store, storeReadOnly and force for that",
    );
  }
  if (typeof workers === "object" && "start" in workers) {
    checkConnectListens(workers.connect, options.listen, "createEngine");
  }
  // Worker processes need the run's own files (a secret in run/, their logs), which a store
  // only read must not get; in-process workers need none.
  if (
    options.storeReadOnly &&
    typeof options.store === "string" &&
    typeof workers === "object" &&
    "start" in workers &&
    workers.remote
  ) {
    const { store } = options;
    const own = [
      ["batonDir", options.batonDir ?? ".baton"],
      ["logsDir", options.logsDir],
    ] as const;
    for (const [name, dir] of own) {
      if (dir === undefined || dir === "" || !isWithin(dir, store)) continue;
      const given =
        options[name] === undefined ? " (by default .baton in the working directory)" : "";
      throw new ConfigError(
        `createEngine: storeReadOnly writes nothing in the store ${store}, but ${name}${given}, where the run's worker processes get their files, is ${resolve(dir) === resolve(store) ? "that store" : "in it"}: give ${name} a directory outside the store`,
      );
    }
  }
  for (const name of ["store", "batonDir", "logsDir"] as const) {
    if (options[name] === "") {
      throw new ConfigError(
        `createEngine: ${name} is an empty path, which would fill the current directory with the run's folders; give a directory${name === "store" ? ", or leave store out to keep no results" : ""}`,
      );
    }
  }
}

/**
 * Refuses, as JavaScript can pass them, values of the wrong type for the options that are
 * text, switches, callbacks, objects with methods (the logger, the ports) or lists: a number
 * as `batonDir` or a `console` as `logger` rejected the run with a TypeError from inside
 * baton, and a `"yes"` as `force`, a `5` as `inspect` or `throttle`, or a misspelt planted bug
 * were taken without a word.
 */
function checkValueTypes(options: EngineOptions): void {
  for (const [name, what] of Object.entries(TEXTS)) {
    const value = options[name as keyof typeof TEXTS];
    if (value === undefined || typeof value === "string") continue;
    if (name === "store" && value instanceof ResultStore) continue;
    throw new ConfigError(`createEngine: ${name} must be ${what}, not ${shown(value)}`);
  }
  // With a Net of the caller's, the address is that Net's to read.
  if (options.listen !== undefined && options.net === undefined) {
    try {
      parseListenAddress(options.listen);
    } catch (error) {
      throw new ConfigError(`createEngine: listen ${(error as Error).message}`);
    }
  }
  for (const name of SWITCHES) {
    const value = options[name];
    if (value !== undefined && typeof value !== "boolean") {
      throw new ConfigError(`createEngine: ${name} must be true or false, not ${shown(value)}`);
    }
  }
  if (options.logger !== undefined) {
    requireMethods(
      "createEngine",
      "logger",
      options.logger,
      LOGGER_METHODS,
      `a pino logger, such as pino({ level: "info" }) or your service's own (baton calls its ${LOGGER_METHODS.join(", ")} as pino's: log.info({ job }, "message"))`,
    );
  }
  for (const [name, [methods, what]] of Object.entries(PORTS)) {
    const port = options[name as keyof typeof PORTS];
    if (port !== undefined) requireMethods("createEngine", name, port, Object.keys(methods), what);
  }
  checkInspectOption("createEngine", options.inspect);
  requireOptionalFunction(
    "createEngine",
    "onCoordinator",
    "(coordinator) => …",
    options.onCoordinator,
  );
  const { throttle } = options;
  if (
    throttle !== undefined &&
    (typeof throttle !== "object" || throttle === null || Array.isArray(throttle))
  ) {
    throw new ConfigError(
      `createEngine: throttle must be an object of the most jobs of each kind running at once, such as { fetch: 4 }, not ${shown(throttle)}`,
    );
  }
  if (options.plantedBugs !== undefined) {
    checkPlantedBugs("createEngine: plantedBugs", options.plantedBugs);
  }
}

/**
 * The kinds of a job module, as given or as `loadJobs` made it; undefined for what is not
 * an object, which `loadJobs` refuses after these checks, saying what a job module is.
 */
function kindsOf(jobs: EngineOptions["jobs"]): readonly string[] | undefined {
  if (typeof jobs !== "object" || jobs === null) return undefined;
  return "codeHash" in jobs ? (jobs as LoadedJobs).kinds : Object.keys(jobs).sort();
}

/** A duration option as a message shows it: `3000 ms`, or `5000 ms, the default`. */
function msOf(value: number | undefined, fallback: number): string {
  return value === undefined ? `${fallback} ms, the default` : `${value} ms`;
}

/** A value a message names: a string in quotes, a function or an array by what it is. */
function shown(value: unknown): string {
  if (typeof value === "function")
    return "a function (a pool is made by calling one: localPool({ … }))";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) return "an object";
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}
