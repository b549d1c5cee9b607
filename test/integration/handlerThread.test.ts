/**
 * The handler thread of `baton worker --handler-thread`: a real worker thread loading the
 * test job module, driven here through its `JobRunner` the way a worker's connection drives it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type HandlerThread, startHandlerThread } from "../../src/cli/handlerThread.ts";
import type { Json } from "../../src/graph/job.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { createLogger } from "../../src/runtime/logger.ts";
import { moduleSource } from "../../src/runtime/moduleSource.ts";
import { jobsOf } from "../../src/runtime/userModule.ts";
import type { JobFrame, ProgressFrame, ResultFrame } from "../../src/transport/frames.ts";
import * as fixture from "../fixtures/worker.jobs.ts";

const JOBS = "test/fixtures/worker.jobs.ts";
const threads: HandlerThread[] = [];

afterEach(async () => {
  for (const thread of threads.splice(0)) await thread.close();
});

async function start(module = JOBS, abortGraceMs?: number): Promise<HandlerThread> {
  const thread = await startHandlerThread({ module, level: "silent", pretty: false, abortGraceMs });
  threads.push(thread);
  return thread;
}

let ids = 0;
function frame(kind: string, input: Json, deps: Record<string, Json> = {}): JobFrame {
  return { type: "job", id: `job-${++ids}`, kind, input, deps, attempt: 1 };
}

/** Runs `job` on `thread`: its result and the progress it reported. */
function run(thread: HandlerThread, job: JobFrame, version = 6) {
  const progress: ProgressFrame[] = [];
  const result = new Promise<ResultFrame>((done) =>
    thread.start(job, version, { progress: (frame) => progress.push(frame), done }),
  );
  return { result, progress };
}

