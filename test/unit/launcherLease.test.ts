import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { LEASE_FORMAT, type Lease } from "../../src/rank/leaseFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import { holdLease } from "../../src/runtime/launcherLease.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";

const files = nodeFiles();
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Waits (real time, for real file I/O) until `check` holds; the simulated clock stays put. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; !(await check()); tries++) {
    if (tries > 500) throw new Error("the lease was not renewed");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The lease of launcher pid 77 (token `tok`) of `dep-lease` at `path`, stale after 3 s. */
const leaseOf = (path: string, clock: SimClock) => ({
  files,
  clock,
  path,
  deployment: "dep-lease",
  pid: 77,
  token: "tok",
  staleAfterMs: 3_000,
});

describe("holdLease", () => {
  it("writes the lease, renews it every staleAfterMs / 3, and stops renewing on release", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-lease-"));
    dirs.push(dir);
    const path = join(dir, "lease.json");
    const clock = new SimClock();
    clock.fireNext(5_000);
    const lease = await holdLease(leaseOf(path, clock));
    const read = () => readStateFile(files, LEASE_FORMAT, path);
    expect(await read()).toEqual({
      deployment: "dep-lease",
      pid: 77,
      token: "tok",
      renewedAt: 5_000,
      staleAfterMs: 3_000,
    });
    expect(clock.nextDue()).toBe(6_000);
    clock.fireNext();
    await until(async () => (await read())?.renewedAt === 6_000);
    await until(async () => clock.nextDue() === 7_000);
    await lease.release();
    expect(clock.nextDue()).toBeUndefined();
    expect((await read())?.renewedAt).toBe(6_000);
  });
});

/**
 * A lease held on a file system that fails its writes while `failing`, on a simulated clock
 * (30 s staleness: renewed every 10 s; watchdog grace 5 s, retried every second within it).
 */
function failingLease() {
  const clock = new SimClock();
  const state = {
    failing: false,
    /** Writes from now on never return, until `land` lets the oldest one finish. */
    hanging: false,
    hung: [] as (() => void)[],
    /** How long each write takes before it lands or fails. */
    slowMs: 0,
    writes: [] as number[],
    lost: [] as { at: number; reason: string }[],
  };
  const logs: { level: number; msg: string }[] = [];
  const fake = {
    async writeAtomic() {
      state.writes.push(clock.now());
      if (state.hanging) return new Promise<void>((resolve) => state.hung.push(resolve));
      if (state.slowMs > 0) await new Promise((resolve) => clock.setTimeout(resolve, state.slowMs));
      if (state.failing) throw new Error("ENOSPC: no space left on device, open 'lease.json'");
    },
  } as unknown as Files;
  const held = holdLease({
    files: fake,
    clock,
    path: "/state/dep-w/lease.json",
    deployment: "dep-w",
    pid: 1,
    token: "tok",
    staleAfterMs: 30_000,
    logger: pino({ level: "info" }, { write: (line: string) => logs.push(JSON.parse(line)) }),
    onLost: (reason) => state.lost.push({ at: clock.now(), reason }),
  });
  /** Fires every timer due up to `until`, letting each renewal settle before the next. */
  const runUntil = async (until: number) => {
    while (clock.fireNext(until)) await new Promise((resolve) => setImmediate(resolve));
  };
  return { clock, state, logs, held, runUntil };
}

describe("holdLease, taken over", () => {
  it("writes nothing over another launcher's lease, stops renewing and says whose it is", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-lease-"));
    dirs.push(dir);
    const path = join(dir, "lease.json");
    const clock = new SimClock();
    const taken: Lease[] = [];
    const lost: string[] = [];
    const lease = await holdLease({
      ...leaseOf(path, clock),
      onTakenOver: (other) => taken.push(other),
      onLost: (reason) => lost.push(reason),
    });
    expect(await lease.takenBy()).toBeUndefined();
    // Another launcher took the name over while this one was stopped.
    const other: Lease = {
      deployment: "dep-lease",
      pid: 4242,
      token: "other",
      renewedAt: 900,
      staleAfterMs: 3_000,
    };
    await files.writeAtomic(path, encodeStateFile(LEASE_FORMAT, other));
    expect(await lease.takenBy()).toEqual(other);
    clock.fireNext();
    await until(async () => taken.length > 0);
    expect(taken).toEqual([other]);
    expect(await readStateFile(files, LEASE_FORMAT, path)).toEqual(other);
    // No renewal is due any more, and the watchdog never gives the lease up.
    expect(clock.nextDue()).toBeUndefined();
    expect(lost).toEqual([]);
    await lease.release();
  });
});

