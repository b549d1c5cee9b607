import { asyncWrapProviders, createHook, executionAsyncResource } from "node:async_hooks";
import type { Handler, JobContext, JobModule } from "../runtime/jobModule.ts";
import { mapHandlers } from "./mapHandlers.ts";
import { REAL_READS, type RealReadApi, trapRealReads } from "./realReads.ts";
import { realWorkKind } from "./realWorkKind.ts";

/** The job whose handler started a piece of real asynchronous work, and what the work was. */
export interface RealWork {
  jobId: string;
  kind: string;
  /** The async resource's type, as `async_hooks` names it (`Timeout`, `FSREQCALLBACK`, …). */
  type: string;
}

/** The job whose handler read the real clock or real randomness, and the API it called. */
export interface RealRead {
  jobId: string;
  kind: string;
  api: RealReadApi;
  /** Where the call was made in your code, as ` (at file:line:column)`; "" when not known. */
  at: string;
}

/**
 * Async work that real time completes: timers, and Node's own resources (`asyncWrapProviders`:
 * file and network I/O, child processes, crypto's thread-pool work, …) but promises. Not real
 * work: promises, `queueMicrotask` and `process.nextTick` run before the runner's next step, a
 * `setImmediate` in the same turn of the event loop as the runner's own, and a library's own
 * `AsyncResource` (p-limit's `AsyncResource.bind`, an `EventEmitterAsyncResource`) runs its
 * callbacks where its code calls them: those failed seeds as "real asynchronous work".
 */
const REAL = new Set(
  ["Timeout", ...Object.keys(asyncWrapProviders)].filter((type) => type !== "PROMISE"),
);

/** The job a handler runs for: the context its async work carries. */
interface Job {
  jobId: string;
  kind: string;
}

/** Real work a handler started, and the resource Node made for it (see `left`). */
interface Started {
  work: RealWork;
  resource: WeakRef<object>;
}

/** The least size at which `RealWorkWatch` sweeps its started work of what is no longer left. */
const SWEEP_AT_LEAST = 64;

/**
 * Whether the real work a handler started is still left: a timer Node has neither fired nor
 * cleared (both set its `Timeout`'s `_destroyed` at once), or another resource not yet
 * collected.
 */
function left(work: RealWork, resource: WeakRef<object>): boolean {
  const alive = resource.deref();
  if (alive === undefined) return false;
  return work.type !== "Timeout" || !destroyed(alive);
}

/** A Node `Timeout` or `Immediate` that has run (a timer's last time) or been cleared. */
function destroyed(resource: object): boolean {
  return (resource as { _destroyed?: boolean })._destroyed === true;
}

/**
 * Watches the handlers of a simulation's own job module for work that real time, not virtual
 * time, completes: a real timer, file or network I/O. The simulation's runner moves virtual
 * time as fast as it can, so such a callback lands at a virtual time that differs from run to
 * run (a 10 ms `setTimeout` lands about 10 real ms in, a minute of virtual time or more), and
 * the seed's trace with it. Each handler runs in an async context of its own, and an
 * `async_hooks` hook notes what real work that context starts; `escaped` is the first whose
 * callback ran (or a dynamic `import()`, from when it is asked), `pending` what is still waiting and `timerLeft` a timer neither fired nor
 * cleared. A timer cleared before it fires is no harm and is not reported. While it watches,
 * the real clock and real randomness (`Date.now()`, `Math.random()`, … `REAL_READS`) are
 * trapped too: `read` is the first call a handler made (what the engine, XState or pino call
 * outside a handler is none of its business). The handler's context is what it runs later too:
 * its promise continuations, microtasks, ticks and immediates, and the abort listeners of its
 * `ctx.signal`, which aborts in that context.
 *
 * The context is the watch's own, as `AsyncLocalStorage` keeps one but cheaper: the hook's
 * `init` gives each async resource the job of the resource that was executing when it was made
 * (a `WeakMap`), and `run` gives the executing one its job while the handler runs. The hook has
 * no `destroy`: it made Node track the end of every promise of the process. A started timer is
 * kept by a `WeakRef` and is left while Node has neither fired nor cleared it (its `Timeout`'s
 * `_destroyed`, internal but held to this by Node's own tests, which both set at once; Node has
 * no public way to ask); Node's other resources are pending until they are collected.
 *
 * The hook also tells the runner, which gives the event loop a turn only every 100 steps, when
 * a handler's immediate waits (`immediatePending`: a turn before the next step) or a handler
 * queued a tick (`tickQueued`): they run where a turn each step ran them, and a seed's trace
 * is the one it was then.
 *
 * @example
 * ```ts
 * const watch = new RealWorkWatch();
 * watch.start();
 * const jobs = watch.wrap({ fetch: async () => (await readFile("in.json")).length });
 * // … run the simulation with `jobs` …
 * watch.stop();
 * watch.escaped; // { jobId: "…", kind: "fetch", type: "FSREQPROMISE" }
 * ```
 */