describe("the handler thread", () => {
  it("loads the job module with the code hash and kinds the connection's thread would, and hands out the source it hashed", async () => {
    const thread = await start();
    const source = moduleSource(JOBS);
    const here = loadJobs(jobsOf(fixture, JOBS), source);
    expect(thread.codeHash).toBe(here.codeHash);
    expect(thread.kinds).toEqual(here.kinds);
    // What baton worker compares the files with for its 4006 line, read once, on the thread.
    expect(thread.source).toBe(source);
  });

  it("runs jobs to results: values, dependencies, progress, ctx.need and thrown errors", async () => {
    const thread = await start();
    const double = frame("double", 21);
    expect(await run(thread, double).result).toEqual({
      type: "result",
      job: double.id,
      status: "completed",
      value: 42,
    });
    const sum = frame("sum", null, { a: 1, b: 2 });
    expect(await run(thread, sum).result).toMatchObject({ status: "completed", value: 3 });

    const report = run(thread, frame("report", null));
    expect(await report.result).toMatchObject({ status: "completed", value: "reported" });
    expect(report.progress.map(({ done, total, message }) => ({ done, total, message }))).toEqual([
      { done: 1, total: 2, message: "half" },
      { done: 2, total: 2, message: undefined },
    ]);

    const need = await run(thread, frame("needDouble", 5)).result;
    expect(need).toMatchObject({ status: "blocked", needs: [{ kind: "double", input: 5 }] });

    const unknown = await run(thread, frame("nope", null)).result;
    expect(unknown).toMatchObject({
      status: "failed",
      error: {
        name: "JobModuleError",
        message: expect.stringContaining('has no handler for kind "nope"; it has "block", '),
        retryable: false,
      },
    });
  });

  it("keeps the calling thread free while a handler computes synchronously", async () => {
    const thread = await start();
    const { result } = run(thread, frame("block", 1_500));
    let ticks = 0;
    const ticking = setInterval(() => ticks++, 50);
    await result;
    clearInterval(ticking);
    // Over 1.5 s of blocking on the other thread, this one kept its timers.
    expect(ticks).toBeGreaterThan(15);
  });

  it("aborts the running job with the reason given", async () => {
    const thread = await start();
    const job = frame("hang", null);
    const { result } = run(thread, job);
    thread.abort("the coordinator cancelled it");
    expect(await result).toMatchObject({
      status: "failed",
      error: { name: "BatonError", message: "the coordinator cancelled it" },
    });
  });

  it("ends the thread of a handler that does not return within the abort grace, and keeps going", async () => {
    const graceMs = 300;
    const thread = await start(JOBS, graceMs);
    const stuck = frame("block", 60_000);
    const { result } = run(thread, stuck);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const abortedAt = Date.now();
    thread.abort("job timed out");
    expect(await result).toEqual({
      type: "result",
      job: stuck.id,
      status: "failed",
      error: {
        name: "HandlerThreadExited",
        message: `the thread running job ${stuck.id}'s handler stopped (it did not return within ${graceMs} ms of being aborted (job timed out), so its thread was ended); the next job gets a new thread`,
      },
    });
    expect(Date.now() - abortedAt).toBeGreaterThanOrEqual(graceMs - 50);
    expect(await run(thread, frame("double", 3)).result).toMatchObject({ value: 6 });
  });

  it("fails the attempt when its thread dies under a job, with the crash's stack, logged at debug, and runs the next job on a new thread", async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: "debug", stderr: (line) => lines.push(line) });
    const thread = await startHandlerThread({
      module: JOBS,
      level: "silent",
      pretty: false,
      logger,
    });
    threads.push(thread);
    const job = frame("throwLater", "boom in a timer");
    const error = {
      name: "HandlerThreadExited",
      message: `the thread running job ${job.id}'s handler stopped (uncaught Error: boom in a timer); the next job gets a new thread`,
      // Where the handler's timer threw, as Node prints an uncaught error without a thread.
      stack: expect.stringMatching(
        /^Error: boom in a timer\n {4}at Timeout\._onTimeout \(.*worker\.jobs\.ts:\d+:\d+\)\n/,
      ),
    };
    expect(await run(thread, job).result).toEqual({
      type: "result",
      job: job.id,
      status: "failed",
      error,
    });
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({
        msg: "job failed",
        job: job.id,
        kind: "throwLater",
        attempt: 1,
        err: expect.objectContaining({
          type: error.name,
          message: error.message,
          stack: error.stack,
        }),
      }),
    );
    expect(await run(thread, frame("double", 2)).result).toMatchObject({ value: 4 });
  });

  it("will not run a job module that changed on disk on the thread that replaces a dead one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-thread-"));
    try {
      const module = join(dir, "changing.jobs.mjs");
      const source = (n: number) =>
        `export default { n: () => ${n}, die: () => new Promise(() => setTimeout(() => { throw new Error("gone"); }, 10)) };\n`;
      writeFileSync(module, source(1));
      const thread = await start(module);
      expect(await run(thread, frame("n", null)).result).toMatchObject({ value: 1 });
      expect(await run(thread, frame("die", null)).result).toMatchObject({
        error: { name: "HandlerThreadExited" },
      });
      expect(thread.broken).toBeUndefined();
      writeFileSync(module, source(2));
      const changed = frame("n", null);
      // Not retried: every attempt on this worker would load the changed module again.
      expect(await run(thread, changed).result).toMatchObject({
        status: "failed",
        error: {
          name: "JobModuleError",
          message: expect.stringMatching(
            /^job job-\d+ \(n\) cannot run on this worker: its handler thread had to be started again after the last one stopped, and the job module .*changing\.jobs\.mjs changed since this worker started \(code hash [0-9a-f]{16}, now [0-9a-f]{16}\)\. The worker leaves the run, since every job it were given would fail so: put the job module back as it was when the run started and start the worker again, or start the run again \(results already stored are reused\)$/,
          ),
          retryable: false,
        },
      });
      // Its worker leaves the run rather than fail every job it is given so.
      expect(thread.broken).toMatch(
        /^its handler thread had to be started again after the last one stopped, and the job module .*changing\.jobs\.mjs changed since this worker started/,
      );
      // A coordinator of protocol 5 would refuse the field: it is left out.
      expect(
        ((await run(thread, frame("n", null), 5).result) as { error: object }).error,
      ).not.toHaveProperty("retryable");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("waits on close() for the running job's result", async () => {
    const thread = await start();
    const { result } = run(thread, frame("block", 300));
    let settled = false;
    void result.then(() => (settled = true));
    await thread.close();
    expect(settled).toBe(true);
  });

  it("rejects with the reason a job module does not load", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-thread-"));
    try {
      const broken = join(dir, "broken.jobs.mjs");
      writeFileSync(broken, "export default { notAHandler: 42 };\n");
      await expect(start(broken)).rejects.toMatchObject({
        code: "JOB_MODULE",
        message:
          'job kind "notAHandler" must be a handler function, { run, version } or { ranks, version }, not number',
      });
      const missing = join(dir, "missing.jobs.ts");
      await expect(start(missing)).rejects.toMatchObject({ code: "MODULE_NOT_FOUND" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
