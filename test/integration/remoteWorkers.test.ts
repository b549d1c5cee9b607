/**
 * Workers started by hand, as on other machines: a coordinator with no workers of its own
 * (`localPool({ count: 0 })`, as `baton run --workers 0`) and a result store, and `baton worker`
 * processes that join it over real sockets on 127.0.0.1, one of them through a TCP proxy that
 * fails like a network: paused, half-open, reset, slow. Every process is stopped by its pid
 * and the proxy closed when the test ends.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createEngine, localPool } from "../../src/index.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { moduleSource } from "../../src/runtime/moduleSource.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { ResultStore } from "../../src/runtime/resultStore.ts";
import type { ListeningEvent } from "../../src/runtime/run.ts";
import { type BatonProcess, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { loggedLines } from "../fixtures/loggedLines.ts";
import { type PauseDirection, startTcpProxy } from "../fixtures/tcpProxy.ts";
import { within } from "../fixtures/within.ts";

const fixture = resolve("test/fixtures/counted.graph.ts");
/** How long each leaf job takes on a worker. */
const LEAF_MS = 1_500;
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  stopBatons();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A run of counted.graph.ts's 2 leaves and 2 totals with no workers of its own, pinging every
 * 500 ms and dropping a worker unheard for 2 s; its log lines are collected in `lines`.
 */