export class RealWorkWatch {
  /**
   * @param says How its refusal of a global it cannot trap begins (`trapRealReads`):
   * `simulate: `, or nothing under `baton sim` (`messagePrefix`).
   */
  constructor(private readonly says = "simulate: ") {}

  /** The first real work of a handler whose callback ran, or a module load it asked for. */
  escaped: RealWork | undefined;
  /** The first read of the real clock or real randomness a handler made. */
  read: RealRead | undefined;
  /** `read` was made before any work `escaped`. */
  private readFirst = false;
  private release: (() => void) | undefined;
  /** The job of each async resource made in a handler's context, whose callbacks run in it. */
  private readonly jobs = new WeakMap<object, Job>();
  private readonly started = new Map<number, Started>();
  /** The immediates handlers queued that had not run when `immediatePending` last looked. */
  private immediates: object[] = [];
  /** A handler queued a tick since `tickQueued` was last asked. */
  private ticked = false;
  /** `started` is swept of work no longer left when it grows to this size. */
  private sweepAt = SWEEP_AT_LEAST;
  private readonly hook = createHook({
    init: (asyncId, type, _triggerId, resource) => {
      const job = this.jobs.get(executionAsyncResource());
      if (job === undefined) return;
      this.jobs.set(resource, job);
      if (type === "Immediate") this.immediates.push(resource);
      else if (type === "TickObject") this.ticked = true;
      if (!REAL.has(type)) return;
      const work = { ...job, type };
      // A dynamic import() is real work once asked: which of the module loader's callbacks
      // runs before the import is answered, and when, is the machine's (under load, one that
      // ran after the seed was over let it pass).
      if (this.escaped === undefined && realWorkKind(type) === "moduleLoad") this.escaped = work;
      this.started.set(asyncId, { work, resource: new WeakRef(resource) });
      if (this.started.size >= this.sweepAt) this.sweep();
    },
    before: (asyncId) => {
      if (this.escaped === undefined) this.escaped = this.started.get(asyncId)?.work;
    },
  });

  /**
   * Starts watching (the hook and the trapped globals are the process's or the thread's: stop
   * it when the run is over, even if it throws).
   */
  start(): void {
    // Trapped first: a trap refused (a frozen global) leaves the hook off.
    this.release ??= trapRealReads((api, where) => {
      if (this.read !== undefined) return;
      const job = this.current;
      if (job === undefined) return;
      this.read = { ...job, api, at: where() };
      this.readFirst = this.escaped === undefined;
    }, this.says);
    this.hook.enable();
  }

  stop(): void {
    this.hook.disable();
    this.started.clear();
    this.release?.();
    this.release = undefined;
  }

  /**
   * The first real timer a handler started that has neither fired nor been cleared. Only a
   * timer says for sure that work is left: Node's other resources count as pending until they
   * are collected once closed (the handle sync zlib uses), whatever a handler did.
   */
  get timerLeft(): RealWork | undefined {
    for (const { work, resource } of this.started.values()) {
      if (work.type === "Timeout" && left(work, resource)) return work;
    }
    return undefined;
  }

  /**
   * The first of `escaped` and `read`: what the seed fails for. Both are often seen between two
   * steps (a `fetch` reads `performance.now()`, then its connection lands), and the step's
   * check named the work or the read as real time had it, one run in 20 the other.
   */
  get first(): { work: RealWork } | { read: RealRead } | undefined {
    if (this.read !== undefined && (this.readFirst || this.escaped === undefined)) {
      return { read: this.read };
    }
    return this.escaped && { work: this.escaped };
  }

  /**
   * Whether an immediate a handler queued has neither run nor been cleared (Node sets its
   * `_destroyed` for both, as a timer's): the runner gives the event loop a turn then.
   */
  immediatePending(): boolean {
    if (this.immediates.length === 0) return false;
    this.immediates = this.immediates.filter((immediate) => !destroyed(immediate));
    return this.immediates.length > 0;
  }

  /**
   * Whether a handler queued a tick since the last call: the runner waits for them without a
   * turn (`ticksSettled`) until two waits in a row saw none.
   */
  tickQueued(): boolean {
    const ticked = this.ticked;
    this.ticked = false;
    return ticked;
  }

