/**
 * The worker's silence watchdog, welcome deadline and idle exit in virtual time: `runWorker` over
 * memoryNet on a SimClock, against a hand-driven coordinator end that handshakes (or does
 * not) and then sends frames and pings only when the test says so.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { loadJobs } from "../../src/runtime/jobModule.ts";
import { memoryNet } from "../../src/runtime/memoryNet.ts";
import { runWorker, type WorkerExit } from "../../src/runtime/worker.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { CloseCode } from "../../src/transport/closeCodes.ts";
import {
  HAND_DRIVEN_SECRET,
  type HandDrivenOptions,
  handDrivenCoordinator,
} from "../fixtures/handDrivenCoordinator.ts";

const ADDRESS = "memory://coordinator";
const silentFor = (ms: number) =>
  `no frame or ping from the coordinator for ${ms} ms; it may have crashed or the network dropped the connection`;

/** Lets every queued microtask run. */
const drain = () => new Promise((resolve) => setImmediate(resolve));

/** Runs the clock's timers up to `ms` from now, letting microtasks run between them. */
async function advance(clock: SimClock, ms: number): Promise<void> {
  const until = clock.now() + ms;
  await drain();
  while (clock.fireNext(until)) await drain();
}

interface Options extends Omit<HandDrivenOptions, "protocol"> {
  silenceLimitMs?: number;
  welcomeTimeoutMs?: number;
  idleExitMs?: number;
}

/**
 * A worker connected to a coordinator end the test drives, both past the handshake (unless
 * `handshake` is false).
 */
async function connected(options: Options = {}) {
  const clock = new SimClock();
  const net = memoryNet();
  const listener = await net.listen(ADDRESS);
  const aborted: unknown[] = [];
  /** The ids of the jobs whose handler started, and how to end each `held` job. */
  const started: string[] = [];
  const release = new Map<string, () => void>();
  const jobs = loadJobs({
    held: (_: unknown, ctx: { job: { id: string } }) => {
      started.push(ctx.job.id);
      return new Promise((resolve) => release.set(ctx.job.id, () => resolve("done")));
    },
    hang: (_: unknown, ctx: { signal: AbortSignal }) =>
      new Promise((_resolve, reject) =>
        ctx.signal.addEventListener("abort", () => {
          aborted.push(ctx.signal.reason);
          reject(ctx.signal.reason);
        }),
      ),
  });
  const end = handDrivenCoordinator(listener, options);
  // The worker's view of the clock: the same timers, a time of day the test can step.
  const wallClock = {
    offsetMs: 0,
    now: () => clock.now() + wallClock.offsetMs,
    setTimeout: (fn: () => void, ms: number) => clock.setTimeout(fn, ms),
    clearTimeout: (handle: unknown) => clock.clearTimeout(handle),
  };
  let exit: WorkerExit | undefined;
  void runWorker({
    net,
    address: ADDRESS,
    jobs,
    name: "w-1",
    instance: "i-1",
    resources: { cpus: 1 },
    secret: HAND_DRIVEN_SECRET,
    logger: pino({ level: "silent" }),
    clock: wallClock,
    ...(options.silenceLimitMs !== undefined && { silenceLimitMs: options.silenceLimitMs }),
    ...(options.welcomeTimeoutMs !== undefined && { welcomeTimeoutMs: options.welcomeTimeoutMs }),
    ...(options.idleExitMs !== undefined && { idleExitMs: options.idleExitMs }),
  }).then((e) => {
    exit = e;
  });
  await drain();
  return {
    clock,
    wallClock,
    coordinator: end.link!,
    closes: end.closes,
    frames: end.frames,
    aborted,
    started,
    release,
    exit: () => exit,
  };
}

/** The worker is still there 1 ms before `limitMs`, and at it gives up with 4009 and `reason`. */
async function expectGivesUpAt(
  w: Awaited<ReturnType<typeof connected>>,
  limitMs: number,
  reason: string,
): Promise<void> {
  await advance(w.clock, limitMs - 1);
  expect(w.exit()).toBeUndefined();
  await advance(w.clock, 1);
  expect(w.exit()).toMatchObject({ code: CloseCode.coordinatorSilent, reason, jobsFinished: 0 });
  await drain();
  expect(w.closes).toEqual([[CloseCode.coordinatorSilent, reason]]);
  expect(w.clock.pending).toBe(0);
}

