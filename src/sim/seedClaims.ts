/**
 * The seeds `first..last` of a range, taken one at a time in seed order by the threads that run
 * them, through a count they share: a helper thread takes its next seed itself, once it is ready
 * to run it (its first once it has loaded baton and your modules), without waiting for the
 * calling thread, whose event loop a seed running there holds. Each seed is taken by one thread.
 *
 * @example
 * ```ts
 * const seeds = new SeedClaims(1, 100);
 * for (let seed = seeds.take(); seed !== undefined; seed = seeds.take()) await simulateSeed(seed, data);
 * // on a helper thread, handed seeds' first, last and memory: new SeedClaims(first, last, memory)
 * ```
 */
export class SeedClaims {
  /** How many seeds were taken: one 64-bit count, as a range holds up to 2³² seeds. */
  private readonly taken: BigInt64Array;

  constructor(
    readonly first: number,
    readonly last: number,
    /** The count's memory, shared with every thread handed it. */
    readonly memory = new SharedArrayBuffer(BigInt64Array.BYTES_PER_ELEMENT),
  ) {
    this.taken = new BigInt64Array(memory);
  }

  /** The next seed no thread took, or `undefined` when none is left or the range was closed. */
  take(): number | undefined {
    const seed = this.first + Number(Atomics.add(this.taken, 0, 1n));
    return seed <= this.last ? seed : undefined;
  }

  /** No thread takes a seed after this (an error ended the range, or its caller stopped). */
  close(): void {
    Atomics.store(this.taken, 0, BigInt(this.last - this.first + 1));
  }
}
