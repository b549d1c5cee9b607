/**
 * What `runWorker` tells a caller that connects again (`baton worker --retry-for`): the run it
 * joined, through `onWelcome`, and, when the connection ended under a running job, when that
 * job has stopped, so the next connection never runs a second job beside it.
 */
import { describe, expect, it } from "vitest";
import { type JobContext, loadJobs } from "../../src/runtime/jobModule.ts";
import { failed, type JobRunner } from "../../src/runtime/jobRunner.ts";
import type { JobFrame } from "../../src/transport/frames.ts";
import { handDrivenWorker } from "../fixtures/handDrivenCoordinator.ts";
import { loggedLines } from "../fixtures/loggedLines.ts";

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(check()).toBe(true);
}

/** The job frame of the handler these tests give, which does not stop on its abort. */
const STUBBORN_JOB = JSON.stringify({
  type: "job",
  id: "j1",
  kind: "stubborn",
  input: null,
  deps: {},
  attempt: 1,
});

describe("a worker's exit", () => {
  it("names the run it joined, and settles jobStopped only once a handler that ignored its abort returned", async () => {
    let release!: () => void;
    let aborted = false;
    const jobs = loadJobs({
      // Ignores its AbortSignal until the test releases it.
      stubborn: (_: null, ctx: JobContext) => {
        ctx.signal.addEventListener("abort", () => (aborted = true));
        return new Promise<string>((resolve) => (release = () => resolve("late")));
      },
    });
    const runs: string[] = [];
    const { end, exit } = await handDrivenWorker(jobs, { onWelcome: (run) => runs.push(run) });
    await until(() => end.welcomed);
    await until(() => runs.length === 1);
    expect(runs).toEqual(["r1"]);
    end.link!.send(STUBBORN_JOB);
    await until(() => release !== undefined);
    end.link!.close(1011, "the coordinator failed");
    const { code, jobStopped } = await exit;
    expect(code).toBe(1011);
    expect(aborted).toBe(true);
    let stopped = false;
    void jobStopped.then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(stopped).toBe(false);
    release();
    await jobStopped;
  });

  it("warns abortGraceMs after a cancel that the handler does not stop on ctx.signal, naming its job, and the exit names the job it still ran", async () => {
    let release!: () => void;
    const jobs = loadJobs({
      stubborn: () => new Promise<string>((resolve) => (release = () => resolve("late"))),
    });
    const { logger, lines: warnings } = loggedLines("warn");
    const { end, exit } = await handDrivenWorker(jobs, { abortGraceMs: 30, logger });
    await until(() => end.welcomed);
    end.link!.send(STUBBORN_JOB);
    await until(() => release !== undefined);
    end.link!.send(
      JSON.stringify({ type: "cancel", job: "j1", reason: "job j1 ran longer than its timeout" }),
    );
    await until(() => warnings.length === 1);
    expect(warnings[0]).toMatchObject({ job: "j1", kind: "stubborn" });
    expect(warnings[0]?.msg).toMatch(
      /^the handler of job j1 \(stubborn\) has not returned 30 ms after its abort: it does not stop on ctx\.signal, .*--handler-thread/,
    );
    end.link!.close(4005, "lease of job j1 expired");
    const ended = await exit;
    expect(ended.runningJob).toEqual({ id: "j1", kind: "stubborn", cancelled: true });
    release();
    await ended.jobStopped;
    expect(warnings).toHaveLength(1);
  });

  it("counts as finished the jobs that completed or failed, not one a cancel aborted", async () => {
    const jobs = loadJobs({
      quick: () => 1,
      broken: () => {
        throw new Error("no");
      },
      // Ends when its job is cancelled, as a handler that heeds its AbortSignal does.
      heeds: (_: null, ctx: JobContext) =>
        new Promise((_resolve, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
        ),
    });
    const { end, exit } = await handDrivenWorker(jobs);
    await until(() => end.welcomed);
    const results = () => end.frames.filter((frame) => frame.type === "result").length;
    for (const [i, kind] of ["quick", "broken", "heeds"].entries()) {
      end.link!.send(
        JSON.stringify({ type: "job", id: `j${i}`, kind, input: null, deps: {}, attempt: 1 }),
      );
      if (kind !== "heeds") await until(() => results() === i + 1);
    }
    await new Promise((r) => setTimeout(r, 10));
    end.link!.send(JSON.stringify({ type: "cancel", job: "j2", reason: "the run was stopped" }));
    await until(() => results() === 3);
    end.link!.close(1000, "run finished");
    expect((await exit).jobsFinished).toBe(2);
  });

  it("has jobStopped settled already when no job was running", async () => {
    const { end, exit } = await handDrivenWorker(loadJobs({ idle: () => null }));
    await until(() => end.welcomed);
    end.link!.close(1000, "run finished");
    const { jobStopped } = await exit;
    let stopped = false;
    void jobStopped.then(() => (stopped = true));
    await Promise.resolve();
    await Promise.resolve();
    expect(stopped).toBe(true);
  });

  it("leaves at once when its signal aborts: 1001 with the reason, its running job aborted", async () => {
    let started = false;
    let aborted = false;
    const jobs = loadJobs({
      // Never returns, as a handler cut off from its coordinator may not.
      stuck: (_: null, ctx: JobContext) => {
        started = true;
        ctx.signal.addEventListener("abort", () => (aborted = true));
        return new Promise<never>(() => {});
      },
    });
    const stop = new AbortController();
    const { end, exit } = await handDrivenWorker(jobs, { signal: stop.signal });
    await until(() => end.welcomed);
    end.link!.send(
      JSON.stringify({ type: "job", id: "j1", kind: "stuck", input: null, deps: {}, attempt: 1 }),
    );
    await until(() => started);
    stop.abort("the run is over");
    // Settled without the coordinator's end doing anything: no answer to the close is needed.
    const { code, reason, jobsFinished } = await exit;
    expect([code, reason, jobsFinished]).toEqual([1001, "the run is over", 0]);
    expect(aborted).toBe(true);
    await until(() => end.closes.length === 1);
    expect(end.closes[0]).toEqual([1001, "the run is over"]);
  });

  it("leaves as soon as it has connected when its signal aborted before", async () => {
    const stop = new AbortController();
    stop.abort();
    const { end, exit } = await handDrivenWorker(loadJobs({ idle: () => null }), {
      signal: stop.signal,
    });
    const { code, reason } = await exit;
    expect([code, reason]).toEqual([1001, "worker w-1 stopped"]);
    expect(end.welcomed).toBe(false);
  });

  it("leaves the run after the result of the job that found its runner broken, taking no job after it", async () => {
    const started: string[] = [];
    // A runner whose module no longer loads, as --handler-thread's new thread finds it.
    const runner: JobRunner & { broken: string | undefined } = {
      codeHash: "c0de",
      broken: undefined,
      abort: () => {},
      start(frame: JobFrame, version, report) {
        started.push(frame.id);
        runner.broken = "the job module jobs.mjs no longer loads";
        report.done(failed(frame.id, { name: "JobModuleError", message: "gone" }, version));
      },
    };
    const { end, exit } = await handDrivenWorker(runner, { protocol: 6 });
    await until(() => end.welcomed);
    const job = (id: string) =>
      JSON.stringify({ type: "job", id, kind: "k", input: null, deps: {}, attempt: 1 });
    end.link!.send(job("j1"));
    // Sent before the worker's close arrives: the coordinator gives it back (going away).
    end.link!.send(job("j2"));
    const left = await exit;
    expect(left).toMatchObject({
      code: 1001,
      reason: "worker w-1 leaving: the job module jobs.mjs no longer loads",
      idle: false,
      broken: "the job module jobs.mjs no longer loads",
      jobsFinished: 1,
    });
    expect(end.frames).toEqual([
      {
        type: "result",
        job: "j1",
        status: "failed",
        error: { name: "JobModuleError", message: "gone" },
      },
    ]);
    expect(started).toEqual(["j1"]);
  });
});
