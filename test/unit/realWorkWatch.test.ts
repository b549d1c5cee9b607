import { AsyncResource } from "node:async_hooks";
import { describe, expect, it } from "vitest";
import type { Handler, JobModule } from "../../src/runtime/jobModule.ts";
import { RealWorkWatch } from "../../src/sim/realWorkWatch.ts";

/** A ctx with only what the watch reads of it: the job's id. */
const ctxOf = (id: string) => ({ job: { id, kind: "", attempt: 1 } }) as never;

/** The handler of `kind` in a module `wrap` made (each is a plain function here). */
const handlerOf = (jobs: JobModule, kind: string) => jobs[kind] as Handler;

/** Runs `body` with `watch` started, and stops it even when `body` throws. */
async function watching<T>(watch: RealWorkWatch, body: () => Promise<T> | T): Promise<T> {
  watch.start();
  try {
    return await body();
  } finally {
    watch.stop();
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("RealWorkWatch's context and real work", () => {
  it("gives a handler's continuation after an await its job: the timer it starts is left until cleared, at once", async () => {
    const watch = new RealWorkWatch();
    let guard: NodeJS.Timeout | undefined;
    const jobs = watch.wrap({
      fetch: async () => {
        await Promise.resolve();
        await turn();
        await new Promise<void>((resolve) => process.nextTick(resolve));
        guard = setTimeout(() => {}, 60_000);
      },
    });
    await watching(watch, async () => {
      setTimeout(() => {}, 0); // not a handler's: neither left nor escaped when it fires
      await handlerOf(jobs, "fetch")(null, ctxOf("f1"));
      const work = { jobId: "f1", kind: "fetch", type: "Timeout" };
      expect(watch.timerLeft).toEqual(work);
      expect(watch.pending).toEqual([work]);
      clearTimeout(guard);
      // Node's destroy hook told of the clear a turn later; the timer itself says so at once.
      expect(watch.timerLeft).toBeUndefined();
      expect(watch.pending).toEqual([]);
      await turn();
    });
    expect(watch.escaped).toBeUndefined();
  });

  it("keeps an interval left after it fires, until it is cleared; a fired timeout is escaped work, not left", async () => {
    const watch = new RealWorkWatch();
    let interval: NodeJS.Timeout | undefined;
    const jobs = watch.wrap({
      poll: async () => {
        let fired = 0;
        await new Promise<void>((resolve) => {
          interval = setInterval(() => ++fired === 2 && resolve(), 1);
        });
      },
      once: () => new Promise((resolve) => setTimeout(resolve, 1)),
    });
    await watching(watch, async () => {
      await handlerOf(jobs, "poll")(null, ctxOf("p1"));
      expect(watch.escaped).toEqual({ jobId: "p1", kind: "poll", type: "Timeout" });
      expect(watch.timerLeft).toEqual({ jobId: "p1", kind: "poll", type: "Timeout" });
      clearInterval(interval);
      expect(watch.timerLeft).toBeUndefined();
      await handlerOf(jobs, "once")(null, ctxOf("o1"));
      expect(watch.timerLeft).toBeUndefined();
      expect(watch.pending).toEqual([]);
    });
  });

  it("keeps the one timer left among hundreds a handler cleared, which it forgets as they pile up", async () => {
    const watch = new RealWorkWatch();
    const left: NodeJS.Timeout[] = [];
    const jobs = watch.wrap({
      guard: async () => {
        for (let i = 0; i < 300; i++) {
          const guard = setTimeout(() => {}, 60_000);
          if (i === 150) left.push(guard);
          else clearTimeout(guard);
          await Promise.resolve();
        }
      },
    });
    await watching(watch, async () => {
      await handlerOf(jobs, "guard")(null, ctxOf("g1"));
      expect(watch.pending).toEqual([{ jobId: "g1", kind: "guard", type: "Timeout" }]);
      expect(watch.timerLeft).toEqual({ jobId: "g1", kind: "guard", type: "Timeout" });
      clearTimeout(left[0]);
      expect(watch.timerLeft).toBeUndefined();
    });
  });

  it("gives a handler back its own context after another's runs inside it, and leaves none behind a handler that throws", async () => {
    const watch = new RealWorkWatch();
    const jobs: JobModule = watch.wrap({
      outer: () => {
        expect(() => handlerOf(jobs, "inner")(null, ctxOf("i1"))).toThrow("refused");
        return Math.random();
      },
      inner: () => {
        throw new Error("refused");
      },
    });
    await watching(watch, () => {
      expect(() => handlerOf(jobs, "inner")(null, ctxOf("i0"))).toThrow("refused");
      Date.now();
      expect(watch.current).toBeUndefined();
      expect(watch.read).toBeUndefined();
      handlerOf(jobs, "outer")(null, ctxOf("o1"));
      expect(watch.current).toBeUndefined();
    });
    expect(watch.read).toMatchObject({ jobId: "o1", kind: "outer", api: "Math.random()" });
  });

  it("runs what a handler bound to its async context in its job wherever it is called, and another's in that one's", async () => {
    const watch = new RealWorkWatch();
    const outside = new AsyncResource("Outside");
    let later: (() => NodeJS.Timeout) | undefined;
    let stray: NodeJS.Timeout | undefined;
    const jobs = watch.wrap({
      bind: () => {
        stray = outside.runInAsyncScope(() => setTimeout(() => {}, 60_000));
        later = AsyncResource.bind(() => setTimeout(() => {}, 60_000));
      },
    });
    await watching(watch, async () => {
      await handlerOf(jobs, "bind")(null, ctxOf("b1"));
      expect(watch.timerLeft).toBeUndefined();
      const bound = later?.();
      expect(watch.timerLeft).toEqual({ jobId: "b1", kind: "bind", type: "Timeout" });
      clearTimeout(stray);
      clearTimeout(bound);
    });
  });

  it("takes a MessagePort a handler opens (what a dynamic import() asks the module loader on) as escaped work from when it is made", async () => {
    const watch = new RealWorkWatch();
    let channel: MessageChannel | undefined;
    const jobs = watch.wrap({
      load: async () => {
        channel = new MessageChannel();
      },
    });
    await watching(watch, async () => {
      await handlerOf(jobs, "load")(null, ctxOf("l1"));
      // No callback of it has run: which of the loader's runs first, and when, is the machine's.
      expect(watch.escaped).toEqual({ jobId: "l1", kind: "load", type: "MESSAGEPORT" });
      channel?.port1.close();
      await turn();
    });
  });
});
