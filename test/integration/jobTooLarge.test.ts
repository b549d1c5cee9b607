/**
 * A job frame larger than its worker accepts, on real sockets (127.0.0.1, wsNet): the worker
 * announces its limit in its hello (protocol version 5), and the coordinator fails each
 * attempt of that job as JobTooLarge instead of sending a frame that would close the link.
 * The worker keeps its connection and runs the other jobs. Every server and worker a test
 * starts is stopped after it, whether it passed or not.
 */
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { job } from "../../src/graph/job.ts";
import { type JobContext, loadJobs } from "../../src/runtime/jobModule.ts";
import { nodeEntropy } from "../../src/runtime/nodeEntropy.ts";
import { runWorker } from "../../src/runtime/worker.ts";
import { wsNet } from "../../src/runtime/wsNet.ts";
import { CloseCode } from "../../src/transport/closeCodes.ts";
import { startSocketCoordinator } from "../fixtures/socketCoordinator.ts";

const logger = pino({ level: "silent" });
const jobs = loadJobs({
  repeat: ({ text }: { text: string }) => text.length,
  grow: (n: number) => "y".repeat(n),
  measure: (_: null, ctx: JobContext) => Object.values(ctx.results).map((r) => String(r).length),
});
const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("a job frame over the worker's limit", () => {
  it("fails its attempts as JobTooLarge, naming the sizes, and the worker keeps running jobs", async () => {
    const secret = nodeEntropy().bytes(32);
    const big = job("repeat", { text: "x".repeat(3_000) }, { retries: 1 });
    const small = job("repeat", { text: "x" });
    // Each dependency's result fits a frame; together they do not.
    const parts = [job("grow", 1_200), job("grow", 1_300)];
    const joined = job("measure", null, { after: parts, retries: 0 });
    const coordinator = await startSocketCoordinator({
      graph: [big, small, joined],
      jobs,
      secret,
      run: "too-large",
    });
    cleanups.push(coordinator.close);
    const exited = runWorker({
      net: wsNet(),
      address: coordinator.address,
      jobs,
      name: "w-1",
      instance: "i-1",
      resources: { cpus: 1 },
      secret,
      logger,
      maxFrameBytes: 2_000,
    });
    cleanups.push(() => exited.catch(() => {}));
    await coordinator.finished;
    const exit = await exited;
    expect(exit.code).toBe(CloseCode.normal);
    expect(exit.jobsFinished).toBe(3);
    expect(coordinator.record(small).state).toBe("completed");
    for (const [spec, attempts] of [
      [big, 2],
      [joined, 1],
    ] as const) {
      const record = coordinator.record(spec);
      expect(record.state).toBe("failed");
      expect(record.attempts).toBe(attempts);
      expect(record.lostWorkers).toEqual([]);
      expect(record.error).toMatchObject({ name: "JobTooLarge" });
      expect(record.error?.message).toMatch(
        new RegExp(
          `^job ${coordinator.idOf(spec)} was not sent to worker w-1: its frame \\(its input and the results of the jobs it runs after\\) is \\d{4} bytes, over the 2000 bytes the worker accepts; pass large data by reference`,
        ),
      );
    }
  });

  it("refuses a limit that is not a positive whole number of bytes", async () => {
    const start = (maxFrameBytes: number) =>
      runWorker({
        net: wsNet(),
        address: "ws://127.0.0.1:1",
        jobs,
        name: "w-1",
        instance: "i-1",
        resources: {},
        secret: new Uint8Array(32),
        logger,
        maxFrameBytes,
      });
    await expect(start(0)).rejects.toThrow(ConfigError);
    await expect(start(1.5)).rejects.toThrow(
      "maxFrameBytes must be a positive whole number of bytes (got 1.5)",
    );
  });
});
