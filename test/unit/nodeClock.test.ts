import { describe, expect, it } from "vitest";
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

  it("keeps its timers ref'd", () => {
    const clock = nodeClock();
    const handle = clock.setTimeout(() => {}, 1000) as NodeJS.Timeout;
    expect(handle.hasRef()).toBe(true);
    clock.clearTimeout(handle);
  });
});
