import { describe, expect, it } from "vitest";
import { nodeEntropy } from "../../src/runtime/nodeEntropy.ts";

describe("nodeEntropy", () => {
  it("draws floats in [0, 1) that spread over the interval", () => {
    const entropy = nodeEntropy();
    const draws = Array.from({ length: 10_000 }, () => entropy.random());
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(1);
    const mean = draws.reduce((sum, x) => sum + x, 0) / draws.length;
    expect(mean).toBeGreaterThan(0.45);
    expect(mean).toBeLessThan(0.55);
    expect(new Set(draws).size).toBe(draws.length);
  });

  it("makes URL-safe ids of 21 characters by default", () => {
    const entropy = nodeEntropy();
    const ids = Array.from({ length: 1000 }, () => entropy.id());
    expect(ids.filter((id) => !/^[A-Za-z0-9_-]{21}$/.test(id))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("makes ids of the requested size", () => {
    const entropy = nodeEntropy();
    expect(entropy.id(8)).toMatch(/^[A-Za-z0-9_-]{8}$/);
    expect(entropy.id(64)).toHaveLength(64);
  });

  it("returns the requested number of random bytes", () => {
    const entropy = nodeEntropy();
    const a = entropy.bytes(32);
    const b = entropy.bytes(32);
    expect(a).toBeInstanceOf(Uint8Array);
    expect(a).toHaveLength(32);
    expect(a).not.toEqual(b);
    expect(entropy.bytes(0)).toHaveLength(0);
  });
});
