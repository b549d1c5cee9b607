import { randomFillSync } from "node:crypto";
import { nanoid } from "nanoid";
import type { Entropy } from "./ports.ts";

/**
 * The Entropy port on `node:crypto`: floats with 53 random bits, nanoid's URL-safe ids
 * (alphabet `A-Za-z0-9_-`), and random bytes.
 *
 * @example
 * ```ts
 * const entropy = nodeEntropy();
 * const jobId = entropy.id(); // "V1StGXR8_Z5jdHi6B-myT"
 * const secret = entropy.bytes(32);
 * const jitter = 100 * entropy.random();
 * ```
 */
export function nodeEntropy(): Entropy {
  // Floats come from a pool refilled 512 draws at a time: one crypto call per draw is slow.
  const pool = new Uint32Array(1024);
  let next = pool.length;
  return {
    random() {
      if (next === pool.length) {
        randomFillSync(pool);
        next = 0;
      }
      const high = pool[next]!;
      const low = pool[next + 1]!;
      next += 2;
      return (high * 2 ** 21 + (low >>> 11)) / 2 ** 53;
    },
    id: (size = 21) => nanoid(size),
    bytes: (n) => randomFillSync(new Uint8Array(n)),
  };
}