describe("the worker's silence watchdog", () => {
  it("closes with 4009 after 4 × the announced ping interval of silence, not before", async () => {
    const w = await connected({ heartbeatMs: 5_000 });
    await expectGivesUpAt(w, 20_000, silentFor(20_000));
  });

  it("counts from the last ping or frame: each one restarts the limit", async () => {
    const w = await connected({ heartbeatMs: 1_000 });
    for (let i = 0; i < 10; i++) {
      await advance(w.clock, 3_500);
      w.coordinator.ping();
    }
    for (let i = 0; i < 10; i++) {
      await advance(w.clock, 3_500);
      w.coordinator.send(JSON.stringify({ type: "cancel", job: "not-running" }));
    }
    await drain();
    const lastHeard = w.clock.now();
    await advance(w.clock, 3_999);
    expect(w.exit()).toBeUndefined();
    await advance(w.clock, 1);
    expect(w.exit()?.code).toBe(CloseCode.coordinatorSilent);
    expect(w.clock.now() - lastHeard).toBe(4_000);
  });

  it("aborts the running job when it gives up", async () => {
    const w = await connected({ heartbeatMs: 100 });
    w.coordinator.send(
      JSON.stringify({ type: "job", id: "j1", kind: "hang", input: null, deps: {}, attempt: 1 }),
    );
    await advance(w.clock, 400);
    expect(w.exit()?.code).toBe(CloseCode.coordinatorSilent);
    expect(w.aborted).toHaveLength(1);
    expect((w.aborted[0] as Error).message).toBe(`connection closed: ${silentFor(400)}`);
  });

  it("keeps no watchdog for a coordinator whose welcome announces no ping interval", async () => {
    const w = await connected();
    expect(w.clock.pending).toBe(0);
    await advance(w.clock, 7_200_000);
    expect(w.exit()).toBeUndefined();
  });

  it("uses silenceLimitMs when given, with or without an announced interval", async () => {
    const announced = await connected({ heartbeatMs: 5_000, silenceLimitMs: 60_000 });
    await advance(announced.clock, 59_999);
    expect(announced.exit()).toBeUndefined();
    await advance(announced.clock, 1);
    expect(announced.exit()?.reason).toBe(silentFor(60_000));

    const unannounced = await connected({ silenceLimitMs: 300 });
    await advance(unannounced.clock, 300);
    expect(unannounced.exit()?.code).toBe(CloseCode.coordinatorSilent);
  });

  it("says a silenceLimitMs not above the announced ping interval gave up between pings, not that the coordinator crashed", async () => {
    const w = await connected({ heartbeatMs: 5_000, silenceLimitMs: 20 });
    await expectGivesUpAt(
      w,
      20,
      "no frame or ping from the coordinator for 20 ms, which is not above its ping interval of 5000 ms, so the worker gave up between two pings: raise the silence limit (--silence-limit-ms, in milliseconds) to 20000 or leave it out",
    );
  });

  it("waits out a limit longer than Node's longest timer in full", async () => {
    const w = await connected({ heartbeatMs: 2 ** 30 });
    await advance(w.clock, 2 ** 32 - 1);
    expect(w.exit()).toBeUndefined();
    await advance(w.clock, 1);
    expect(w.exit()?.reason).toBe(silentFor(2 ** 32));
  });

  it("measures silence with timers, not the time of day: a clock stepped forward is not silence", async () => {
    const w = await connected({ heartbeatMs: 1_000 });
    w.coordinator.ping();
    await drain();
    w.wallClock.offsetMs = 3_600_000;
    await advance(w.clock, 3_999);
    expect(w.exit()).toBeUndefined();
    await advance(w.clock, 1);
    expect(w.exit()?.code).toBe(CloseCode.coordinatorSilent);
  });

  it("stops watching when the coordinator closes the link", async () => {
    const w = await connected({ heartbeatMs: 5_000 });
    w.coordinator.close(CloseCode.normal, "the run is finished");
    await drain();
    expect(w.exit()).toMatchObject({
      code: CloseCode.normal,
      reason: "the run is finished",
      jobsFinished: 0,
    });
    expect(w.clock.pending).toBe(0);
  });
});

const noWelcomeWithin = (ms: number) =>
  `no welcome from the coordinator within ${ms} ms of connecting; is the address a baton coordinator's, and is it overloaded?`;

describe("the worker's welcome deadline", () => {
  it("gives up with 4009 after 30 s on a server that accepts and then says nothing", async () => {
    const w = await connected({ handshake: false });
    await expectGivesUpAt(w, 30_000, noWelcomeWithin(30_000));
  });

  it("counts from connecting: frames short of the welcome do not extend it", async () => {
    const w = await connected({ handshake: false, welcomeTimeoutMs: 1_000 });
    for (let i = 0; i < 3; i++) {
      w.coordinator.send(JSON.stringify({ type: "challenge", nonce: `n${i}`, protocol: [1, 2] }));
      await advance(w.clock, 300);
    }
    expect(w.exit()).toBeUndefined();
    await advance(w.clock, 100);
    expect(w.exit()?.reason).toBe(noWelcomeWithin(1_000));
  });
});

