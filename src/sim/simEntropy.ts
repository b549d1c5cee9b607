import { customRandom, urlAlphabet } from "nanoid";
import type { Entropy } from "../runtime/ports.ts";

/**
 * The simulation's randomness: xoshiro128** (Blackman and Vigna), seeded through splitmix32,
 * written here so that the stream depends on nothing but the seed. Everything random in a
 * simulated run draws from one of these: floats, ids (nanoid's `customRandom` over the same
 * URL-safe alphabet as the Node port) and bytes. `fork(label)` derives an independent stream,
 * so that, for instance, the graph drawn from a seed does not change when the fault plan does.
 *
 * @example
 * ```ts
 * const entropy = new SimEntropy(42);
 * entropy.random(); // the same float for seed 42, every time
 * entropy.id(12); // the same id too
 * entropy.fork("faults").int(0, 9);
 * ```
 */
export class SimEntropy implements Entropy {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private readonly ids = new Map<number, () => string>();

  constructor(readonly seed: number | string) {
    let state = typeof seed === "number" ? seed >>> 0 : hashString(seed);
    const next = () => {
      state = (state + 0x9e3779b9) | 0;
      let z = state;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
  }

  /** The next 32 random bits, as an unsigned integer. */
  next32(): number {
    const result = Math.imul(rotl(Math.imul(this.b, 5), 7), 9) >>> 0;
    const t = this.b << 9;
    this.c ^= this.a;
    this.d ^= this.b;
    this.b ^= this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = rotl(this.d, 11);
    return result;
  }

  random(): number {
    return (this.next32() * 2 ** 21 + (this.next32() >>> 11)) / 2 ** 53;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.random() < p;
  }

  /** One of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  id(size = 21): string {
    let make = this.ids.get(size);
    if (make === undefined) {
      make = customRandom(urlAlphabet, size, (n) => this.bytes(n));
      this.ids.set(size, make);
    }
    return make();
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 4) {
      let word = this.next32();
      for (let j = i; j < Math.min(i + 4, n); j++) {
        out[j] = word & 0xff;
        word >>>= 8;
      }
    }
    return out;
  }

  /** An independent stream derived from this one's seed and `label`. */
  fork(label: string): SimEntropy {
    return new SimEntropy(`${this.seed}/${label}`);
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** FNV-1a over the UTF-16 units of `text`. */
function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
