import { AsyncLocalStorage, createHook } from "node:async_hooks";
import type { Handler, HandlerDefinition, JobContext, JobModule } from "../runtime/jobModule.ts";

/** The job whose handler started a piece of real asynchronous work, and what the work was. */
export interface RealWork {
  jobId: string;
  kind: string;
  /** The async resource's type, as `async_hooks` names it (`Timeout`, `FSREQCALLBACK`, …). */
  type: string;
}

/**
 * Async work that runs at a point the simulation's runner fixes, whatever the real clock
 * says: promises, `queueMicrotask` and `process.nextTick` run before the runner's next step,
 * and a `setImmediate` runs in the same turn of the event loop as the runner's own.
 */
const DETERMINISTIC = new Set(["PROMISE", "Microtask", "TickObject", "Immediate"]);

/**
 * Watches the handlers of a simulation's own job module for work that real time, not virtual
 * time, completes: a real timer, file or network I/O. The simulation's runner moves virtual
 * time as fast as it can, so such a callback lands at a virtual time that differs from run to
 * run (a 10 ms `setTimeout` lands about 10 real ms in, a minute of virtual time or more), and
 * the seed's trace with it. Each handler runs in an async context of its own, and an
 * `async_hooks` hook notes what real work that context starts; `escaped` is the first whose
 * callback ran, and `pending` what is still waiting. A timer cleared before it fires is no
 * harm and is not reported. Work started from the abort listener of a signal escapes the
 * watch (the listener runs in the aborter's context).
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
  /** The first real work of a handler whose callback ran. */
  escaped: RealWork | undefined;
  private readonly context = new AsyncLocalStorage<{ jobId: string; kind: string }>();
  private readonly started = new Map<number, RealWork>();
  private readonly hook = createHook({
    init: (asyncId, type) => {
      if (DETERMINISTIC.has(type)) return;
      const job = this.context.getStore();
      if (job !== undefined) this.started.set(asyncId, { ...job, type });
    },
    before: (asyncId) => {
      this.escaped ??= this.started.get(asyncId);
    },
    destroy: (asyncId) => {
      this.started.delete(asyncId);
    },
  });

  /** Starts watching (the hook is global to the process: stop it when the run is over). */
  start(): void {
    this.hook.enable();
  }

  stop(): void {
    this.hook.disable();
    this.started.clear();
  }

  /** The job whose handler is running in the current async context, if any. */
  get current(): { jobId: string; kind: string } | undefined {
    return this.context.getStore();
  }

  /** Real work handlers started that has not completed, nor been cleared, yet. */
  get pending(): RealWork[] {
    return [...this.started.values()];
  }

  /**
   * `module` with each handler run in its job's watched context (rank jobs, and entries that
   * are no handler at all, as they are: loading the module refuses those), given the ctx
   * `contextOf` makes of its own (the simulation's `traceLog`).
   */
  wrap(module: JobModule, contextOf: (ctx: JobContext) => JobContext = (ctx) => ctx): JobModule {
    const watched = (kind: string, run: Handler): Handler => {
      return (input, ctx) =>
        this.context.run({ jobId: ctx.job.id, kind }, () => run(input, contextOf(ctx)));
    };
    return Object.fromEntries(
      Object.entries(module).map(([kind, entry]) => {
        if (typeof entry === "function") return [kind, watched(kind, entry)];
        if (
          typeof entry === "object" &&
          entry !== null &&
          typeof Reflect.get(entry, "run") === "function"
        )
          return [kind, { ...entry, run: watched(kind, (entry as HandlerDefinition).run) }];
        return [kind, entry];
      }),
    );
  }
}

/**
 * What a piece of real work is, in a user's words.
 *
 * @example
 * ```ts
 * describeRealWork("Timeout"); // "a real timer (setTimeout or setInterval)"
 * ```
 */
export function describeRealWork(type: string): string {
  if (type === "Timeout") return "a real timer (setTimeout or setInterval)";
  if (/^(FS|FILEHANDLE|STATWATCHER)/.test(type)) return `real file I/O (${type})`;
  if (/^(TCP|UDP|PIPE|HTTP|TLS|GETADDRINFO|GETNAMEINFO|QUERY)/.test(type)) {
    return `real network I/O (${type})`;
  }
  return `real asynchronous work (${type})`;
}
