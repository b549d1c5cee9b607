import { afterEach, describe, expect, it, vi } from "vitest";
import { nodeClock } from "../../src/runtime/nodeClock.ts";

describe("nodeClock", () => {
  it("reports wall-clock milliseconds", () => {
    const before = Date.now();
    const now = nodeClock().now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });

  it("fires a timeout after its delay", async () => {
    const clock = nodeClock();
    const started = clock.now();
    const elapsed = await new Promise<number>((resolve) => {
      clock.setTimeout(() => resolve(clock.now() - started), 20);
    });
    expect(elapsed).toBeGreaterThanOrEqual(19);
  });

  it("does not fire a cleared timeout", async () => {
    const clock = nodeClock();
    let fired = false;
    const handle = clock.setTimeout(() => {
      fired = true;
    }, 5);
    clock.clearTimeout(handle);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(fired).toBe(false);
  });

  describe("beyond Node's longest timer (2^31 − 1 ms)", () => {
    const LONGEST = 2 ** 31 - 1;
    afterEach(() => {
      vi.useRealTimers();
    });

    it("waits the whole delay instead of firing at once", () => {
      vi.useFakeTimers();
      const clock = nodeClock();
      let fired = 0;
      clock.setTimeout(() => fired++, 2 * LONGEST + 1_000);
      vi.advanceTimersByTime(LONGEST);
      vi.advanceTimersByTime(LONGEST);
      expect(fired).toBe(0);
      vi.advanceTimersByTime(999);
      expect(fired).toBe(0);
      vi.advanceTimersByTime(1);
      expect(fired).toBe(1);
    });

    it("restarts from its whole delay, even between its hops", () => {
      vi.useFakeTimers();
      const clock = nodeClock();
      let fired = 0;
      const handle = clock.setTimeout(() => fired++, LONGEST + 1_000);
      vi.advanceTimersByTime(LONGEST + 10);
      clock.restartTimeout!(handle);
      vi.advanceTimersByTime(LONGEST + 999);
      expect(fired).toBe(0);
      vi.advanceTimersByTime(1);
      expect(fired).toBe(1);
      expect(vi.getTimerCount()).toBe(0);
    });

    it("can be cleared between its hops", () => {
      vi.useFakeTimers();
      const clock = nodeClock();
      let fired = false;
      const handle = clock.setTimeout(() => {
        fired = true;
      }, LONGEST + 1_000);
      vi.advanceTimersByTime(LONGEST + 10);
      clock.clearTimeout(handle);
      vi.advanceTimersByTime(10_000);
      expect(fired).toBe(false);
    });
  });

  it("restarts a timer in place: due its whole delay from now, still one timer", () => {
    vi.useFakeTimers();
    try {
      const clock = nodeClock();
      let fired = 0;
      const handle = clock.setTimeout(() => fired++, 100);
      vi.advanceTimersByTime(60);
      expect(clock.restartTimeout!(handle)).toBe(handle);
      vi.advanceTimersByTime(99);
      expect(fired).toBe(0);
      vi.advanceTimersByTime(1);
      expect(fired).toBe(1);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps its timers ref'd", () => {
    const clock = nodeClock();
    const handle = clock.setTimeout(() => {}, 1000) as NodeJS.Timeout;
    expect(handle.hasRef()).toBe(true);
    clock.clearTimeout(handle);
  });
});
