import { describe, expect, it } from "vitest";
import { SimEntropy } from "../../src/sim/simEntropy.ts";

describe("SimEntropy", () => {
  it("gives the same stream for the same seed and another for another seed", () => {
    const draw = (seed: number) => {
      const e = new SimEntropy(seed);
      return [e.random(), e.id(12), [...e.bytes(5)], e.int(0, 1000)];
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it("draws floats in [0, 1) spread over the interval", () => {
    const e = new SimEntropy(7);
    const buckets = new Array(10).fill(0);
    for (let i = 0; i < 10_000; i++) {
      const x = e.random();
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
      buckets[Math.floor(x * 10)]++;
    }
    for (const count of buckets) expect(count).toBeGreaterThan(800);
  });

  it("makes URL-safe ids of the asked size, and bytes of the asked length", () => {
    const e = new SimEntropy(1);
    expect(e.id()).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(e.id(32)).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(e.bytes(7)).toHaveLength(7);
    expect(new Set(Array.from({ length: 100 }, () => e.id(12))).size).toBe(100);
  });

  it("forks independent streams that depend only on the seed and the label", () => {
    const a = new SimEntropy(9);
    a.random();
    const forkAfterUse = a.fork("net").random();
    const forkFresh = new SimEntropy(9).fork("net").random();
    expect(forkAfterUse).toBe(forkFresh);
    expect(new SimEntropy(9).fork("files").random()).not.toBe(forkFresh);
  });

  it("keeps ints within bounds and picks every item", () => {
    const e = new SimEntropy(3);
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const n = e.int(2, 4);
      expect(n).toBeGreaterThanOrEqual(2);
      expect(n).toBeLessThanOrEqual(4);
      seen.add(e.pick(["x", "y", "z"]));
    }
    expect(seen.size).toBe(3);
  });
});