async function startRun() {
  const dir = mkdtempSync(join(tmpdir(), "baton-remote-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const calls = join(dir, "calls");
  mkdirSync(calls);
  process.env.BATON_TEST_JOBS = "2";
  const module = await import(`${fixture}?leaves=2`);
  const store = await ResultStore.open(join(dir, "store"), nodeFiles());
  const { logger, lines } = loggedLines("info");
  const engine = createEngine({
    jobs: loadJobs(module.jobs, moduleSource(fixture)),
    workers: localPool({ jobsModule: fixture, count: 0 }),
    store,
    logger,
    heartbeatMs: 500,
    deadAfterMs: 2_000,
  });
  const run = engine.run(module.default);
  let settled = false;
  const over = Promise.resolve(run).finally(() => {
    settled = true;
  });
  // A test that failed half-way leaves no run behind.
  cleanups.push(async () => {
    if (!settled) run.cancel();
    await over.catch(() => undefined);
  });
  const running: string[] = [];
  run.on("job", (e) => {
    if (e.state === "running") running.push(e.id);
  });
  const listening = await new Promise<ListeningEvent>((resolve) => run.on("listening", resolve));
  /**
   * `baton worker ...more` for this run at `address` (the run's own by default), named `name`.
   */
  const worker = (name: string, address = listening.address, ...more: string[]): BatonProcess =>
    startBaton(
      [
        "worker",
        "--connect",
        address,
        "--secret-file",
        listening.secretFile!,
        "--jobs",
        fixture,
        "--name",
        name,
        ...more,
      ],
      {
        cwd: dir,
        env: {
          BATON_SECRET: undefined,
          BATON_TEST_DELAY_MS: String(LEAF_MS),
          BATON_TEST_CALLS: calls,
        },
      },
    );
  const proxy = await startTcpProxy({
    host: "127.0.0.1",
    port: Number(new URL(listening.address).port),
  });
  cleanups.push(proxy.close);
  return { run, running, worker, proxy, store, lines, calls };
}

/** Waits until `check` holds, polling, failing after `ms` with `what`. */
async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} took more than ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("workers joined by hand, across a network that fails", () => {
  it.each<[string, PauseDirection, RegExp]>([
    [
      "both ways",
      "both",
      // Whichever comes first: its own silence limit, or the coordinator ending the TCP
      // connection after the close it sent (which the pause held) went unanswered.
      /^baton worker: (?:gave up on the coordinator at ws:\/\/127\.0\.0\.1:\d+ \(code 4009\).*start the worker again once the coordinator is reachable, or give it --retry-for DURATION.*$|connection to the coordinator at ws:\/\/127\.0\.0\.1:\d+ closed with code 1006 .*start the worker again once the coordinator is reachable, or give it --retry-for DURATION)/m,
    ],
    [
      "from the worker only, half-open",
      "up",
      /^baton worker: connection to the coordinator at ws:\/\/127\.0\.0\.1:\d+ closed with code 4005 .*the network between them stopped carrying the worker's frames.*; start the worker again once the coordinator is reachable, or give it --retry-for DURATION/m,
    ],
  ])(
    "a pause (%s) costs the worker its lease and connection: the job runs again once elsewhere, is stored once, and the worker says why it stopped",
    async (_, direction, why) => {
      const { run, running, worker, proxy, store, lines, calls } = await startRun();
      const far = worker("far", proxy.address);
      await until(() => running.length === 1, "the far worker's first job");
      proxy.pause(direction);
      const near = worker("near");
      const result = await within(Promise.resolve(run), 45_000, "the run");
      const farExit = await within(far.exit, 10_000, "the far worker's exit");

      expect(result.ok).toBe(true);
      const held = result.jobs.get(running[0]!)!;
      // Lost once (the lost-worker path, not a failed attempt), then run again by the other worker.
      expect(held).toMatchObject({ status: "completed", attempts: 2, lostWorkers: ["far"] });
      expect(result.counts.completed).toBe(4);
      expect(store.writes).toBe(4);
      // Every leaf's handler ran at most twice: once on the far worker, once on the near one.
      expect(readdirSync(calls).filter((c) => c.startsWith("leaf-")).length).toBeLessThanOrEqual(3);
      expect(farExit.code).toBe(3);
      expect(farExit.stderr).toMatch(why);
      const lost = lines.find((l) => l.msg === "closing connection");
      expect(lost).toMatchObject({ worker: "far", code: 4005 });
      expect((await near.exit).code).toBe(0);
    },
    60_000,
  );

  it("a reset ends the worker with 1006, and the run's log says which worker was lost and with which job", async () => {
    const { run, running, worker, proxy, store, lines } = await startRun();
    const far = worker("far", proxy.address);
    await until(() => running.length === 1, "the far worker's first job");
    proxy.reset();
    const farExit = await within(far.exit, 10_000, "the far worker's exit");
    const near = worker("near");
    const result = await within(Promise.resolve(run), 45_000, "the run");

    expect(farExit.code).toBe(3);
    expect(farExit.stderr).toMatch(
      /^baton worker: connection to the coordinator at ws:\/\/127\.0\.0\.1:\d+ closed with code 1006 \(no reason given\): connection broke: it ended without a close frame, as when the network failed or the coordinator's process ended without closing it \(a crash, kill -9, the out-of-memory killer, its machine going down\); check that baton run is still running there \(baton status on its machine\) and its run\.log; start the worker again once the coordinator is reachable, or give it --retry-for DURATION to have it try by itself/m,
    );
    expect(lines.find((l) => l.msg === "worker lost")).toMatchObject({
      level: 40,
      worker: "far",
      code: 1006,
      job: running[0],
    });
    expect(result.ok).toBe(true);
    expect(result.jobs.get(running[0]!)).toMatchObject({ attempts: 2, lostWorkers: ["far"] });
    expect(store.writes).toBe(4);
    expect((await near.exit).code).toBe(0);
  }, 60_000);

  it("with --retry-for, a worker whose connection was reset joins the same run again and finishes it", async () => {
    const { run, running, worker, proxy, store } = await startRun();
    const far = worker("far", proxy.address, "--retry-for", "1m", "--log-level", "debug");
    await until(() => running.length === 1, "the far worker's first job");
    // The welcome and the job are on their way when the lease is granted: the worker has
    // joined once before the reset when it says it was welcomed (a fixed 300 ms was a guess a
    // loaded machine could outlast). The job runs for LEAF_MS.
    await until(() => /\bwelcomed\b/.test(far.stderr()), "the far worker's welcome");
    proxy.reset();
    const result = await within(Promise.resolve(run), 45_000, "the run");
    const farExit = await within(far.exit, 10_000, "the far worker's exit");

    expect(result.ok).toBe(true);
    // The reset lost its lease (the lost-worker path); the same worker, joined again, ran it.
    expect(result.jobs.get(running[0]!)).toMatchObject({ attempts: 2, lostWorkers: ["far"] });
    expect(store.writes).toBe(4);
    expect(farExit.code).toBe(0);
    expect(farExit.stderr).toMatch(
      /closed with code 1006 .*; trying again for up to 1m \(--retry-for\)\n(?:.*\n)*?baton worker: joined run \S+ at ws:\/\/127\.0\.0\.1:\d+ again\n/,
    );
  }, 60_000);

  it("a worker stopped with SIGINT leaves at info, not as a lost worker", async () => {
    const { run, running, worker, lines } = await startRun();
    const far = worker("far");
    await until(() => running.length === 1, "the far worker's first job");
    far.child.kill("SIGINT");
    expect((await within(far.exit, 10_000, "the far worker's exit")).code).toBe(130);
    const near = worker("near");
    const result = await within(Promise.resolve(run), 45_000, "the run");

    expect(result.ok).toBe(true);
    expect(lines.find((l) => l.msg === "worker left")).toMatchObject({
      level: 30,
      worker: "far",
      code: 1001,
      job: running[0],
    });
    expect(lines.some((l) => l.msg === "worker lost")).toBe(false);
    expect((await near.exit).code).toBe(0);
  }, 60_000);

  it("a slow link (300 ms each way, under the 2 s limits) costs nothing", async () => {
    const { run, worker, proxy, store, lines } = await startRun();
    proxy.delayMs = 300;
    const far = worker("far", proxy.address);
    const result = await within(Promise.resolve(run), 45_000, "the run");

    expect(result.ok).toBe(true);
    expect([...result.jobs.values()].every((j) => j.attempts === 1)).toBe(true);
    expect(store.writes).toBe(4);
    expect(lines.some((l) => l.msg === "worker lost" || l.msg === "closing connection")).toBe(
      false,
    );
    expect((await far.exit).code).toBe(0);
  }, 60_000);
});