describe("holdLease, a renewal's read and its write", () => {
  /**
   * Real files whose next read, once `hold()` is called, reads the file and then waits (its
   * launcher stopped, or the read hung) until `resume()`.
   */
  function stalledRead() {
    let holding = false;
    let resume = () => {};
    let held = () => {};
    const stalled: Files = {
      ...files,
      async read(file) {
        const text = await files.read(file);
        if (!holding) return text;
        holding = false;
        await new Promise<void>((resolve) => {
          resume = resolve;
          held();
        });
        return text;
      },
    };
    return {
      files: stalled,
      /** Holds the next read; resolves once it has read the file and waits. */
      hold: () => {
        holding = true;
        return new Promise<void>((resolve) => {
          held = resolve;
        });
      },
      resume: () => resume(),
    };
  }

  /**
   * A lease at a new temp path on a simulated clock, held with `more`, whose first renewal (at
   * 1 s) has read the file and waits in its read until `resume()`.
   */
  async function renewalReading(more: Partial<Parameters<typeof holdLease>[0]> = {}) {
    const dir = mkdtempSync(join(tmpdir(), "baton-lease-"));
    dirs.push(dir);
    const path = join(dir, "lease.json");
    const clock = new SimClock();
    const stalled = stalledRead();
    const lease = await holdLease({ ...leaseOf(path, clock), files: stalled.files, ...more });
    const holding = stalled.hold();
    clock.fireNext();
    await holding;
    return { path, clock, lease, resume: stalled.resume };
  }

  it("writes nothing once released, when its read comes back after the release", async () => {
    const { path, clock, lease, resume } = await renewalReading();
    // Overdue, the renewal is not waited for; the clear removes the file.
    while (clock.fireNext(10_000)) await new Promise((resolve) => setImmediate(resolve));
    await lease.release();
    await files.remove(path);
    resume();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await files.read(path)).toBeUndefined();
  });

  it("writes the time its read came back, not the renewal's start, when the read was slow", async () => {
    const { path, clock, lease, resume } = await renewalReading();
    // The renewal of 1 s read, and its read comes back at 1.8 s, before it is overdue (2 s).
    clock.setTimeout(() => {}, 800);
    clock.fireNext();
    expect(clock.now()).toBe(1_800);
    resume();
    await until(async () => (await readStateFile(files, LEASE_FORMAT, path))?.renewedAt !== 0);
    // Written with 1 s, a lease renewed at 1.8 s would have read as 0.8 s old at once.
    expect((await readStateFile(files, LEASE_FORMAT, path))?.renewedAt).toBe(1_800);
    await lease.release();
  });

  it("reads again before writing when the read came back after the lease went stale, and writes nothing over the other's", async () => {
    const taken: Lease[] = [];
    const { path, clock, lease, resume } = await renewalReading({
      onTakenOver: (other) => taken.push(other),
    });
    // Its lease goes stale meanwhile, and another launcher takes the name over.
    while (clock.fireNext(10_000)) await new Promise((resolve) => setImmediate(resolve));
    const other: Lease = {
      deployment: "dep-lease",
      pid: 4242,
      token: "other",
      renewedAt: 9_000,
      staleAfterMs: 3_000,
    };
    await files.writeAtomic(path, encodeStateFile(LEASE_FORMAT, other));
    resume();
    await until(async () => taken.length > 0);
    expect(taken).toEqual([other]);
    expect(await readStateFile(files, LEASE_FORMAT, path)).toEqual(other);
    await lease.release();
  });
});

