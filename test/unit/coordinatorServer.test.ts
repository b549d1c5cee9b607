/**
 * CoordinatorServer against a hand-driven link in virtual time: what it does with a link's
 * events once that link's connection machine has stopped or is closing, and how a result
 * being written to the store (by `writeResults`) and a worker's silence meet.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createActor } from "xstate";
import type { PlannedJob } from "../../src/graph/job.ts";
import { coordinatorMachine } from "../../src/machines/coordinator.ts";
import {
  CoordinatorServer,
  type CoordinatorServerOptions,
} from "../../src/runtime/coordinatorServer.ts";
import type { Link, Listener } from "../../src/runtime/ports.ts";
import type { ResultStore } from "../../src/runtime/resultStore.ts";
import { STORE_FULL_WAIT_MS, writeResults } from "../../src/runtime/resultWriter.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { workerProof } from "../../src/transport/auth.ts";
import { describeClose } from "../../src/transport/closeCodes.ts";
import { PROTOCOL } from "../../src/transport/protocolVersion.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * A link driven by the test: it records what the server sends and closes, delivers the
 * frames the test makes arrive, and never answers a close by itself.
 */
function drivenLink(clock: SimClock, answerPings: boolean, id = "c1") {
  const frameHandlers: ((frame: string) => void)[] = [];
  const pongHandlers: (() => void)[] = [];
  const closeHandlers: ((code: number, reason: string) => void)[] = [];
  const sent: Record<string, unknown>[] = [];
  const closes: [number, string][] = [];
  let admitted = 0;
  const link: Link = {
    id,
    remote: "test",
    bufferedAmount: 0,
    maxFrameBytes: Number.POSITIVE_INFINITY,
    send: (frame) => sent.push(JSON.parse(frame)),
    close: (code, reason) => closes.push([code, reason]),
    // A live worker's side answers every ping 1 ms later; a blocked one never does.
    ping: () => {
      if (!answerPings) return;
      clock.setTimeout(() => {
        for (const handler of pongHandlers) handler();
      }, 1);
    },
    onFrame: (handler) => frameHandlers.push(handler),
    onPong: (handler) => pongHandlers.push(handler),
    onPing: () => {},
    onClose: (handler) => closeHandlers.push(handler),
    admit: () => {
      admitted += 1;
    },
  };
  const arrive = (frame: object) => {
    for (const handler of frameHandlers) handler(JSON.stringify(frame));
  };
  const arriveClosed = (code: number, reason: string) => {
    for (const handler of closeHandlers) handler(code, reason);
  };
  return { link, sent, closes, arrive, arriveClosed, admitted: () => admitted };
}

const SECRET = new Uint8Array(32).fill(3);

type Put = ResultStore["put"];

/**
 * A coordinator for `jobs` and its server, on a SimClock, with one driven link accepted;
 * `store` makes a result store's `put` on that clock, and its results are written with it.
 */
function serve(
  jobs: PlannedJob[],
  store?: (clock: SimClock) => Put,
  answerPings = false,
  more: Partial<Pick<CoordinatorServerOptions, "lookup" | "logger">> & {
    leaseTimeoutMs?: number;
  } = {},
) {
  const clock = new SimClock();
  const put = store?.(clock);
  const coordinator = createActor(coordinatorMachine, {
    input: {
      jobs,
      durable: put !== undefined,
      ...(more.leaseTimeoutMs !== undefined && { leaseTimeoutMs: more.leaseTimeoutMs }),
    },
    clock,
  });
  if (put) {
    writeResults(coordinator, { dir: "store", put }, pino({ level: "silent" }), {
      clock,
      waitMs: STORE_FULL_WAIT_MS,
      said: () => {},
      giveUp: () => {},
    });
  }
  coordinator.start();
  let accept!: (link: Link) => void;
  const listener: Listener = {
    address: "memory://test",
    onConnection: (handler) => {
      accept = handler;
    },
    close: async () => {},
  };
  const server = new CoordinatorServer({
    listener,
    coordinator,
    clock,
    entropy: new SimEntropy(1),
    secret: SECRET,
    run: "r1",
    logger: more.logger ?? pino({ level: "silent" }),
    ...(more.lookup && { lookup: more.lookup }),
  });
  /** A second link from a worker, accepted as `id`. */
  const another = (id: string) => {
    const link = drivenLink(clock, answerPings, id);
    accept(link.link);
    return link;
  };
  const driven = drivenLink(clock, answerPings);
  accept(driven.link);
  return { clock, coordinator, server, put, another, ...driven };
}

