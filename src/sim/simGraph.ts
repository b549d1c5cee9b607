import { type JobSpec, job } from "../graph/job.ts";
import type { JobContext, JobModule } from "../runtime/jobModule.ts";
import { SimEntropy } from "./simEntropy.ts";

/** The input of a generated job: how long it works, which attempts fail, whether it needs more. */
export interface SimJobInput {
  i: number;
  ms: number;
  /** Attempts 1..failures throw. */
  failures: number;
  /** Calls `ctx.need` for a `leaf` job (so its first attempt ends blocked). */
  need: boolean;
}

/** What a simulated handler may use: time and randomness of the simulation. */
export interface SimTools {
  /** Resolves after `ms` of virtual time (never, if the process crashes first). */
  sleep(ms: number): Promise<void>;
  now(): number;
  random(): number;
}

/**
 * A graph of `count` jobs drawn from `seed`. Job `i` is drawn from its own stream, so the
 * graph of n jobs is the first n jobs of any larger one: shrinking the job count keeps the
 * jobs that are left. Each job works 50 ms to 60 s of virtual time (log-uniform), depends on up to 3 earlier jobs, may
 * fail its first attempts (sometimes more often than it may retry), may need a `leaf` job
 * through `ctx.need`, and is of kind `a` or `b` (a throttle may apply to `b`).
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
      failures: r.chance(0.15) ? r.int(1, 3) : r.chance(0.02) ? 4 : 0,
      need: r.chance(0.08),
    };
    const retries = r.chance(0.2) ? r.int(0, 3) : undefined;
    const backoff = r.chance(0.1) ? { initialMs: r.int(50, 500) } : undefined;
    jobs.push(
      job(r.chance(0.3) ? "b" : "a", input, {
        after: [...after],
        ...(retries !== undefined && { retries }),
        ...(backoff && { backoff }),
      }),
    );
  }
  return jobs;
}

/**
 * The handlers of the generated graph: `a` and `b` work for `ms` of virtual time, fail their
 * first `failures` attempts, and may `ctx.need` a `leaf`, which doubles its input at once.
 *
 * @example
 * ```ts
 * const module = simJobs(tools);
 * await module.a({ i: 0, ms: 10, failures: 0, need: false }, ctx);
 * ```
 */
export function simJobs(tools: SimTools): JobModule {
  const work = async (input: SimJobInput, ctx: JobContext) => {
    await tools.sleep(input.ms);
    if (ctx.job.attempt <= input.failures) {
      throw new Error(`planned failure of job ${input.i}, attempt ${ctx.job.attempt}`);
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
