/**
 * `engine.run(graph, { signal })`: an AbortSignal cancels the run as `run.cancel()` does, with
 * in-process workers over the in-memory Net.
 */
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import {
  ConfigError,
  createEngine,
  inProcessPool,
  type JobContext,
  job,
  type WorkerPool,
} from "../../src/index.ts";
import { untilAborted } from "../fixtures/untilAborted.ts";

describe("engine.run with an AbortSignal", { timeout: 10_000 }, () => {
  it("its abort cancels the run: running handlers see their signal, the rest end cancelled, naming the reason", async () => {
    const aborted: unknown[] = [];
    const engine = createEngine({
      jobs: {
        wait: async (_: number, ctx: JobContext) => {
          try {
            return await untilAborted(ctx.signal);
          } finally {
            aborted.push(ctx.signal.reason);
          }
        },
      },
      workers: 2,
    });
    const controller = new AbortController();
    const run = engine.run(
      [1, 2, 3].map((n) => job("wait", n)),
      { signal: controller.signal },
    );
    let running = 0;
    run.on("job", (event) => {
      if (event.state === "running" && ++running === 2) controller.abort(new Error("user left"));
    });

    const result = await run;

    expect(aborted).toHaveLength(2);
    expect(result.counts).toMatchObject({ completed: 0, cancelled: 3 });
    for (const outcome of result.jobs.values()) {
      expect(outcome.error?.message).toBe("the run's AbortSignal aborted: user left");
    }
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("one already aborted starts no worker; one that never aborts is let go of when the run ends", async () => {
    const inner = inProcessPool({ count: 1 });
    let starts = 0;
    const pool: WorkerPool = {
      ...inner,
      start(context) {
        starts++;
        return inner.start(context);
      },
    };
    const engine = createEngine({ jobs: { one: (n: number) => n }, workers: pool });

    const early = await engine.run([job("one", 1)], { signal: AbortSignal.abort("not now") });
    expect(early.counts).toMatchObject({ cancelled: 1, completed: 0 });
    expect(early.get(job("one", 1)).error?.message).toBe("the run's AbortSignal aborted: not now");
    expect(starts).toBe(0);

    // One signal for many runs, as a service's shutdown signal: no listener is left behind.
    const controller = new AbortController();
    for (const n of [2, 3, 4]) {
      expect((await engine.run([job("one", n)], { signal: controller.signal })).ok).toBe(true);
    }
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    expect(starts).toBe(3);
  });

  it("runs at once on one signal share one listener on it (a listener each made Node warn of a leak from the eleventh), and its abort cancels them all", async () => {
    const engine = createEngine({
      jobs: { wait: (_: number, ctx: JobContext) => untilAborted(ctx.signal) },
      workers: 12,
    });
    const controller = new AbortController();
    const runs = Array.from({ length: 12 }, (_, n) =>
      engine.run([job("wait", n)], { signal: controller.signal }),
    );
    await Promise.all(
      runs.map(
        (run) =>
          new Promise<void>((resolve) =>
            run.on("job", (event) => event.state === "running" && resolve()),
          ),
      ),
    );
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);

    controller.abort(new Error("shutting down"));
    const results = await Promise.all(runs);

    for (const result of results) {
      expect(result.counts).toMatchObject({ cancelled: 1, completed: 0 });
      expect([...result.jobs.values()][0]?.error?.message).toBe(
        "the run's AbortSignal aborted: shutting down",
      );
    }
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    const later = await engine.run([job("wait", 99)], { signal: controller.signal });
    expect(later.counts).toMatchObject({ cancelled: 1 });
  });

  it.each([
    [
      { signal: "stop" },
      "engine.run: signal must be an AbortSignal (an AbortController's signal, or AbortSignal.timeout(ms)), not stop",
    ],
    [
      { singal: new AbortController().signal },
      "engine.run: unknown option singal; it takes signal",
    ],
    [
      { workers: 2 },
      "engine.run: unknown option workers; it takes signal (the engine's options go to createEngine)",
    ],
    [
      null,
      "engine.run: the options must be an object, { signal } (its second argument; the jobs go in the first), not null",
    ],
  ])("refuses run options %o with a ConfigError, before anything runs", (options, message) => {
    const engine = createEngine({ jobs: { one: (n: number) => n }, workers: 1 });
    const run = () => engine.run([job("one", 1)], options as never);
    expect(run).toThrow(ConfigError);
    expect(run).toThrow(message);
  });
});