/** A result store whose every write takes `ms` of virtual time (a stalled disk). */
function stalledFor(ms: number) {
  return (clock: SimClock) =>
    vi.fn<Put>(() => new Promise<void>((resolve) => clock.setTimeout(() => resolve(), ms)));
}

/** One job for the tests that need one. */
const crunch: PlannedJob = {
  id: "j1",
  kind: "crunch",
  input: null,
  deps: [],
  requires: {},
  retries: 3,
};

/**
 * Answers the server's challenge (the first frame it sent) with a valid hello as "w1", from
 * worker process `instance` when given.
 */
function hello(
  sent: Record<string, unknown>[],
  arrive: (frame: object) => void,
  instance?: string,
): void {
  const challenge = sent[0] as { nonce: string };
  arrive({
    type: "hello",
    protocol: [...PROTOCOL],
    worker: "w1",
    resources: {},
    codeHash: "c",
    proof: workerProof(SECRET, challenge.nonce, PROTOCOL, "w1"),
    ...(instance !== undefined && { instance }),
  });
}

/** A logger at info whose lines are kept, parsed, in `lines`. */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: "info" },
    new Writable({
      write(chunk, _, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  return { logger, lines };
}

/** Runs the clock's timers up to `ms`, letting microtasks run between them. */
async function runUntil(clock: SimClock, ms: number): Promise<void> {
  while (clock.fireNext(ms)) await new Promise((resolve) => setImmediate(resolve));
}

describe("CoordinatorServer", () => {
  it("gives up on a worker it closed for silence, until that worker joins again", async () => {
    const { clock, coordinator, server, sent, closes, arrive, another } = serve([crunch]);
    hello(sent, arrive);
    expect(server.joined("w1")).toBe(true);
    expect(server.gaveUpOn("w1")).toBe(false);
    await runUntil(clock, 20_000);
    expect(closes).toEqual([[4005, "no heartbeat for 20000 ms"]]);
    expect(server.gaveUpOn("w1")).toBe(true);
    // The same worker, back on a new connection (baton worker --retry-for).
    const again = another("c2");
    hello(again.sent, again.arrive);
    expect(server.gaveUpOn("w1")).toBe(false);
    expect(server.gaveUpOn("w2")).toBe(false);
    coordinator.stop();
  });

  it("replaces a worker's half-open connection at once when that worker connects again (4008): its job is released once and runs again", async () => {
    const { coordinator, server, sent, closes, arrive, another } = serve([crunch]);
    hello(sent, arrive, "proc-1");
    expect(sent.at(-1)).toMatchObject({ type: "job", id: "j1", attempt: 1 });
    // The worker's side of the link is gone unseen; the same process connects again.
    const back = another("c2");
    hello(back.sent, back.arrive, "proc-1");
    expect(closes).toEqual([[4008, "replaced by a newer connection of the same worker"]]);
    expect(back.closes).toEqual([]);
    expect(back.admitted()).toBe(1);
    const board = coordinator.getSnapshot().context.board;
    expect(board.jobs.get("j1")).toMatchObject({ state: "running", holder: "c2" });
    expect(board.jobs.get("j1")!.lostWorkers).toEqual(["w1"]);
    expect(back.sent.at(-1)).toMatchObject({ type: "job", id: "j1", attempt: 2 });
    expect(server.joined("w1")).toBe(true);
    expect(server.gaveUpOn("w1")).toBe(false);
    coordinator.stop();
  });

  it("refuses another worker process under a connected worker's name (4010), and takes one once that connection is gone", async () => {
    const { coordinator, sent, closes, arrive, arriveClosed, another } = serve([crunch]);
    hello(sent, arrive, "proc-1");
    const twin = another("c2");
    hello(twin.sent, twin.arrive, "proc-2");
    expect(twin.closes).toEqual([
      [
        4010,
        'name in use: another worker process named "w1" is connected to this run; give each worker its own --name',
      ],
    ]);
    expect(closes).toEqual([]);
    expect(coordinator.getSnapshot().context.board.jobs.get("j1")).toMatchObject({
      holder: "c1",
    });
    arriveClosed(1006, "");
    const next = another("c3");
    hello(next.sent, next.arrive, "proc-2");
    expect(next.closes).toEqual([]);
    expect(next.admitted()).toBe(1);
    coordinator.stop();
  });

  it("takes a worker whose hello gives no instance beside one of the same name, as before protocol 7", async () => {
    const { coordinator, sent, closes, arrive, another } = serve([crunch]);
    hello(sent, arrive, "proc-1");
    const older = another("c2");
    hello(older.sent, older.arrive);
    expect(older.closes).toEqual([]);
    expect(older.admitted()).toBe(1);
    expect(closes).toEqual([]);
    coordinator.stop();
  });

  it.each<[string, number, boolean]>([
    ["broke (1006): lost, given up on", 1006, true],
    ["gave up on a silent coordinator (4009): lost, given up on", 4009, true],
    ["went away (1001): left on its own, not given up on", 1001, false],
  ])("a joined worker whose link %s", async (_, code, given) => {
    const { coordinator, server, sent, arrive, arriveClosed } = serve([crunch]);
    hello(sent, arrive);
    arriveClosed(code, "");
    await new Promise((resolve) => setImmediate(resolve));
    expect(server.gaveUpOn("w1")).toBe(given);
    coordinator.stop();
  });

  it("does not give up on a worker it stops at the run's end, nor on one whose hello it refused", async () => {
    const { clock, coordinator, server, sent, closes, arrive, another } = serve([]);
    hello(sent, arrive);
    await runUntil(clock, 0);
    expect(closes).toEqual([[1000, "the run is finished"]]);
    expect(server.gaveUpOn("w1")).toBe(false);
    const stranger = another("c2");
    const challenge = stranger.sent[0] as { nonce: string };
    stranger.arrive({
      type: "hello",
      protocol: [...PROTOCOL],
      worker: "w2",
      resources: {},
      codeHash: "c",
      proof: workerProof(new Uint8Array(32), challenge.nonce, PROTOCOL, "w2"),
    });
    expect(stranger.closes.map(([code]) => code)).toEqual([4001]);
    expect(server.gaveUpOn("w2")).toBe(false);
    coordinator.stop();
  });

  it("drops a link's close that arrives after its connection machine stopped on its own", async () => {
    const { clock, coordinator, server, closes, arriveClosed } = serve([]);
    expect(server.connectionCount).toBe(1);
    // No hello: 4003 after 10 s, then the machine stops waiting for the close after 5 s more.
    await runUntil(clock, 15_000);
    expect(closes).toEqual([[4003, "no hello within 10000 ms of connecting"]]);
    expect(server.connectionCount).toBe(0);
    const warn = vi.spyOn(console, "warn");
    arriveClosed(4003, "no hello within 10000 ms of connecting");
    await new Promise((resolve) => setImmediate(resolve));
    expect(warn).not.toHaveBeenCalled();
    coordinator.stop();
  });

  it("admits the link (lifting its handshake budget) when its hello is accepted, not before", async () => {
    const { clock, coordinator, sent, arrive, admitted } = serve([crunch]);
    await runUntil(clock, 1_000);
    expect(admitted()).toBe(0);
    hello(sent, arrive);
    expect(admitted()).toBe(1);
    coordinator.stop();
  });

  it.each<[string, number, string, string[]]>([
    [
      "its link refused a binary frame: a warning saying so",
      4000,
      "binary frames are not part of the protocol",
      ["connection closed before its hello 4000"],
    ],
    ["the client vanished: a warning", 1006, "", ["connection closed before its hello 1006"]],
    ["the client went away: nothing", 1001, "going away", []],
  ])("a link closed before its hello, as %s", async (_, code, reason, warned) => {
    const { logger, lines } = capturedLogger();
    const { coordinator, arriveClosed } = serve([], undefined, false, { logger });
    arriveClosed(code, reason);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((line) => `${line.msg} ${line.code}`)).toEqual(warned);
    if (warned.length > 0) {
      expect(lines[0]).toMatchObject({
        level: 40,
        remote: "test",
        reason,
        meaning: describeClose(code),
      });
    }
    coordinator.stop();
  });

  it("a rejected hello is named once, by the rejection with the worker it named, not again when its link closes", async () => {
    const { logger, lines } = capturedLogger();
    const { coordinator, sent, arrive, arriveClosed, closes } = serve([], undefined, false, {
      logger,
    });
    const challenge = sent[0] as { nonce: string };
    arrive({
      type: "hello",
      protocol: [...PROTOCOL],
      worker: "w1",
      resources: {},
      codeHash: "c",
      proof: workerProof(new Uint8Array(32), challenge.nonce, PROTOCOL, "w1"),
    });
    expect(closes.map(([code]) => code)).toEqual([4001]);
    arriveClosed(...closes[0]!);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((line) => `${line.msg} ${line.code}`)).toEqual(["closing connection 4001"]);
    // The worker its hello named, which the operator looks for among the workers started.
    expect(lines[0]).toMatchObject({ worker: "w1" });
    coordinator.stop();
  });

  it("encodes each job frame once, also when the grant answers the connection's own request for work", async () => {
    // The grant of the second job answers the LEASE the connection sends as it hands the
    // first job's result on: its machine takes that GRANT after the server's send returned.
    const next: PlannedJob = { ...crunch, id: "j2", deps: [] };
    const { clock, coordinator, sent, arrive } = serve([crunch, next]);
    const stringify = vi.spyOn(JSON, "stringify");
    const jobFramesEncoded = () =>
      stringify.mock.calls.filter(([value]) => (value as { type?: unknown }).type === "job").length;
    hello(sent, arrive);
    await runUntil(clock, 1_000);
    const granted = () => sent.filter((f) => f.type === "job").map((f) => f.id);
    arrive({ type: "result", job: granted()[0], status: "completed", value: 1 });
    await runUntil(clock, 1_000);
    expect(granted()).toEqual(["j1", "j2"]);
    expect(jobFramesEncoded()).toBe(2);
    coordinator.stop();
  });

  it("a worker whose result takes longer to store than the probe deadline takes its next job meanwhile", async () => {
    // The store stalls for 30 s (a network file system, say); the worker answers every ping.
    const next: PlannedJob = { ...crunch, id: "j2", deps: [] };
    const after: PlannedJob = { ...crunch, id: "j3", deps: ["j1"] };
    const { clock, coordinator, put, sent, closes, arrive } = serve(
      [crunch, next, after],
      stalledFor(30_000),
      true,
    );
    hello(sent, arrive);
    await runUntil(clock, 1_000);
    const granted = () => sent.filter((f) => f.type === "job").map((f) => f.id);
    const first = granted()[0] as string;
    arrive({ type: "result", job: first, status: "completed", value: 42 });
    await runUntil(clock, 1_000);
    const board = coordinator.getSnapshot().context.board;
    // The first result is being written; the worker already runs the other job.
    expect(board.jobs.get(first)?.state).toBe("storing");
    expect(granted()).toHaveLength(2);
    const second = granted()[1] as string;
    arrive({ type: "result", job: second, status: "completed", value: 43 });
    await runUntil(clock, 25_000);
    // j3 waits for j1's result to be durable, not just reported.
    expect(board.jobs.get("j3")?.state).toBe("blocked");
    await runUntil(clock, 40_000);
    expect(granted()).toEqual([first, second, "j3"]);
    arrive({ type: "result", job: "j3", status: "completed", value: 44 });
    await runUntil(clock, 80_000);
    expect(put).toHaveBeenCalledTimes(3);
    expect([...board.jobs.values()].map((r) => r.state)).toEqual([
      "completed",
      "completed",
      "completed",
    ]);
    // Closed only because the run is over, not for silence.
    expect(closes).toEqual([[1000, "the run is finished"]]);
    coordinator.stop();
  });

  it("counts a result being stored when its worker falls silent meanwhile", async () => {
    // The store stalls for 30 s and the worker never answers a ping (it died half-open):
    // the probe deadline passes while the answer is being stored.
    const { clock, coordinator, put, sent, closes, arrive } = serve([crunch], stalledFor(30_000));
    hello(sent, arrive);
    await runUntil(clock, 1_000);
    arrive({ type: "result", job: "j1", status: "completed", value: 42 });
    await runUntil(clock, 25_000);
    // The worker is closed for silence, but it held nothing: the job is not lost.
    expect(closes).toEqual([[4005, "no heartbeat for 20000 ms"]]);
    expect(coordinator.getSnapshot().context.board.jobs.get("j1")?.state).toBe("storing");
    await runUntil(clock, 40_000);
    expect(put).toHaveBeenCalledTimes(1);
    const record = coordinator.getSnapshot().context.board.jobs.get("j1")!;
    expect(record.state).toBe("completed");
    expect(record.lostWorkers).toEqual([]);
    coordinator.stop();
  });

  it("a result the store cannot write is a failed attempt, and the job runs again", async () => {
    let writes = 0;
    const put = vi.fn<Put>(async () => {
      if (++writes === 1) throw Object.assign(new Error("EIO: i/o error"), { code: "EIO" });
    });
    const { clock, coordinator, sent, arrive } = serve([crunch], () => put, true);
    hello(sent, arrive);
    await runUntil(clock, 0);
    arrive({ type: "result", job: "j1", status: "completed", value: 42 });
    await runUntil(clock, 0);
    const record = coordinator.getSnapshot().context.board.jobs.get("j1")!;
    expect(record.failures).toBe(1);
    expect(record.error?.message).toMatch(
      /^the result of job j1 \(crunch\) could not be stored in store: i\/o error \(EIO\); check that the store's disk has room and is writable$/,
    );
    expect(sent.filter((f) => f.type === "job")).toHaveLength(2);
    arrive({ type: "result", job: "j1", status: "completed", value: 42 });
    await runUntil(clock, 0);
    expect(record.state).toBe("completed");
    expect(record.attempts).toBe(2);
    coordinator.stop();
  });

  it("does not store a result that arrives after the connection was closed for silence", async () => {
    const put = vi.fn<Put>(async () => {});
    const { clock, coordinator, sent, closes, arrive } = serve([crunch], () => put);
    hello(sent, arrive);
    await runUntil(clock, 0);
    expect(sent.map((frame) => frame.type)).toEqual(["challenge", "welcome", "job"]);
    // The worker's event loop is blocked: no pong, so the connection is closed at 20 s and
    // the job goes back to the coordinator (WORKER_LOST), to run again elsewhere.
    await runUntil(clock, 20_000);
    expect(closes).toEqual([[4005, "no heartbeat for 20000 ms"]]);
    expect(coordinator.getSnapshot().context.board.jobs.get("j1")?.state).toBe("ready");
    // Then its answer arrives, before its side has read the close: it counts for nothing
    // and must not be stored, or the job's next run would store it a second time.
    arrive({ type: "result", job: "j1", status: "completed", value: 42 });
    await runUntil(clock, 20_000);
    expect(put).not.toHaveBeenCalled();
    coordinator.stop();
  });

  it("a lease that expired while its blocked result was looked up does not close the lease granted after it", async () => {
    // The lease runs out 8.8 s after the grant (the first sweep past 8 s). The worker's
    // blocked result arrives at 8.5 s; the store lookup of what it needs takes 1 s, so the
    // expiry waits behind it. The needed job is stored: the job is ready again at once and
    // goes back to the same worker, as attempt 2. The old expiry must not close that lease.
    const needed: PlannedJob = { ...crunch, id: "n1", kind: "fetch" };
    const lookup = (ids: readonly string[]) =>
      new Promise<ReadonlyMap<string, string>>((resolve) =>
        clock.setTimeout(() => resolve(new Map(ids.map((id) => [id, `stored ${id}`]))), 1_000),
      );
    const { clock, coordinator, sent, closes, arrive } = serve([crunch], undefined, false, {
      lookup,
      leaseTimeoutMs: 8_000,
    });
    hello(sent, arrive);
    await runUntil(clock, 8_500);
    arrive({ type: "result", job: "j1", status: "blocked", needs: [needed] });
    await runUntil(clock, 10_000);
    const jobs = sent.filter((f) => f.type === "job").map((f) => [f.id, f.attempt]);
    expect(jobs).toEqual([
      ["j1", 1],
      ["j1", 2],
    ]);
    expect(closes).toEqual([]);
    const record = coordinator.getSnapshot().context.board.jobs.get("j1")!;
    expect(record.state).toBe("running");
    expect(record.lostWorkers).toEqual([]);
    coordinator.stop();
  });
});