  /** The job whose handler is running in the current async context, if any. */
  get current(): Job | undefined {
    return this.jobs.get(executionAsyncResource());
  }

  /** Real work handlers started that has not completed, nor been cleared, yet. */
  get pending(): RealWork[] {
    this.sweep();
    return [...this.started.values()].map(({ work }) => work);
  }

  /** Forgets the work no longer left, so that a handler's cleared timers do not pile up. */
  private sweep(): void {
    for (const [asyncId, { work, resource }] of this.started) {
      if (!left(work, resource)) this.started.delete(asyncId);
    }
    this.sweepAt = Math.max(SWEEP_AT_LEAST, 2 * this.started.size);
  }

  /**
   * Runs `fn` in `job`'s context: the resource executing now carries the job until `fn`
   * returns (what `AsyncLocalStorage.run` does with a property of it).
   */
  private run<T>(job: Job, fn: () => T): T {
    const resource = executionAsyncResource();
    const outer = this.jobs.get(resource);
    this.jobs.set(resource, job);
    try {
      return fn();
    } finally {
      if (outer === undefined) this.jobs.delete(resource);
      else this.jobs.set(resource, outer);
    }
  }

  /**
   * `module` with each handler run in its job's watched context (rank jobs, and entries that
   * are no handler at all, as they are: loading the module refuses those), given the ctx
   * `contextOf` makes of its own (the simulation's `traceLog`).
   */
  wrap(module: JobModule, contextOf: (ctx: JobContext) => JobContext = (ctx) => ctx): JobModule {
    const watched = (kind: string, run: Handler): Handler => {
      return (input, ctx) => {
        const job = { jobId: ctx.job.id, kind };
        return this.run(job, () => run(input, contextOf(this.abortingHere(ctx, job))));
      };
    };
    return mapHandlers(module, watched);
  }

  /**
   * `ctx` whose `signal` aborts in `job`'s context. The engine aborts its own signal where it
   * stops the attempt (a timeout, a lost connection, a crash), and a handler's abort listeners
   * ran there, outside the watch: a `Date.now()` or a real timer in one passed the seed. The
   * handler's signal is made on first use, as the engine's is, and aborts with its reason
   * (`AbortSignal.any` of it, and `events.once` on it, run in the job's context too).
   */
  private abortingHere(ctx: JobContext, job: Job): JobContext {
    let signal: AbortSignal | undefined;
    return new Proxy(ctx, {
      get: (target, property) => {
        if (property !== "signal") return Reflect.get(target, property, target);
        if (signal !== undefined) return signal;
        const engine = target.signal;
        const controller = new AbortController();
        const abort = () => this.run(job, () => controller.abort(engine.reason));
        if (engine.aborted) abort();
        else engine.addEventListener("abort", abort, { once: true });
        signal = controller.signal;
        return signal;
      },
    });
  }
}

/**
 * What a piece of real work is, in a user's words (by `realWorkKind`: a file watcher is file
 * I/O here too).
 *
 * @example
 * ```ts
 * describeRealWork("Timeout"); // "a real timer (setTimeout or setInterval)"
 * ```
 */
export function describeRealWork(type: string): string {
  switch (realWorkKind(type)) {
    case "timer":
      return "a real timer (setTimeout or setInterval)";
    case "fileRead":
    case "fileWatch":
      return `real file I/O (${type})`;
    case "network":
      return `real network I/O (${type})`;
    default:
      return `real asynchronous work (${type})`;
  }
}

/**
 * What a handler's read of the real clock or real randomness does to a seed, and the
 * simulation tool to use instead.
 *
 * @example
 * ```ts
 * describeRealRead({ jobId: "a1", kind: "stamp", api: "Date.now()", at: " (at /app/sim.ts:4:9)" });
 * // "the handler of job a1 (stamp) called Date.now() (at /app/sim.ts:4:9), which reads the real clock: …"
 * ```
 */
export function describeRealRead({ jobId, kind, api, at }: RealRead): string {
  const what =
    REAL_READS[api] === "now"
      ? "reads the real clock, not virtual time"
      : "draws real randomness, not the seed's";
  const instead =
    REAL_READS[api] === "now"
      ? "the simulation tools' now (virtual ms) instead"
      : "the simulation tools' random (a number in [0, 1) drawn from the seed) instead, and build ids from it";
  return `the handler of job ${jobId} (${kind}) called ${api}${at}, which ${what}: what it gives differs from run to run, and so may what the handler does with it, and the trace with it. Use ${instead}`;
}
