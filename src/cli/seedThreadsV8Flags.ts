import { setFlagsFromString } from "node:v8";

/**
 * The V8 flags `baton sim` sets before it runs seeds on two threads or more. V8's scavenger (its
 * collection of young objects, about a tenth of a seed's CPU) runs on helper threads beside the
 * thread that asked for it, which on an otherwise idle core makes it finish sooner; when every
 * core runs a seed, its helpers only take the core from another seed. Measured with
 * `npm run bench -- sim` (ARCHITECTURE.md, "Performance, measured", thirty-sixth session):
 * on 2 threads 26.75, 27.51, 29.51 seeds/s against 23.4, 25.53, 25.39 without it, alternating;
 * on one thread, where the flag is not set, it was slower (13.48, 13.21, 14.58 against 15.17,
 * 14.0, 16.69). A flag V8 reads at every scavenge, so it can be set once Node runs
 * (`--single-threaded-gc`, which also stops concurrent marking, cannot: V8 aborts).
 */
export const SEED_THREADS_V8_FLAGS = ["--no-parallel-scavenge"];

/**
 * Sets {@link SEED_THREADS_V8_FLAGS} in this process when `threads` is 2 or more, for the
 * seeds' threads (which share the process's V8); returns what puts V8's defaults back.
 *
 * @example
 * const restore = setSeedThreadsV8Flags(threadsFor(seeds));
 * for await (const report of simulateSeeds(1, seeds, simulation, { threads })) use(report);
 * restore();
 */
export function setSeedThreadsV8Flags(threads: number): () => void {
  if (threads < 2) return () => {};
  for (const flag of SEED_THREADS_V8_FLAGS) setFlagsFromString(flag);
  return () => {
    for (const flag of SEED_THREADS_V8_FLAGS) setFlagsFromString(flag.replace(/^--no-/, "--"));
  };
}