const jobFrame = (id: string) =>
  JSON.stringify({ type: "job", id, kind: "held", input: null, deps: {}, attempt: 1 });
const leaving = (ms: number) => `worker w-1 leaving: no job for ${ms} ms`;

describe("the worker's idle exit", () => {
  it("leaves with 1001 after idleExitMs without a job from the welcome, not before", async () => {
    const w = await connected({ heartbeatMs: 5_000, idleExitMs: 60_000 });
    for (let i = 0; i < 5; i++) {
      await advance(w.clock, 11_999);
      w.coordinator.ping();
    }
    expect(w.exit()).toBeUndefined();
    await advance(w.clock, 5);
    expect(w.closes).toEqual([[CloseCode.goingAway, leaving(60_000)]]);
    expect(w.exit()).toMatchObject({ code: CloseCode.goingAway, idle: true, jobsFinished: 0 });
    expect(w.clock.pending).toBe(0);
  });

  it("does not count while a job runs, and counts again from its result", async () => {
    const w = await connected({ idleExitMs: 1_000 });
    await advance(w.clock, 999);
    w.coordinator.send(jobFrame("j1"));
    await advance(w.clock, 10_000);
    expect(w.started).toEqual(["j1"]);
    expect(w.exit()).toBeUndefined();
    w.release.get("j1")!();
    await drain();
    expect(w.frames).toMatchObject([{ type: "result", job: "j1", status: "completed" }]);
    await advance(w.clock, 999);
    expect(w.exit()).toBeUndefined();
    await advance(w.clock, 1);
    expect(w.exit()).toMatchObject({ code: CloseCode.goingAway, idle: true, jobsFinished: 1 });
  });

  it("runs no job sent as it leaves: the close gives it back to the coordinator", async () => {
    const w = await connected({ idleExitMs: 1_000 });
    await advance(w.clock, 999);
    // The coordinator hands it a job in the same instant the worker decides to leave: the
    // frame is on its way, behind it the worker's close.
    w.coordinator.send(jobFrame("j1"));
    expect(w.clock.fireNext(w.clock.now() + 1)).toBe(true);
    await drain();
    expect(w.started).toEqual([]);
    expect(w.frames).toEqual([]);
    expect(w.closes).toEqual([[CloseCode.goingAway, leaving(1_000)]]);
    expect(w.exit()).toMatchObject({ idle: true, jobsFinished: 0 });
  });

  it("stays for good without idleExitMs", async () => {
    const w = await connected();
    await advance(w.clock, 7_200_000);
    expect(w.exit()).toBeUndefined();
    expect(w.clock.pending).toBe(0);
  });
});

describe("the worker's timeout options", () => {
  it.each([
    ["silenceLimitMs", 0, "leave it out for 4 × the coordinator's ping interval"],
    ["silenceLimitMs", -1, "leave it out for 4 × the coordinator's ping interval"],
    ["silenceLimitMs", Number.NaN, "leave it out for 4 × the coordinator's ping interval"],
    [
      "silenceLimitMs",
      Number.POSITIVE_INFINITY,
      "leave it out for 4 × the coordinator's ping interval",
    ],
    ["welcomeTimeoutMs", 0, "leave it out for 30 s"],
    ["welcomeTimeoutMs", -5, "leave it out for 30 s"],
    ["welcomeTimeoutMs", Number.NaN, "leave it out for 30 s"],
    ["idleExitMs", 0, "leave it out for a worker that stays until the run ends"],
    [
      "idleExitMs",
      Number.POSITIVE_INFINITY,
      "leave it out for a worker that stays until the run ends",
    ],
  ])("refuses %s %d before connecting", async (name, ms, otherwise) => {
    const failure = runWorker({
      net: memoryNet(),
      address: ADDRESS,
      jobs: loadJobs({ nap: () => null }),
      name: "w-1",
      instance: "i-1",
      resources: {},
      secret: HAND_DRIVEN_SECRET,
      logger: pino({ level: "silent" }),
      [name]: ms,
    });
    await expect(failure).rejects.toBeInstanceOf(ConfigError);
    await expect(failure).rejects.toThrow(
      `${name} must be a positive number of milliseconds (got ${ms}); ${otherwise}`,
    );
  });
});