describe("holdLease's watchdog", () => {
  it("gives the lease up once, 5 s after the second failed renewal in a row, and keeps renewing", async () => {
    const { state, logs, held, runUntil } = failingLease();
    await held;
    state.failing = true;
    await runUntil(24_999);
    expect(state.writes).toEqual([0, 10_000, 20_000, 21_000, 22_000, 23_000, 24_000]);
    expect(state.lost).toEqual([]);
    expect(logs.filter((l) => l.msg === "lease renewal failed")).toHaveLength(6);
    expect(logs.find((l) => l.level === 50)?.msg).toMatch(
      /lease renewal failed 2 times in a row; retrying every 1000 ms for 5000 ms/,
    );
    await runUntil(60_000);
    expect(state.lost).toHaveLength(1);
    expect(state.lost[0]?.at).toBe(25_000);
    expect(state.lost[0]?.reason).toMatch(
      /ENOSPC: no space left on device.*no recovery within 5000 ms/,
    );
    // After it gave up, renewals go on at their usual pace: the teardown still needs the lease.
    expect(state.writes.filter((at) => at > 25_000)).toEqual([35_000, 45_000, 55_000]);
    await (await held).release();
  });

  it("forgives a renewal that succeeds within the grace", async () => {
    const { clock, state, logs, held, runUntil } = failingLease();
    await held;
    state.failing = true;
    await runUntil(22_000);
    state.failing = false;
    await runUntil(23_000);
    expect(logs.at(-1)?.msg).toBe("lease renewed again after 4 failed renewals");
    // Back to healthy: the next renewal comes 10 s later, and one more failure is only suspect.
    expect(clock.nextDue()).toBe(33_000);
    await runUntil(40_000);
    state.failing = true;
    await runUntil(55_000);
    expect(state.lost).toEqual([]);
    await runUntil(100_000);
    expect(state.lost).toHaveLength(1);
    await (await held).release();
  });

  it("never gives the lease up after release, even within the grace", async () => {
    const { clock, state, held, runUntil } = failingLease();
    const lease = await held;
    state.failing = true;
    await runUntil(21_500);
    await lease.release();
    expect(clock.nextDue()).toBeUndefined();
    await runUntil(100_000);
    expect(state.lost).toEqual([]);
  });

  it("keeps the grace inside a short lease's staleness", async () => {
    const clock = new SimClock();
    const lost: number[] = [];
    let failing = false;
    const lease = await holdLease({
      files: {
        async writeAtomic() {
          if (failing) throw new Error("EROFS");
        },
      } as unknown as Files,
      clock,
      path: "/l",
      deployment: "dep-s",
      pid: 1,
      token: "t",
      staleAfterMs: 600,
      onLost: () => lost.push(clock.now()),
    });
    failing = true;
    while (clock.fireNext(10_000)) await new Promise((resolve) => setImmediate(resolve));
    // Renewed every 200 ms; failures at 200 and 400; a grace of 100 ms: given up at 500, before 600.
    expect(lost).toEqual([500]);
    await lease.release();
  });

  it("counts a renewal that hangs as failed once the next is due, and gives up before the ranks would", async () => {
    const { state, logs, held, runUntil } = failingLease();
    const lease = await held;
    state.hanging = true;
    await runUntil(25_999);
    // The renewal of 10 s hangs: no second one starts beside it. The lease on disk is of 0 s.
    expect(state.writes).toEqual([0, 10_000]);
    expect(state.lost).toEqual([]);
    expect(logs.filter((l) => l.msg === "lease renewal has not returned")).toHaveLength(1);
    expect(logs.find((l) => l.level === 50)?.msg).toBe(
      "lease renewal has not returned in 11000 ms; waiting for it for 5000 ms before giving the ranks up (they take the launcher for dead once its lease is 30000 ms old)",
    );
    await runUntil(60_000);
    // Overdue at 20 s (when the next was due), again at 21 s: the abort; 5 s of grace. The
    // ranks would take the launcher for dead after 30 s.
    expect(state.lost).toEqual([
      {
        at: 26_000,
        reason: "a renewal has not returned in 15000 ms; no recovery within 5000 ms of aborting",
      },
    ]);
    expect(state.writes).toEqual([0, 10_000]);
    // release() does not wait for a renewal that may never return; it says so.
    await lease.release();
    expect(logs.at(-1)?.msg).toMatch(/^stopped waiting for a lease renewal that has not returned/);
  });

  it("forgives a hung renewal that lands within the grace, and renews again at once", async () => {
    const { clock, state, logs, held, runUntil } = failingLease();
    const lease = await held;
    state.hanging = true;
    await runUntil(23_000);
    // The renewal of 10 s lands at 23 s: its file says 10 s, so the next starts at once ...
    state.hung.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
    await runUntil(23_000);
    // Not "after 4 failed renewals": one renewal hung, and each second it stayed out was a strike.
    expect(logs.find((l) => l.msg.startsWith("lease renewed again"))?.msg).toBe(
      "lease renewed again after a renewal hung for 13000 ms",
    );
    expect(state.writes).toEqual([0, 10_000, 23_000]);
    // ... and, hanging too, is overdue when the lease on disk is 20 s old, not 10 s after it
    // started: given up at 36 s, before the ranks would at 40 s.
    await runUntil(60_000);
    expect(state.lost.map((l) => l.at)).toEqual([36_000]);
    expect(clock.now()).toBe(60_000);
    await lease.release();
  });

  it("waits for a renewal in flight on release only until it is overdue", async () => {
    const { clock, state, held, runUntil } = failingLease();
    const lease = await held;
    state.hanging = true;
    await runUntil(15_000);
    let released = false;
    const releasing = lease.release().then(() => {
      released = true;
    });
    await runUntil(19_999);
    expect(released).toBe(false);
    await runUntil(20_000);
    await releasing;
    expect(clock.nextDue()).toBeUndefined();
    // It lands after all: nothing more happens, and never a loss.
    state.hung.shift()?.();
    await runUntil(100_000);
    expect(state.writes).toEqual([0, 10_000]);
    expect(state.lost).toEqual([]);
  });

  it("does not let a slow failure push the next renewal past the lease's two periods", async () => {
    const { state, held, runUntil } = failingLease();
    const lease = await held;
    state.failing = true;
    state.slowMs = 8_000;
    await runUntil(60_000);
    // The renewal of 10 s fails at 18 s; the next starts at 21 s, not 28 s, is overdue at 22 s
    // (the abort), and the lease is given up at 27 s, before the ranks would at 30 s.
    expect(state.writes.slice(0, 3)).toEqual([0, 10_000, 21_000]);
    expect(state.lost.map((l) => l.at)).toEqual([27_000]);
    await lease.release();
  });
});
