/**
 * The worker's silence watchdog on real sockets (127.0.0.1, wsNet): a coordinator that goes
 * silent after the welcome is given up on with 4009 within the limit, even when it never
 * answers the close; a coordinator that keeps pinging keeps its workers, idle or busy, past
 * the limit; a server that never welcomes the worker is given up on after the welcome
 * deadline. Small ping intervals keep each test well under a second or two. Every server and
 * worker a test starts is stopped after it, whether it passed or not.
 */
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { job } from "../../src/graph/job.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { nodeEntropy } from "../../src/runtime/nodeEntropy.ts";
import { runWorker } from "../../src/runtime/worker.ts";
import { wsNet } from "../../src/runtime/wsNet.ts";
import { CloseCode } from "../../src/transport/closeCodes.ts";
import { silentCoordinator } from "../fixtures/silentCoordinator.ts";
import { startSocketCoordinator } from "../fixtures/socketCoordinator.ts";

const HEARTBEAT_MS = 50;
/** 4 × the announced ping interval. */
const LIMIT_MS = 4 * HEARTBEAT_MS;
const logger = pino({ level: "silent" });
const jobs = loadJobs({
  nap: (ms: number) => new Promise((resolve) => setTimeout(() => resolve(ms), ms)),
});

const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A worker over wsNet; its link is closed by the coordinator's cleanup at the latest. */
function startWorker(address: string, secret: Uint8Array, name = "w-1", welcomeTimeoutMs?: number) {
  const startedAt = performance.now();
  const exited = runWorker({
    net: wsNet(),
    address,
    jobs,
    name,
    instance: "i-1",
    resources: { cpus: 1 },
    secret,
    logger,
    ...(welcomeTimeoutMs !== undefined && { welcomeTimeoutMs }),
  }).then((exit) => ({ ...exit, afterMs: performance.now() - startedAt }));
  cleanups.push(() => exited.catch(() => {}));
  return exited;
}

describe("a worker's silence watchdog, on real sockets", () => {
  it("gives up on a coordinator that went silent and deaf after the welcome: 4009 within the limit, at once", async () => {
    const secret = nodeEntropy().bytes(32);
    const coordinator = await silentCoordinator({ secret, heartbeatMs: HEARTBEAT_MS, deaf: true });
    cleanups.push(() => coordinator.close());
    const exited = startWorker(coordinator.address, secret);
    await coordinator.welcomed;
    const welcomedAt = performance.now();
    const exit = await exited;
    const waited = performance.now() - welcomedAt;
    expect(exit).toMatchObject({
      code: CloseCode.coordinatorSilent,
      reason: `no frame or ping from the coordinator for ${LIMIT_MS} ms; it may have crashed or the network dropped the connection`,
      jobsFinished: 0,
    });
    // Not before the limit; and without waiting for the close handshake (`ws` would wait 30 s).
    expect(waited).toBeGreaterThanOrEqual(LIMIT_MS - 5);
    expect(waited).toBeLessThan(LIMIT_MS + 1_500);
  });

  it("gives up on a server that accepts and never welcomes it, telling it why", async () => {
    const secret = nodeEntropy().bytes(32);
    const server = await silentCoordinator({ secret, mute: true });
    cleanups.push(() => server.close());
    const reason =
      "no welcome from the coordinator within 300 ms of connecting; is the address a baton coordinator's, and is it overloaded?";
    const exit = await startWorker(server.address, secret, "w-1", 300);
    expect(exit).toMatchObject({ code: CloseCode.coordinatorSilent, reason, jobsFinished: 0 });
    expect(exit.afterMs).toBeGreaterThanOrEqual(295);
    expect(exit.afterMs).toBeLessThan(1_800);
    expect(await server.closed).toEqual({ code: CloseCode.coordinatorSilent, reason });
  });

  it("tells a coordinator that still reads why it was given up on", async () => {
    const secret = nodeEntropy().bytes(32);
    const coordinator = await silentCoordinator({ secret, heartbeatMs: HEARTBEAT_MS });
    cleanups.push(() => coordinator.close());
    const exited = startWorker(coordinator.address, secret);
    expect(await coordinator.closed).toEqual({
      code: CloseCode.coordinatorSilent,
      reason: `no frame or ping from the coordinator for ${LIMIT_MS} ms; it may have crashed or the network dropped the connection`,
    });
    expect((await exited).code).toBe(CloseCode.coordinatorSilent);
  });

  it("keeps the workers of a coordinator that keeps pinging, idle or busy, well past the limit", async () => {
    const secret = nodeEntropy().bytes(32);
    const napMs = 4 * LIMIT_MS;
    const coordinator = await startSocketCoordinator({
      graph: [job("nap", napMs)],
      jobs,
      secret,
      run: "pinging",
      heartbeatMs: HEARTBEAT_MS,
    });
    cleanups.push(coordinator.close);
    // One worker runs the nap, the other waits idle; neither gets a frame meanwhile.
    const exits = await Promise.all([
      startWorker(coordinator.address, secret, "w-1"),
      startWorker(coordinator.address, secret, "w-2"),
    ]);
    expect(exits.map((exit) => exit.code)).toEqual([CloseCode.normal, CloseCode.normal]);
    expect(exits.map((exit) => exit.jobsFinished).sort()).toEqual([0, 1]);
    for (const exit of exits) expect(exit.afterMs).toBeGreaterThan(napMs);
  });
});
