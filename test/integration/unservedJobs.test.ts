/**
 * A run whose workers join by hand (`localPool({ count: 0 })`, as `baton run --workers 0`) over
 * real sockets on 127.0.0.1, with a job that requires a gpu: while only a worker without one is
 * connected, the run says what the job waits for, once, instead of waiting in silence; a worker
 * that offers a gpu then finishes it. Every worker ends with the run, which a failed test
 * cancels.
 */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Resources } from "../../src/graph/job.ts";
import { job } from "../../src/graph/job.ts";
import { createEngine, localPool } from "../../src/index.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { moduleSource } from "../../src/runtime/moduleSource.ts";
import type { ListeningEvent } from "../../src/runtime/run.ts";
import { readSecret } from "../../src/runtime/secret.ts";
import { jobsOf } from "../../src/runtime/userModule.ts";
import { runWorker, type WorkerExit } from "../../src/runtime/worker.ts";
import { wsNet } from "../../src/runtime/wsNet.ts";
import { ROOT } from "../fixtures/batonCli.ts";
import { loggedLines } from "../fixtures/loggedLines.ts";
import { within } from "../fixtures/within.ts";
import * as fixture from "../fixtures/worker.jobs.ts";

const JOBS = "test/fixtures/worker.jobs.ts";
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("a run whose connected workers offer less than a ready job requires", () => {
  it("says which job waits for what, and what the workers offer, once; a worker that offers it then runs it", async () => {
    const jobs = loadJobs(jobsOf(fixture, JOBS), moduleSource(`${ROOT}/${JOBS}`));
    const { logger, lines } = loggedLines("warn");
    const engine = createEngine({
      jobs,
      workers: localPool({ jobsModule: `${ROOT}/${JOBS}`, count: 0 }),
      logger,
      progressIntervalMs: 20,
    });
    const gpu = job("double", 21, { requires: { gpus: 1 } });
    const cpu = job("double", 1);
    const run = engine.run([gpu, cpu]);
    const over = Promise.resolve(run);
    let settled = false;
    void over.finally(() => {
      settled = true;
    });
    cleanups.push(async () => {
      if (!settled) run.cancel();
      await over.catch(() => undefined);
    });
    const listening = await new Promise<ListeningEvent>((resolve) => run.on("listening", resolve));
    const secret = await readSecret({ secretFile: listening.secretFile, env: {} });
    const join = (name: string, resources: Resources): Promise<WorkerExit> =>
      runWorker({
        net: wsNet(),
        address: listening.address,
        jobs,
        name,
        instance: "i-1",
        resources,
        secret,
        logger: pino({ level: "silent" }),
      });

    const small = join("small", { cpus: 2, gpus: 0, memory: 1024 });
    const said = () => lines.filter((l) => String(l.msg).includes("waits for a worker"));
    await vi.waitFor(() => expect(said()).toHaveLength(1), { timeout: 20_000 });
    const [waiting] = said() as [{ jobs: string[] }];
    const id = waiting.jobs[0];
    expect(said()[0]).toMatchObject({
      level: 40,
      jobs: [expect.stringMatching(/^[0-9a-f]{16}$/)],
      offers: { cpus: 2, gpus: 0, memory: 1024 },
      msg: `1 job waits for a worker that offers what it requires, which the 1 connected worker does not: job ${id} (double) requires gpus 1; the connected workers offer at most cpus 2, gpus 0, memory 1024 MiB; start a worker that offers more (baton worker --cpus N --gpus N --memory MIB)`,
    });
    // Many ticks later, still waiting: said once.
    await new Promise((r) => setTimeout(r, 200));
    expect(said()).toHaveLength(1);

    const big = join("big", { cpus: 2, gpus: 1, memory: 1024 });
    const result = await within(over, 20_000, "the run");
    expect(result.ok).toBe(true);
    expect(result.get(gpu)).toMatchObject({ id, status: "completed", value: 42 });
    expect(said()).toHaveLength(1);
    expect((await small).code).toBe(1000);
    expect((await big).code).toBe(1000);
  }, 40_000);
});
