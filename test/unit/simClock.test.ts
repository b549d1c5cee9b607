import { describe, expect, it } from "vitest";
import { SimClock } from "../../src/sim/simClock.ts";

describe("SimClock", () => {
  it("stands still until the runner fires the next timer, then jumps to it", () => {
    const clock = new SimClock();
    const seen: number[] = [];
    clock.setTimeout(() => seen.push(clock.now()), 500);
    clock.setTimeout(() => seen.push(clock.now()), 100);
    expect(clock.now()).toBe(0);
    expect(clock.nextDue()).toBe(100);
    expect(clock.fireNext()).toBe(true);
    expect(seen).toEqual([100]);
    expect(clock.fireNext()).toBe(true);
    expect(seen).toEqual([100, 500]);
    expect(clock.fireNext()).toBe(false);
  });

  it("runs timers due at the same time in the order they were set", () => {
    const clock = new SimClock();
    const order: string[] = [];
    for (const name of ["a", "b", "c", "d"]) clock.setTimeout(() => order.push(name), 10);
    clock.setTimeout(() => order.push("zero"), 0);
    while (clock.fireNext()) {}
    expect(order).toEqual(["zero", "a", "b", "c", "d"]);
  });

  it("keeps virtual time whole: a delay that is not whole is rounded up, on the clock and its scopes", () => {
    const clock = new SimClock();
    const scope = clock.scope();
    const seen: number[] = [];
    clock.setTimeout(() => seen.push(clock.now()), 2_000 + 3_000 * 0.3481);
    scope.setTimeout(() => seen.push(scope.now()), 0.25);
    clock.setTimeout(() => seen.push(clock.now()), -3.5);
    while (clock.fireNext()) {}
    expect(seen).toEqual([0, 1, 3045]);
  });

  it("clears timers, counts what is pending, and moves to the limit when nothing is due", () => {
    const clock = new SimClock();
    const fired: number[] = [];
    const handle = clock.setTimeout(() => fired.push(1), 50);
    clock.setTimeout(() => fired.push(2), 200);
    clock.clearTimeout(handle);
    clock.clearTimeout(handle);
    expect(clock.pending).toBe(1);
    expect(clock.fireNext(100)).toBe(false);
    expect(clock.now()).toBe(100);
    expect(clock.fireNext(1_000)).toBe(true);
    expect(fired).toEqual([2]);
    expect(clock.pending).toBe(0);
  });

  it("kills a scope with every timer it set, and ignores its later timers", () => {
    const clock = new SimClock();
    const scope = clock.scope();
    const fired: string[] = [];
    scope.setTimeout(() => fired.push("scoped"), 10);
    clock.setTimeout(() => fired.push("root"), 20);
    scope.kill();
    scope.setTimeout(() => fired.push("after death"), 5);
    while (clock.fireNext()) {}
    expect(fired).toEqual(["root"]);
    expect(scope.alive).toBe(false);
    expect(scope.now()).toBe(20);
  });

  it("restarts a timer as clearing it and setting it again would: due its delay from now, after those set before", () => {
    const clock = new SimClock();
    const scope = clock.scope();
    const order: string[] = [];
    const root = clock.setTimeout(() => order.push(`root at ${clock.now()}`), 100);
    const scoped = scope.setTimeout(() => order.push(`scoped at ${clock.now()}`), 100);
    clock.setTimeout(() => order.push(`other at ${clock.now()}`), 130);
    clock.fireNext(30);
    clock.restartTimeout(root);
    scope.restartTimeout!(scoped);
    expect(clock.pending).toBe(3);
    while (clock.fireNext()) {}
    expect(order).toEqual(["other at 130", "root at 130", "scoped at 130"]);
    expect(clock.pending).toBe(0);
  });

  it("kills a scope's restarted timers with it", () => {
    const clock = new SimClock();
    const scope = clock.scope();
    const fired: string[] = [];
    const handle = scope.setTimeout(() => fired.push("scoped"), 10);
    scope.restartTimeout!(handle);
    scope.kill();
    while (clock.fireNext()) {}
    expect(fired).toEqual([]);
    expect(clock.pending).toBe(0);
  });

  it("keeps time in order across a thousand random timers", () => {
    const clock = new SimClock();
    const times: number[] = [];
    for (let i = 0; i < 1000; i++)
      clock.setTimeout(() => times.push(clock.now()), (i * 7919) % 997);
    while (clock.fireNext()) {}
    expect(times).toHaveLength(1000);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });
});
