import { afterEach, describe, expect, it, vi } from "vitest";
import { BatonError } from "../../src/errors.ts";
import { type JobContext, loadJobs } from "../../src/runtime/jobModule.ts";
import { jobRunner } from "../../src/runtime/jobRunner.ts";
import { createLogger } from "../../src/runtime/logger.ts";
import { onAbort } from "../../src/runtime/onAbort.ts";
import type { JobFrame, ResultFrame } from "../../src/transport/frames.ts";

const frame: JobFrame = { type: "job", id: "j1", kind: "wait", input: null, deps: {}, attempt: 1 };

/** A runner whose one handler waits until `release` is called; `ctx` is that attempt's. */
function runningAttempt() {
  let release!: () => void;
  let ctx!: JobContext;
  const runner = jobRunner(
    loadJobs({
      wait: (_input: null, context: JobContext) => {
        ctx = context;
        return new Promise<void>((resolve) => (release = resolve));
      },
    }),
    createLogger({ level: "silent", pretty: false }),
  );
  const result = new Promise<ResultFrame>((done) =>
    runner.start(frame, 6, { progress: () => {}, done }),
  );
  return { runner, ctx, release, result };
}

/** Counts the AbortControllers made while the test runs. */
function countControllers(): { made: number } {
  const counter = { made: 0 };
  const Real = globalThis.AbortController;
  vi.stubGlobal(
    "AbortController",
    class extends Real {
      constructor() {
        super();
        counter.made++;
      }
    },
  );
  return counter;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("onAbort on the runner's handler context", () => {
  it("tells of the abort, with its reason, without making an AbortController", async () => {
    const controllers = countControllers();
    const { runner, ctx, release, result } = runningAttempt();
    const reasons: unknown[] = [];
    expect(onAbort(ctx, (reason) => reasons.push(reason))).toBe(true);
    runner.abort("the run was cancelled");
    runner.abort("again");
    release();
    await result;
    expect(reasons).toEqual([new BatonError("ABORTED", "the run was cancelled")]);
    expect(controllers.made).toBe(0);
  });

  it("registers nothing once the attempt is aborted", async () => {
    const { runner, ctx, release, result } = runningAttempt();
    runner.abort("stop");
    const reasons: unknown[] = [];
    expect(onAbort(ctx, (reason) => reasons.push(reason))).toBe(false);
    release();
    await result;
    expect(reasons).toEqual([]);
  });

  it("keeps the first abort's reason for a ctx.signal read after two, as an AbortController does", async () => {
    const { runner, ctx, release, result } = runningAttempt();
    runner.abort("first");
    runner.abort("second");
    const { signal } = ctx;
    release();
    await result;
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe("first");
  });

  it("gives an ABORTED reason whose stack is its name and message, and leaves Error.stackTraceLimit as it was", async () => {
    const { runner, ctx, release, result } = runningAttempt();
    const limit = Error.stackTraceLimit;
    runner.abort("job j1 was cancelled by the coordinator");
    const { reason } = ctx.signal;
    release();
    await result;
    expect(reason).toMatchObject({ code: "ABORTED" });
    expect((reason as Error).stack).toBe("BatonError: job j1 was cancelled by the coordinator");
    expect(Error.stackTraceLimit).toBe(limit);
    expect(new Error("after").stack).toMatch(/\n\s+at /);
  });
});

describe("onAbort on a context without the runner's hook", () => {
  it("listens on ctx.signal", () => {
    const controller = new AbortController();
    const ctx = { signal: controller.signal } as JobContext;
    const reasons: unknown[] = [];
    expect(onAbort(ctx, (reason) => reasons.push(reason))).toBe(true);
    controller.abort("why");
    controller.abort("not again");
    expect(reasons).toEqual(["why"]);
    expect(onAbort(ctx, (reason) => reasons.push(reason))).toBe(false);
  });
});
