import { describe, expect, it } from "vitest";
import { inFlightLimit } from "../../src/runtime/inFlightLimit.ts";

/** A call that resolves (or rejects) when the test says so, recording when it started. */
function controlled(started: number[], n: number) {
  let settle!: (ok: boolean) => void;
  const call = () =>
    new Promise<number>((resolve, reject) => {
      started.push(n);
      settle = (ok) => (ok ? resolve(n) : reject(new Error(`call ${n} failed`)));
    });
  return { call, settle: (ok = true) => settle(ok) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("inFlightLimit", () => {
  it("runs at most `limit` calls at once and the rest in order, even when one fails", async () => {
    const limit = inFlightLimit(2);
    const started: number[] = [];
    const calls = [0, 1, 2, 3, 4].map((n) => controlled(started, n));
    const results = calls.map((c) => limit(c.call).catch((error: Error) => error.message));
    await tick();
    expect(started).toEqual([0, 1]);
    calls[1]!.settle(false);
    await tick();
    expect(started).toEqual([0, 1, 2]);
    calls[0]!.settle();
    calls[2]!.settle();
    await tick();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    calls[3]!.settle();
    calls[4]!.settle();
    expect(await Promise.all(results)).toEqual([0, "call 1 failed", 2, 3, 4]);
  });

  it("keeps the order and the limit over a long line of waiting calls", async () => {
    const limit = inFlightLimit(3);
    const order: number[] = [];
    let active = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 5000 }, (_, n) =>
        limit(async () => {
          order.push(n);
          most = Math.max(most, ++active);
          await tick();
          active--;
        }),
      ),
    );
    expect(order).toEqual(Array.from({ length: 5000 }, (_, n) => n));
    expect(most).toBe(3);
  });
});
