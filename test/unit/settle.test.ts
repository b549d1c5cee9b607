import { describe, expect, it } from "vitest";
import { microtasksSettled, nextTurn } from "../../src/sim/settle.ts";

/** Queues a chain of `depth` microtasks, each queued by the one before; `done()` says if all ran. */
function chain(depth: number): { done: () => boolean } {
  let ran = 0;
  const link = (): void => {
    ran++;
    if (ran < depth) queueMicrotask(link);
  };
  queueMicrotask(link);
  return { done: () => ran === depth };
}

describe("settle", () => {
  it("microtasksSettled, awaited in a microtask, resumes once every microtask and every one they queue has run", async () => {
    await nextTurn();
    for (let round = 0; round < 3; round++) {
      const work = chain(200);
      const nested = Promise.resolve().then(() => Promise.resolve().then(() => "inner"));
      let inner: string | undefined;
      void nested.then((value) => {
        inner = value;
      });
      await microtasksSettled();
      expect(work.done()).toBe(true);
      expect(inner).toBe("inner");
    }
  });

  it("microtasksSettled outside a microtask resumes before the chains queued there end, which is why a run starts with nextTurn", async () => {
    const seen = await new Promise<boolean[]>((resolve) => {
      setTimeout(() => {
        const tick = chain(50);
        const turn = chain(50);
        void microtasksSettled().then(() => {
          const early = tick.done();
          void nextTurn().then(() => resolve([early, turn.done()]));
        });
      });
    });
    expect(seen).toEqual([false, true]);
  });
});
