import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { BatonError, ConfigError, ModuleLoadError } from "../errors.ts";
import { SeedClaims } from "./seedClaims.ts";
import { violationMessage } from "./simInvariants.ts";
import { loadSimModules } from "./simModules.ts";
import { type SimulateOptions, type SimulationResult, simulate } from "./simulate.ts";
import type { DrawnSimulation, SimulateSeedsOptions } from "./simulateSeeds.ts";

/** How each seed of a range is run, on whichever thread. */
export interface SeedThreadData {
  simulation: DrawnSimulation;
  checkDeterminism: boolean;
  traces: boolean;
}

/** What a seed thread is started with (its `workerData`): the seeds it takes them from too. */
export interface SeedThreadStart extends SeedThreadData {
  seeds: Pick<SeedClaims, "first" | "last" | "memory">;
}

/**
 * What a seed thread answers for each seed it takes, and then that it took its last (no seed is
 * left, or the range was closed).
 */
export type SeedThreadMessage =
  | { type: "result"; result: SimulationResult }
  | { type: "done" }
  | {
      type: "error";
      seed: number;
      message: string;
      stack: string | undefined;
      /** A baton error's code (a module of your own that cannot run): it is thrown again as one. */
      code: string | undefined;
    };

/**
 * The seeds `first..last` as `simulateSeeds` runs them, once it has checked its arguments: on
 * this thread and helper threads, their results yielded in seed order.
 */
