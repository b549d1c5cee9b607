/**
 * The largest drawn simulation `simulate` and `baton sim` take. Beyond them a seed does not
 * end in reasonable time: the checker holds every job to account after every coordinator
 * event, so a seed's cost grows with the square of its jobs (1,000 jobs on 8 workers: 2 s;
 * 10,000: 70 s), and every worker pings and is pinged (1,000 workers on 100 jobs: 34 s and
 * 0.9 GB). `--jobs 100000000` used to run silently for ever, its memory growing. A drawn
 * rank group's cost grows faster than its world (10,000 ranks: 5 s a seed; 20,000: 16 s;
 * 100,000 did not end in minutes), and each thread holds about 56 MB (500 threads asked for
 * on 24 GB would not fit; past the cores they add nothing). A virtual time given (`until`, a
 * fault's time and length, a slow link's extra latency) is at most 30 days, which covers the
 * liveness bound of the largest drawn run (10,000 jobs on one worker: 28 days): a day of
 * virtual time costs a stuck run about 30 s of pings, and past 8.64e15 ms a coordinator-crash
 * failed every seed with "RangeError: Invalid time value".
 *
 * @example
 * ```ts
 * const report = await simulate({ seed: 1, jobs: Math.min(wanted, SIM_LIMITS.jobs) }); // more: a ConfigError
 * ```
 */
export const SIM_LIMITS = {
  /** Jobs in a drawn graph. */
  jobs: 10_000,
  /** In-process workers. */
  workers: 1_000,
  /** The largest world size of a drawn rank group. */
  world: 10_000,
  /** Threads simulating seeds side by side. */
  threads: 64,
  /** Virtual milliseconds: `until`, and a fault's time, length and extra latency (30 days). */
  virtualMs: 2_592_000_000,
  /** Seeds are unsigned 32-bit integers. */
  seed: 0xffff_ffff,
} as const;
