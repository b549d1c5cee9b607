import { NonRetryableError } from "../errors.ts";
import { type JobSpec, job } from "../graph/job.ts";
import type { JobContext, JobModule } from "../runtime/jobModule.ts";
import { SimEntropy } from "./simEntropy.ts";

/** The most retries a drawn job has (the default, 3, is the most too). */
const MAX_DRAWN_RETRIES = 3;

/** The input of a generated job: how long it works, which attempts fail, whether it needs more. */
export interface SimJobInput {
  i: number;
  ms: number;
  /**
   * Attempts 1..failures throw; 4, more than any drawn `retries` allow, throws a
   * `NonRetryableError` (the job fails on its first attempt).
   */
  failures: number;
  /** Calls `ctx.need` for a `leaf` job (so its first attempt ends blocked). */
  need: boolean;
  /** The first attempt works three times as long (so a timeout may cut only that one short). */
  slowFirst: boolean;
  /** Works on when its AbortSignal fires (a cancel, a timeout), as a careless handler does. */
  ignoresAbort: boolean;
}

/**
 * What a simulated handler may use: time and randomness of the simulation, its world, and
 * checks of your own.
 */
export interface SimTools {
  /**
   * Resolves after `ms` of virtual time, rounded up to a whole ms (never, if the process
   * crashes first).
   */
  sleep(ms: number): Promise<void>;
  /** The virtual time, in whole ms (`Date.now()` in a handler fails the seed: it is real). */
  now(): number;
  /**
   * A number in [0, 1) drawn from the seed (`Math.random()` or crypto's in a handler fails the
   * seed: they are real).
   */
  random(): number;
  /**
   * The value `make` gives for `name`, made once per seed: every coordinator incarnation of
   * the seed gets the same one (it outlives a crash, as an outside service does), and the
   * next seed a new one. Keep here what your handlers write to outside the run (a stand-in for
   * a payment provider, a database): state in your module outlives the seed too, so a seed
   * run after others on a thread would start from theirs, and its replay would differ.
   *
   * @example
   * ```ts
   * export default ({ sleep, keep }: SimTools) => {
   *   const charged = keep("charged", () => new Map<number, number>());
   *   return { charge: async (id: number) => { charged.set(id, (charged.get(id) ?? 0) + 1); await sleep(50); } };
   * };
   * ```
   */
  keep<T>(name: string, make: () => T): T;
  /**
   * Fails the seed when `holds` is false (invariant 15, naming the job whose handler said so
   * and `message`), as a broken invariant of baton's own does: printed with a replay command,
   * shrunk. A handler that throws only fails its job, which breaks no invariant, so a check of
   * your own (an order charged once) goes here. Inside a handler, it then throws a
   * `NonRetryableError` to stop it.
   *
   * @example
   * ```ts
   * export default ({ keep, invariant }: SimTools) => {
   *   const charged = keep("charged", () => new Map<number, number>());
   *   return {
   *     reconcile: () => {
   *       for (const [order, times] of charged) invariant(times === 1, `order ${order} charged ${times} times`);
   *     },
   *   };
   * };
   * ```
   */
  invariant(holds: unknown, message: string): void;
}

/**
 * A graph of `count` jobs drawn from `seed`. Job `i` is drawn from its own stream, so the
 * graph of n jobs is the first n jobs of any larger one: shrinking the job count keeps the
 * jobs that are left. Each job works 50 ms to 60 s of virtual time (log-uniform), depends on up to 3 earlier jobs, may
 * fail its first attempts (sometimes more often than it may retry), may need a `leaf` job
 * through `ctx.need`, and is of kind `a` or `b` (a throttle may apply to `b`). Some jobs have
 * a timeout of 0.6–2.6 times their work and a first attempt three times as slow: every
 * attempt, only the first, or none runs out of time. Half the handlers ignore their
 * AbortSignal, so the coordinator must take a timed-out lease back by its deadline.
 *
 * @example
 * ```ts
 * const graph = simGraph(7, 100);
 * graph.length; // 100
 * ```
 */
export function simGraph(seed: number, count: number): JobSpec[] {
  const jobs: JobSpec[] = [];
  const root = new SimEntropy(seed).fork("graph");
  for (let i = 0; i < count; i++) {
    const r = root.fork(String(i));
    const after = new Set<JobSpec>();
    const deps = i === 0 ? 0 : r.int(0, 3);
    for (let d = 0; d < deps; d++) after.add(jobs[r.int(Math.max(0, i - 20), i - 1)]!);
    const input: SimJobInput = {
      i,
      // Log-uniform from 50 ms to 60 s: mostly short jobs, some long enough to span faults.
      ms: Math.round(50 * 1200 ** r.random()),
      failures: r.chance(0.15) ? r.int(1, 3) : r.chance(0.02) ? MAX_DRAWN_RETRIES + 1 : 0,
      need: r.chance(0.08),
      slowFirst: false,
      ignoresAbort: false,
    };
    const retries = r.chance(0.2) ? r.int(0, MAX_DRAWN_RETRIES) : undefined;
    const backoff = r.chance(0.1) ? { initialMs: r.int(50, 500) } : undefined;
    const timeoutMs = r.chance(0.15) ? Math.round(input.ms * (0.6 + 2 * r.random())) : undefined;
    input.slowFirst = timeoutMs !== undefined;
    input.ignoresAbort = r.chance(0.5);
    jobs.push(
      job(r.chance(0.3) ? "b" : "a", input, {
        after: [...after],
        ...(retries !== undefined && { retries }),
        ...(backoff && { backoff }),
        ...(timeoutMs !== undefined && { timeoutMs }),
      }),
    );
  }
  return jobs;
}

/**
 * The handlers of the generated graph: `a` and `b` work for `ms` of virtual time (three times
 * that on the first attempt if `slowFirst`; until their AbortSignal fires, unless
 * `ignoresAbort`), fail their first `failures` attempts (a job drawn to fail more often than
 * any job may retry says so at once, with a `NonRetryableError`: protocol 6's path, under the
 * same faults), and may `ctx.need` a `leaf`, which doubles its input at once.
 *
 * @example
 * ```ts
 * const module = simJobs(tools);
 * await module.a({ i: 0, ms: 10, failures: 0, need: false, slowFirst: false, ignoresAbort: true }, ctx);
 * ```
 */
export function simJobs(tools: SimTools): JobModule {
  const work = async (input: SimJobInput, ctx: JobContext) => {
    const slept = tools.sleep(input.slowFirst && ctx.job.attempt === 1 ? 3 * input.ms : input.ms);
    await (input.ignoresAbort ? slept : untilAborted(slept, ctx.signal));
    if (ctx.job.attempt <= input.failures) {
      const message = `planned failure of job ${input.i}, attempt ${ctx.job.attempt}`;
      throw input.failures > MAX_DRAWN_RETRIES
        ? new NonRetryableError(message)
        : new Error(message);
    }
    const needed = input.need ? ctx.need(job("leaf", { of: input.i }))[0]! : null;
    return { i: input.i, deps: ctx.results.length, needed };
  };
  return {
    a: work,
    b: work,
    leaf: (input: { of: number }) => input.of * 2,
  };
}

/** `work`, or the signal's reason as soon as the signal fires. */
function untilAborted(work: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    void work.then(() => {
      signal.removeEventListener("abort", abort);
      resolve();
    });
  });
}