export async function* inSeedOrder(
  first: number,
  last: number,
  simulation: DrawnSimulation,
  options: SimulateSeedsOptions,
): AsyncGenerator<SimulationResult> {
  const data: SeedThreadData = {
    simulation,
    checkDeterminism: options.checkDeterminism ?? false,
    traces: options.traces ?? false,
  };
  const threads = threadsFor(last - first + 1, options.threads);
  const ended = (result: SimulationResult) => {
    options.onSeedEnded?.(result);
    return result;
  };
  const here = options.callingThread ?? true;
  if (threads <= 1 && here) {
    for (let seed = first; seed <= last; seed++) yield ended(await simulateSeed(seed, data));
    return;
  }
  const seeds = new SeedClaims(first, last);
  const finished = new Map<number, SimulationResult>();
  // What ended a seed instead of its result (a crash, a module of yours that cannot run, the
  // caller's onSeedEnded), by seed: the iteration throws the first in seed order, whichever
  // thread came to its error first (it threw a later seed's when that thread was quicker).
  const failed = new Map<number, Error>();
  /** What ended a thread rather than a seed: thrown at once. */
  let failure: Error | undefined;
  let stopping = false;
  let wake: (() => void) | undefined;
  const settle = () => {
    wake?.();
    wake = undefined;
  };
  /**
   * A seed's error, or a thread's (no seed): no seed is started after it; those before it run
   * on, to find the first.
   */
  const fail = (seed: number | undefined, error: Error) => {
    if (seed === undefined) failure ??= error;
    else failed.set(seed, error);
    seeds.close();
  };
  // This thread takes seeds too (unless told not to), from the first: it runs them while the
  // helpers load baton and your modules, and beside them. A helper takes its first seed only
  // once it has loaded: one handed a seed at its start held it while it loaded (6–10 s under
  // load), and the report, in seed order, waited for it, the seeds this thread ended meanwhile
  // unreported.
  const ownSeeds = (async () => {
    if (!here) return;
    for (let seed = seeds.take(); seed !== undefined; seed = seeds.take()) {
      try {
        finished.set(seed, ended(await simulateSeed(seed, data)));
      } catch (error) {
        fail(seed, error as Error);
      }
      settle();
    }
  })();
  const helpers = Array.from({ length: here ? threads - 1 : threads }, () =>
    startSeedThread(data, seeds),
  );
  for (const helper of helpers) {
    /** It said it took its last seed: its exit is then its end, not a crash. */
    let done = false;
    helper.on("message", (message: SeedThreadMessage) => {
      if (message.type === "done") done = true;
      else if (message.type === "error") fail(message.seed, threadError(message));
      else {
        try {
          finished.set(message.result.seed, ended(message.result));
        } catch (error) {
          // Thrown by the caller's onSeedEnded: it ends the iteration, not the process.
          fail(message.result.seed, error as Error);
        }
      }
      settle();
    });
    helper.on("error", (error) => {
      fail(undefined, error);
      settle();
    });
    helper.on("exit", (code) => {
      if (!stopping && !done)
        fail(undefined, new Error(`a simulation thread exited with code ${code}`));
      settle();
    });
  }
  try {
    for (let seed = first; seed <= last; seed++) {
      while (!finished.has(seed)) {
        const error = failed.get(seed) ?? failure;
        if (error !== undefined) throw error;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
      const result = finished.get(seed)!;
      finished.delete(seed);
      yield result;
    }
  } finally {
    stopping = true;
    seeds.close();
    await Promise.all([ownSeeds, ...helpers.map((helper) => helper.terminate())]);
  }
}

/**
 * The error a helper thread answered for its seed, as this thread would have thrown it: a
 * baton error (a module of your own that does not load or cannot run the graph) as the same
 * error, else a crash of the simulator naming its seed.
 */
function threadError(message: Extract<SeedThreadMessage, { type: "error" }>): Error {
  if (message.code === "CONFIG") return new ConfigError(message.message);
  if (message.code?.startsWith("MODULE_")) {
    return new ModuleLoadError(message.code as ModuleLoadError["code"], message.message);
  }
  if (message.code !== undefined) return new BatonError(message.code, message.message);
  const crash = new Error(`seed ${message.seed}: the simulation crashed: ${message.message}`);
  crash.stack = message.stack;
  return crash;
}

/** The threads `simulateSeeds` uses for `seeds` seeds: `requested` or the cores, at most one a seed. */
export function threadsFor(seeds: number, requested = availableParallelism()): number {
  return Math.max(1, Math.min(requested, seeds));
}

/**
 * Why the two runs of a seed of your own handlers differ, when no real timer or I/O and no
 * read of `Date.now()`, `Math.random()` or the like was seen: state their module kept from the
 * run before (a stand-in for an outside service kept outside the handlers function, as the
 * README once advised, outlived the seed: the second run started from the first's), or a read
 * the simulation does not trap.
 */
const YOUR_NONDETERMINISM =
  "\nYour handlers keep state in their module outside the handlers function, which the second run starts from where the first left it (keep it with the tools' keep, which gives each seed its own), or read something else the seed does not fix, such as a value a timer of your module sets outside the handlers (use the tools' now and random)";

/**
 * One seed as `simulateSeeds` runs it, on whichever thread: twice when determinism is
 * checked, and without its trace when it passed and traces were not asked for. `onProgress`
 * (on the calling thread only: `baton sim` with one seed) follows each run.
 */
export async function simulateSeed(
  seed: number,
  data: SeedThreadData,
  hooks: Pick<SimulateOptions, "onProgress"> = {},
): Promise<SimulationResult> {
  const simulation = await yourModules(data.simulation);
  let result = await simulate({ ...simulation, ...hooks, seed });
  if (result.ok && data.checkDeterminism) {
    const again = await simulate({ ...simulation, ...hooks, seed });
    const at = firstDifference(result.trace, again.trace);
    if (at !== undefined) {
      result = {
        ...result,
        ok: false,
        violation: {
          invariant: 0,
          tracesDiffer: true,
          message: violationMessage(
            0,
            `the traces differ at line ${at + 1}:\n  first:  ${result.trace[at] ?? "(end)"}\n  second: ${again.trace[at] ?? "(end)"}${simulation.handlers === undefined ? "" : YOUR_NONDETERMINISM}`,
          ),
        },
      };
    }
  }
  return result.ok && !data.traces ? { ...result, trace: [] } : result;
}

/**
 * `simulation` as `simulate` takes it: its `modules` imported (once per thread) as the graph
 * and handlers they export.
 *
 * @example
 * ```ts
 * await simulate({ ...(await yourModules({ modules: { graph: "g.ts", handlers: "sim.ts" } })), seed: 1 });
 * ```
 */
export async function yourModules({
  modules,
  ...drawn
}: DrawnSimulation): Promise<Omit<SimulateOptions, "seed">> {
  return modules === undefined ? drawn : { ...drawn, ...(await loadSimModules(modules)) };
}

function firstDifference(a: readonly string[], b: readonly string[]): number | undefined {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return undefined;
}

/**
 * A helper thread running `seedThread`: once it has loaded baton and your modules it takes
 * seeds from `seeds` until none is left, answering a `SeedThreadMessage` for each, then `done`.
 * From baton's TypeScript sources (the `baton` command, the tests) the thread first
 * registers the command's module hooks, as `bin/baton.js` does, so a graph or handlers module
 * of yours and its `import "baton"` load as on the command's main thread; from the compiled
 * package it loads the compiled file alone, which registers them (resolving `import "baton"`
 * to the compiled copy) at its first import of a module of yours (`importUserModule`).
 */
export function startSeedThread(data: SeedThreadData, seeds: SeedClaims): Worker {
  const { first, last, memory } = seeds;
  const workerData: SeedThreadStart = { ...data, seeds: { first, last, memory } };
  if (!import.meta.url.endsWith(".ts")) {
    return new Worker(new URL("./seedThread.js", import.meta.url), { workerData });
  }
  const hooks = new URL("../../bin/registerHooks.mjs", import.meta.url);
  const entry = new URL("./seedThread.ts", import.meta.url);
  const boot = `import(${JSON.stringify(hooks.href)}).then((hooks) => { hooks.registerHooks(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(boot, { eval: true, workerData });
}
