import nodeCrypto, { randomUUID } from "node:crypto";
import nodeOs, { uptime } from "node:os";
import { describe, expect, it } from "vitest";
import { type RealReadApi, trapRealReads } from "../../src/sim/realReads.ts";
import { RealWorkWatch } from "../../src/sim/realWorkWatch.ts";

/** The globals as they were before any trap, to compare with after each is released. */
const ORIGINALS = () => ({
  Date: globalThis.Date,
  dateConstructor: Date.prototype.constructor,
  now: Date.now,
  performanceNow: performance.now,
  hrtime: process.hrtime,
  hrtimeBigint: process.hrtime.bigint,
  uptime: nodeOs.uptime,
  processUptime: process.uptime,
  namedUptime: uptime,
  random: Math.random,
  webUUID: globalThis.crypto.randomUUID,
  webValues: globalThis.crypto.getRandomValues,
  nodeUUID: nodeCrypto.randomUUID,
  randomBytes: nodeCrypto.randomBytes,
  randomInt: nodeCrypto.randomInt,
  namedUUID: randomUUID,
});

describe("trapRealReads", () => {
  it("notes each read of the real clock and real randomness, returning what the original returns", () => {
    const before = ORIGINALS();
    const seen: RealReadApi[] = [];
    const release = trapRealReads((api) => seen.push(api));
    try {
      expect(Date.now()).toBeGreaterThan(0);
      expect(new Date().getFullYear()).toBeGreaterThan(2000);
      expect(typeof Date()).toBe("string");
      expect(performance.now()).toBeGreaterThan(0);
      expect(process.hrtime()).toHaveLength(2);
      expect(process.hrtime.bigint()).toBeGreaterThan(0n);
      expect(nodeOs.uptime()).toBeGreaterThan(0);
      expect(process.uptime()).toBeGreaterThan(0);
      expect(Math.random()).toBeLessThan(1);
      expect(crypto.randomUUID()).toMatch(/^[0-9a-f-]{36}$/);
      expect(crypto.getRandomValues(new Uint8Array(4))).toHaveLength(4);
      expect(nodeCrypto.randomUUID()).toMatch(/^[0-9a-f-]{36}$/);
      expect(nodeCrypto.getRandomValues(new Uint8Array(2))).toHaveLength(2);
      expect(nodeCrypto.randomBytes(3)).toHaveLength(3);
      expect(nodeCrypto.randomInt(10)).toBeLessThan(10);
    } finally {
      release();
    }
    expect(seen).toEqual([
      "Date.now()",
      "new Date()",
      "Date()",
      "performance.now()",
      "process.hrtime()",
      "process.hrtime.bigint()",
      "os.uptime()",
      "process.uptime()",
      "Math.random()",
      "crypto.randomUUID()",
      "crypto.getRandomValues()",
      "crypto.randomUUID()",
      "crypto.getRandomValues()",
      "crypto.randomBytes()",
      "crypto.randomInt()",
    ]);
    expect(ORIGINALS()).toEqual(before);
  });

  it("catches a named import of node:crypto and node:os, and puts it back", () => {
    const seen: RealReadApi[] = [];
    const release = trapRealReads((api) => seen.push(api));
    randomUUID();
    uptime();
    release();
    randomUUID();
    uptime();
    expect(seen).toEqual(["crypto.randomUUID()", "os.uptime()"]);
  });

  it("leaves alone what does not read the clock or randomness: dates of a time, a callback's draws", async () => {
    const seen: RealReadApi[] = [];
    const release = trapRealReads((api) => seen.push(api));
    try {
      const at = new Date(86_400_000);
      expect(at).toBeInstanceOf(Date);
      expect(at.toISOString()).toBe("1970-01-02T00:00:00.000Z");
      expect(Date.UTC(2026, 0, 1)).toBe(1_767_225_600_000);
      expect(at.constructor).toBe(Date);
      class Stamp extends Date {}
      expect(new Stamp(5)).toBeInstanceOf(Date);
      // With a callback, randomBytes starts real work, which RealWorkWatch's hook sees.
      await new Promise((resolve) => nodeCrypto.randomBytes(2, resolve));
    } finally {
      release();
    }
    expect(seen).toEqual([]);
  });

  it("keeps the globals trapped until the last of overlapping traps is released, each told once", () => {
    const before = ORIGINALS();
    const first: RealReadApi[] = [];
    const second: RealReadApi[] = [];
    const releaseFirst = trapRealReads((api) => first.push(api));
    const releaseSecond = trapRealReads((api) => second.push(api));
    Math.random();
    releaseFirst();
    releaseFirst();
    expect(Math.random).not.toBe(before.random);
    Date.now();
    releaseSecond();
    expect(ORIGINALS()).toEqual(before);
    Date.now();
    expect(first).toEqual(["Math.random()"]);
    expect(second).toEqual(["Math.random()", "Date.now()"]);
  });

  it("leaves a global replaced since the trap to whoever replaced it", () => {
    const real = Math.random;
    const release = trapRealReads(() => {});
    const fake = () => 0.5;
    Math.random = fake;
    release();
    expect(Math.random).toBe(fake);
    Math.random = real;
  });
});

describe("RealWorkWatch", () => {
  it("notes the first read a handler makes in its context, not the reads made outside one", async () => {
    const watch = new RealWorkWatch();
    const jobs = watch.wrap({
      stamp: async () => {
        await Promise.resolve();
        return [Math.random(), Date.now()];
      },
    });
    const ctx = { job: { id: "j1", kind: "stamp", attempt: 1 } } as never;
    watch.start();
    try {
      Date.now();
      Math.random();
      expect(watch.read).toBeUndefined();
      await (jobs.stamp as (input: unknown, ctx: never) => Promise<unknown>)(null, ctx);
      Date.now();
    } finally {
      watch.stop();
    }
    // Where in the handler: the line of the read, under the trap's frames.
    expect(watch.read).toEqual({
      jobId: "j1",
      kind: "stamp",
      api: "Math.random()",
      at: expect.stringMatching(/^ \(at .*realReads\.test\.ts:\d+:\d+\)$/),
    });
  });
});
