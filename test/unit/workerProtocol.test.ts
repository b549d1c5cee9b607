/**
 * What the worker sends and hears depends on the protocol version its welcome names: from
 * version 3 on, a cancel frame's reason becomes the handler's abort reason, and a needed
 * job keeps its `timeoutMs`; below 3 the worker leaves `timeoutMs` out (that coordinator
 * knows no timeouts and would refuse the field). From version 6 a failed result says when the
 * handler called its failure not retryable; below, the field is left out.
 */
import { afterEach, describe, expect, it } from "vitest";
import { JobModuleError, NonRetryableError } from "../../src/errors.ts";
import { job } from "../../src/graph/job.ts";
import { type JobContext, loadJobs } from "../../src/runtime/jobModule.ts";
import type { WorkerExit } from "../../src/runtime/worker.ts";
import { type handDrivenCoordinator, handDrivenWorker } from "../fixtures/handDrivenCoordinator.ts";

const jobFrame = (kind: string) =>
  JSON.stringify({ type: "job", id: "j1", kind, input: null, deps: {}, attempt: 1 });

let stop: (() => Promise<WorkerExit>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

/** A worker welcomed at `protocol` by a coordinator end the test drives. */
async function welcomedAt(protocol: number) {
  const abortReasons: unknown[] = [];
  const jobs = loadJobs({
    hang: (_: null, ctx: JobContext) =>
      new Promise((_resolve, reject) =>
        ctx.signal.addEventListener("abort", () => {
          abortReasons.push(ctx.signal.reason);
          reject(ctx.signal.reason);
        }),
      ),
    needy: (_: null, ctx: JobContext) => ctx.need(job("leaf", 1, { timeoutMs: 5_000 })),
    refuse: () => {
      throw new NonRetryableError("the input cannot work");
    },
    loadsNothing: () => {
      throw new JobModuleError("plugins.mjs exports no job module");
    },
    leaf: (n: number) => n,
  });
  const { end, exit } = await handDrivenWorker(jobs, { protocol });
  await until(() => end.welcomed);
  stop = () => {
    end.link!.close(1000, "the test is over");
    return exit;
  };
  return { end, abortReasons };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(check()).toBe(true);
}

/** The result frame the worker sent for the job it ran. */
async function resultOf(end: ReturnType<typeof handDrivenCoordinator>) {
  await until(() => end.frames.some((f) => f.type === "result"));
  return end.frames.find((f) => f.type === "result")!;
}

describe("the worker across protocol versions", () => {
  it.each([
    [3, "job j1 ran longer than its timeout of 500 ms (attempt 1)"],
    [2, "job j1 was cancelled by the coordinator"],
  ])("at version %i a cancel aborts the handler with the reason %j", async (protocol, reason) => {
    const w = await welcomedAt(protocol);
    w.end.link!.send(jobFrame("hang"));
    w.end.link!.send(
      JSON.stringify({
        type: "cancel",
        job: "j1",
        ...(protocol >= 3 && {
          reason: "job j1 ran longer than its timeout of 500 ms (attempt 1)",
        }),
      }),
    );
    const result = await resultOf(w.end);
    expect(result).toMatchObject({ status: "failed" });
    expect(w.abortReasons.map((r) => (r as Error).message ?? r)).toEqual([reason]);
  });

  it.each([
    [3, 5_000],
    [2, undefined],
  ])("at version %i a needed job's timeoutMs is %s", async (protocol, timeoutMs) => {
    const w = await welcomedAt(protocol);
    w.end.link!.send(jobFrame("needy"));
    const result = (await resultOf(w.end)) as { status: string; needs: { timeoutMs?: number }[] };
    expect(result.status).toBe("blocked");
    expect(result.needs[0]!.timeoutMs).toBe(timeoutMs);
  });

  it.each([
    [6, false],
    [5, undefined],
  ])("at version %i a NonRetryableError's result has retryable %s", async (protocol, retryable) => {
    const w = await welcomedAt(protocol);
    w.end.link!.send(jobFrame("refuse"));
    const result = (await resultOf(w.end)) as { error: { message: string; retryable?: false } };
    expect(result.error.message).toBe("the input cannot work");
    expect(result.error.retryable).toBe(retryable);
    expect("retryable" in result.error).toBe(retryable !== undefined);
  });

  it.each([
    [6, "loadsNothing", false],
    [6, "nope", false],
    [5, "nope", undefined],
  ])(
    "at version %i the JobModuleError of kind %s has retryable %s",
    async (protocol, kind, retryable) => {
      const w = await welcomedAt(protocol);
      w.end.link!.send(jobFrame(kind));
      const result = (await resultOf(w.end)) as {
        error: { name: string; message: string; retryable?: false };
      };
      expect(result.error.name).toBe("JobModuleError");
      expect(result.error.retryable).toBe(retryable);
      expect("retryable" in result.error).toBe(retryable !== undefined);
      if (kind === "nope") {
        expect(result.error.message).toMatch(
          /^this worker's job module \(code hash [0-9a-f]{16}\) has no handler for kind "nope"; it has "hang", "leaf", "loadsNothing", "needy", "refuse"\. Add a handler for "nope" to the job module, or fix the job's kind, and start the run again$/,
        );
      }
    },
  );
});
