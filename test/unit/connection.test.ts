import { describe, expect, it, vi } from "vitest";
import { ABORT_GRACE_SLACK_MS, type ConnectionEvent } from "../../src/machines/connection.ts";
import type { NameHolder } from "../../src/machines/nameClaim.ts";
import type { HelloFrame, JobFrame, ResultFrame } from "../../src/transport/frames.ts";
import { type ConnectionOptions, openConnection } from "../fixtures/connectionOnClock.ts";

function helloFrame(overrides: Partial<HelloFrame> = {}): HelloFrame {
  return {
    type: "hello",
    protocol: [1, 2],
    worker: "w1",
    resources: { cpus: 4 },
    codeHash: "code-1",
    proof: "p1",
    ...overrides,
  };
}

function hello(
  overrides: Partial<HelloFrame> = {},
  authentic = true,
  holders: readonly NameHolder[] = [],
): ConnectionEvent {
  return { type: "HELLO", frame: helloFrame(overrides), authentic, welcomeProof: "wp", holders };
}

function jobFrame(id: string, attempt = 1): JobFrame {
  return { type: "job", id, kind: "work", input: { n: 1 }, deps: {}, attempt };
}

function grant(id: string, bytes = 100, attempt = 1): ConnectionEvent {
  return { type: "GRANT", job: id, frame: jobFrame(id, attempt), bytes };
}

function result(job: string): ConnectionEvent {
  return { type: "RESULT", frame: { type: "result", job, status: "completed", value: 7 } };
}

/** A connection past its handshake, with the emitted and coordinator logs cleared. */
function registered(options: ConnectionOptions = {}) {
  const c = openConnection(options);
  c.send(hello());
  c.emitted.length = 0;
  c.events.length = 0;
  return c;
}

/** A registered connection holding job j1. */
function busy(options: ConnectionOptions = {}) {
  const c = registered(options);
  c.send(grant("j1"));
  c.emitted.length = 0;
  return c;
}

describe("connection: handshake", () => {
  it("the challenge frame is sent on start", () => {
    const c = openConnection();
    expect(c.emitted).toEqual([
      { type: "send", frame: { type: "challenge", nonce: "n1", protocol: [1, 2] } },
    ]);
    expect(c.value()).toBe("handshaking");
  });

  it("hello deadline → close 4003 with a readable reason and no WORKER_LOST", () => {
    const c = openConnection({ helloTimeoutMs: 3000 });
    c.clock.increment(2999);
    expect(c.closes()).toEqual([]);
    c.clock.increment(1);
    expect(c.closes()).toEqual([
      { type: "close", code: 4003, reason: "no hello within 3000 ms of connecting" },
    ]);
    expect(c.value()).toBe("rejected");
    c.send({ type: "CLOSED", code: 4003, reason: "" });
    expect(c.value()).toBe("closed");
    expect(c.events).toEqual([]);
  });

  it("a version range with no overlap → 4002 whose reason names both ranges", () => {
    const c = openConnection();
    c.send(hello({ protocol: [3, 4] }));
    expect(c.value()).toBe("rejected");
    expect(c.closes()).toHaveLength(1);
    const close = c.closes()[0]!;
    expect(close.code).toBe(4002);
    expect(close.reason).toContain("the coordinator speaks 1..2");
    expect(close.reason).toContain("the worker speaks 3..4");
    expect(c.events).toEqual([]);
  });

  it.each([
    { ours: [1, 2], theirs: [1, 5], version: 2 },
    { ours: [1, 3], theirs: [2, 5], version: 3 },
    { ours: [2, 6], theirs: [1, 4], version: 4 },
    { ours: [1, 2], theirs: [1, 1], version: 1 },
  ] as { ours: [number, number]; theirs: [number, number]; version: number }[])(
    "negotiation picks the highest shared version: ours $ours, theirs $theirs → $version",
    ({ ours, theirs, version }) => {
      const c = openConnection({ protocol: ours });
      c.send(hello({ protocol: theirs }));
      expect(c.emitted[1]).toEqual({
        type: "send",
        frame: {
          type: "welcome",
          protocol: version,
          run: "r1",
          proof: "wp",
          ...(version >= 2 && { heartbeatMs: 5_000 }),
          // Version 4 on: the frame limit, so a worker keeps its results under it.
          ...(version >= 4 && { maxFrameBytes: 1_000 }),
        },
      });
      expect(c.emitted[2]).toMatchObject({ type: "registered", protocol: version });
    },
  );

  it("not authentic → 4001", () => {
    const c = openConnection();
    c.send(hello({}, false));
    expect(c.value()).toBe("rejected");
    expect(c.closes()).toEqual([
      { type: "close", code: 4001, reason: expect.stringContaining("authentication failed") },
    ]);
    expect(c.emitted.some((e) => e.type === "registered")).toBe(false);
    expect(c.events).toEqual([]);
  });

  it("code hash mismatch → 4006 naming both hashes", () => {
    const c = openConnection({ codeHash: "code-1" });
    c.send(hello({ codeHash: "code-2" }));
    expect(c.value()).toBe("rejected");
    const close = c.closes()[0]!;
    expect(close.code).toBe(4006);
    expect(close.reason).toContain("code-1");
    expect(close.reason).toContain("code-2");
    expect(c.events).toEqual([]);
  });

  it("a matching code hash is accepted", () => {
    const c = openConnection({ codeHash: "code-1" });
    c.send(hello({ codeHash: "code-1" }));
    expect(c.value()).toEqual({ registered: "idle" });
  });

  it("a valid hello → welcome with the given proof, registered, and LEASE to the coordinator", () => {
    const c = openConnection();
    c.send(hello({ worker: "w9", resources: { cpus: 2, gpus: 1 } }));
    expect(c.emitted.slice(1)).toEqual([
      {
        type: "send",
        frame: { type: "welcome", protocol: 2, run: "r1", proof: "wp", heartbeatMs: 5_000 },
      },
      { type: "registered", worker: "w9", protocol: 2, resources: { cpus: 2, gpus: 1 } },
    ]);
    expect(c.events).toEqual([
      { type: "LEASE", conn: "c1", worker: "w9", resources: { cpus: 2, gpus: 1 } },
    ]);
    expect(c.value()).toEqual({ registered: "idle" });
  });

  it.each([
    [1000, 1000],
    [250, 250],
    [2.5, 3],
    [0, 1],
  ])(
    "the welcome tells the worker the ping interval: heartbeatMs %d → %d (a positive integer)",
    (heartbeatMs, announced) => {
      const c = openConnection({ heartbeatMs });
      c.send(hello());
      expect(c.emitted[1]).toMatchObject({
        type: "send",
        frame: { type: "welcome", heartbeatMs: announced },
      });
    },
  );

  it.each([
    ["RESULT", result("j1"), "protocol violation: a result frame before hello"],
    [
      "PROGRESS",
      { type: "PROGRESS", frame: { type: "progress", job: "j1", done: 1 } },
      "protocol violation: a progress frame before hello",
    ],
    [
      "BAD_FRAME",
      { type: "BAD_FRAME", reason: "hello.worker: expected a string" },
      "hello.worker: expected a string",
    ],
  ] as [string, ConnectionEvent, string][])("%s before hello → close 4000", (_, event, reason) => {
    const c = openConnection();
    c.send(event);
    expect(c.value()).toBe("rejected");
    expect(c.closes()).toEqual([{ type: "close", code: 4000, reason }]);
    expect(c.events).toEqual([]);
  });

  it("RELEASE during the handshake → close 1000, no WORKER_LOST", () => {
    const c = openConnection();
    c.send({ type: "RELEASE" });
    expect(c.closes()).toEqual([{ type: "close", code: 1000, reason: "the run is finished" }]);
    expect(c.value()).toBe("rejected");
    expect(c.events).toEqual([]);
  });

  it("CLOSED during the handshake → closed, no WORKER_LOST", () => {
    const c = openConnection();
    c.send({ type: "CLOSED", code: 1006, reason: "" });
    expect(c.value()).toBe("closed");
    expect(c.actor.getSnapshot().status).toBe("done");
    expect(c.events).toEqual([]);
  });

  it("a rejected connection without a CLOSED confirmation ends in closed after 5 s", () => {
    const c = openConnection();
    c.send(hello({}, false));
    c.clock.increment(4999);
    expect(c.value()).toBe("rejected");
    c.clock.increment(1);
    expect(c.value()).toBe("closed");
    expect(c.events).toEqual([]);
  });
});

describe("connection: work", () => {
  it("GRANT → job frame sent, busy", () => {
    const c = registered();
    c.send(grant("j1"));
    expect(c.emitted).toEqual([{ type: "send", frame: jobFrame("j1") }]);
    expect(c.value()).toEqual({ registered: "busy" });
    expect(c.actor.getSnapshot().context.job).toBe("j1");
  });

  it("a job copies no context: the GRANT writes the held job in place (XState's cost a job)", () => {
    const c = registered();
    const context = c.actor.getSnapshot().context;
    c.send(grant("j1", 100, 2));
    expect(c.actor.getSnapshot().context).toBe(context);
    expect(context).toMatchObject({ job: "j1", attempt: 2 });
    c.send(result("j1"));
    c.send(grant("j2"));
    expect(c.actor.getSnapshot().context).toBe(context);
    expect(context).toMatchObject({ job: "j2", attempt: 1 });
    expect(c.value()).toEqual({ registered: "busy" });
  });

  it.each([
    [5, 1_000, 1_001, true],
    [5, 1_000, 1_000, false],
    [4, 1_000, 1_001, false],
    [5, undefined, 10 ** 9, false],
  ] as const)(
    "version %d, worker limit %s: a job frame of %d bytes is refused: %s",
    (version, limit, bytes, refused) => {
      const c = openConnection({ protocol: [1, 5] });
      c.send(
        hello({ protocol: [1, version], ...(limit !== undefined && { maxFrameBytes: limit }) }),
      );
      c.emitted.length = 0;
      c.events.length = 0;
      c.send(grant("j1", bytes));
      if (!refused) {
        expect(c.emitted).toEqual([{ type: "send", frame: jobFrame("j1") }]);
        expect(c.value()).toEqual({ registered: "busy" });
        return;
      }
      // Never sent: the attempt fails, the worker keeps its link and is asked for again.
      expect(c.emitted).toEqual([]);
      expect(c.events).toEqual([
        {
          type: "RESULT",
          conn: "c1",
          job: "j1",
          outcome: {
            status: "failed",
            error: {
              name: "JobTooLarge",
              message:
                "job j1 was not sent to worker w1: its frame (its input and the results of the jobs it runs after) is 1001 bytes, over the 1000 bytes the worker accepts; pass large data by reference, such as the path of a file that holds it",
            },
          },
        },
        { type: "LEASE", conn: "c1", worker: "w1", resources: { cpus: 4 } },
      ]);
      expect(c.value()).toEqual({ registered: "idle" });
      c.send(grant("j2"));
      expect(c.value()).toEqual({ registered: "busy" });
    },
  );

  it("RESULT for the held job → RESULT to the coordinator, then LEASE again", () => {
    const c = busy();
    c.send(result("j1"));
    expect(c.events).toEqual([
      {
        type: "RESULT",
        conn: "c1",
        job: "j1",
        outcome: { status: "completed", value: 7 },
      },
      { type: "LEASE", conn: "c1", worker: "w1", resources: { cpus: 4 } },
    ]);
    expect(c.value()).toEqual({ registered: "idle" });
  });

  it("a repeated RESULT for the job just answered → dropped while idle, not forwarded", () => {
    const c = busy();
    c.send(result("j1"));
    c.emitted.length = 0;
    c.events.length = 0;
    c.send(result("j1"));
    expect(c.emitted).toEqual([{ type: "dropped", job: "j1", reason: "no job is held" }]);
    expect(c.events).toEqual([]);
    expect(c.value()).toEqual({ registered: "idle" });
  });

  it.each([
    [
      { type: "result", job: "j1", status: "failed", error: { message: "boom", name: "Error" } },
      { status: "failed", error: { message: "boom", name: "Error" } },
    ],
    [
      {
        type: "result",
        job: "j1",
        status: "blocked",
        needs: [{ id: "n", kind: "k", input: null, deps: [], requires: {}, retries: 3 }],
      },
      {
        status: "blocked",
        needs: [{ id: "n", kind: "k", input: null, deps: [], requires: {}, retries: 3 }],
      },
    ],
  ] as [ResultFrame, unknown][])(
    "a %o result reaches the coordinator as its outcome",
    (frame, outcome) => {
      const c = busy();
      c.send({ type: "RESULT", frame });
      expect(c.events[0]).toEqual({ type: "RESULT", conn: "c1", job: "j1", outcome });
    },
  );

  it("RESULT for another job → dropped, not forwarded, still busy", () => {
    const c = busy();
    c.send(result("j2"));
    expect(c.emitted).toEqual([{ type: "dropped", job: "j2", reason: "this connection holds j1" }]);
    expect(c.events).toEqual([]);
    expect(c.value()).toEqual({ registered: "busy" });
  });

  it("RESULT while idle → dropped, not forwarded", () => {
    const c = registered();
    c.send(result("j1"));
    expect(c.emitted).toEqual([{ type: "dropped", job: "j1", reason: "no job is held" }]);
    expect(c.events).toEqual([]);
    expect(c.value()).toEqual({ registered: "idle" });
  });

  it("PROGRESS for the held job → progress emitted; for another job → nothing", () => {
    const c = busy();
    const frame = { type: "progress" as const, job: "j1", done: 3, total: 10, message: "parsing" };
    c.send({ type: "PROGRESS", frame });
    c.send({ type: "PROGRESS", frame: { type: "progress", job: "j2", done: 1 } });
    expect(c.emitted).toEqual([{ type: "progress", frame, worker: "w1" }]);
    expect(c.events).toEqual([]);
  });

  it("CANCEL_JOB for the held job → cancel frame sent; for another job → nothing", () => {
    const c = busy();
    c.send({ type: "CANCEL_JOB", job: "j2", reason: "cancelled" });
    c.send({ type: "CANCEL_JOB", job: "j1", reason: "cancelled" });
    expect(c.emitted).toEqual([{ type: "send", frame: { type: "cancel", job: "j1" } }]);
    expect(c.value()).toEqual({ registered: "busy" });
  });

  it("from protocol version 3 on, the cancel frame says why", () => {
    const c = openConnection({ protocol: [1, 3] });
    c.send(hello({ protocol: [1, 3] }));
    c.send(grant("j1"));
    c.emitted.length = 0;
    c.send({ type: "CANCEL_JOB", job: "j1", reason: "job j1 ran longer than its timeout" });
    expect(c.emitted).toEqual([
      {
        type: "send",
        frame: { type: "cancel", job: "j1", reason: "job j1 ran longer than its timeout" },
      },
    ]);
  });

  it("a second GRANT while busy is ignored", () => {
    const c = busy();
    c.send(grant("j2"));
    expect(c.emitted).toEqual([]);
    expect(c.actor.getSnapshot().context.job).toBe("j1");
  });
});

describe("connection: a job past its timeout, from a worker that gave its abort grace (protocol 8)", () => {
  const TIMED_OUT = "job j1 ran longer than its timeout";
  const GIVEN_UP =
    "lease of job j1 given up: it ran past its timeout and its handler did not return within the worker's abort grace of 3000 ms";

  /** A connection holding attempt 1 of j1 for a worker whose hello gave `grace` (null: none). */
  function graced(grace: number | null = 3_000, version = 8) {
    const c = openConnection({ protocol: [1, 8] });
    c.send(hello({ protocol: [1, version], ...(grace !== null && { abortGraceMs: grace }) }));
    c.send(grant("j1"));
    c.emitted.length = 0;
    c.events.length = 0;
    return c;
  }

  const timedOut = (job = "j1"): ConnectionEvent => ({
    type: "CANCEL_JOB",
    job,
    reason: TIMED_OUT,
    timedOut: true,
  });

  it("the handler not returned by the grace and a second after the cancel → close 4005 and one WORKER_LOST, not as silent", () => {
    const c = graced();
    c.send(timedOut());
    expect(c.emitted).toEqual([
      { type: "send", frame: { type: "cancel", job: "j1", reason: TIMED_OUT } },
    ]);
    c.clock.increment(3_000 + ABORT_GRACE_SLACK_MS - 1);
    expect(c.closes()).toEqual([]);
    c.clock.increment(1);
    expect(c.closes()).toEqual([{ type: "close", code: 4005, reason: GIVEN_UP }]);
    expect(c.value()).toBe("closing");
    expect(c.lost()).toEqual([{ type: "WORKER_LOST", conn: "c1", code: 4005, reason: GIVEN_UP }]);
  });

  it("the held job's result within the grace: forwarded, and the grace's end closes nothing", () => {
    const c = graced();
    c.send(timedOut());
    c.clock.increment(2_000);
    c.send(result("j1"));
    c.clock.increment(10_000);
    expect(c.events.map((e) => e.type)).toEqual(["RESULT", "LEASE"]);
    expect(c.closes()).toEqual([]);
    expect(c.value()).toEqual({ registered: "idle" });
  });

  it("the grace of attempt 1 does not end attempt 2 of the same job granted again meanwhile", () => {
    const c = graced();
    c.send(timedOut());
    c.send(result("j1"));
    c.send(grant("j1", 100, 2));
    c.clock.increment(3_000 + ABORT_GRACE_SLACK_MS);
    expect(c.closes()).toEqual([]);
    expect(c.value()).toEqual({ registered: "busy" });
  });

  it.each([
    ["a cancel not for a timeout (the run's)", 3_000, 8, false],
    ["a worker that gave no grace", null, 8, true],
    ["a worker of protocol 7, which cannot give one", 3_000, 7, true],
  ])(
    "%s: nothing closes at the grace's end, the lease's expiry decides",
    (_, grace, version, late) => {
      const c = graced(grace, version);
      c.send({ type: "CANCEL_JOB", job: "j1", reason: TIMED_OUT, ...(late && { timedOut: true }) });
      c.clock.increment(3_000 + ABORT_GRACE_SLACK_MS);
      expect(c.closes()).toEqual([]);
      expect(c.value()).toEqual({ registered: "busy" });
    },
  );

  it("a timed-out cancel of another job than the one held arms nothing", () => {
    const c = graced();
    c.send(timedOut("j2"));
    c.clock.increment(3_000 + ABORT_GRACE_SLACK_MS);
    expect(c.emitted).toEqual([]);
    expect(c.value()).toEqual({ registered: "busy" });
  });

  it("a connection closed by its link during the grace says its loss once, and its grace's end adds nothing", () => {
    const c = graced();
    c.send(timedOut());
    c.send({ type: "CLOSED", code: 1006, reason: "" });
    c.clock.increment(3_000 + ABORT_GRACE_SLACK_MS);
    expect(c.lost()).toEqual([{ type: "WORKER_LOST", conn: "c1", code: 1006, reason: "" }]);
    expect(c.closes()).toEqual([]);
  });
});

describe("connection: a hello under a connected worker's name (protocol 7)", () => {
  const v7 = { protocol: [1, 7] } as const;
  const held: NameHolder[] = [{ conn: "c0", instance: "inst-a" }];

  it("the same instance is the same worker connecting again: accepted, naming the connection it replaces", () => {
    const c = openConnection(v7);
    c.send(hello({ ...v7, worker: "gpu-1", instance: "inst-a" }, true, held));
    expect(c.value()).toEqual({ registered: "idle" });
    expect(c.emitted).toContainEqual({
      type: "registered",
      worker: "gpu-1",
      protocol: 7,
      resources: { cpus: 4 },
      replaces: "c0",
    });
    expect(c.actor.getSnapshot().context.instance).toBe("inst-a");
    expect(c.events.map((e) => e.type)).toEqual(["LEASE"]);
  });

  it("another instance is another process given the same name: 4010 naming it and saying to give each its own --name", () => {
    const c = openConnection(v7);
    c.send(hello({ ...v7, worker: "gpu-1", instance: "inst-b" }, true, held));
    expect(c.value()).toBe("rejected");
    expect(c.closes()).toEqual([
      {
        type: "close",
        code: 4010,
        reason:
          'name in use: another worker process named "gpu-1" is connected to this run; give each worker its own --name',
      },
    ]);
    expect(c.emitted.some((e) => e.type === "registered")).toBe(false);
    expect(c.events).toEqual([]);
  });

  it("a hello that is not authentic learns nothing of the names: 4001", () => {
    const c = openConnection(v7);
    c.send(hello({ ...v7, worker: "gpu-1", instance: "inst-b" }, false, held));
    expect(c.closes()[0]!.code).toBe(4001);
  });

  it.each([
    ["the hello gives no instance (an older worker)", [1, 7], {}, held],
    [
      "the holder gave none (an older worker)",
      [1, 7],
      { instance: "inst-b" },
      [{ conn: "c0", instance: undefined }],
    ],
    ["the coordinator speaks only up to 6", [1, 6], { instance: "inst-b" }, held],
  ] as [string, [number, number], Partial<HelloFrame>, NameHolder[]][])(
    "taken beside the holder, as before protocol 7, when %s",
    (_, coordinator, frame, holders) => {
      const c = openConnection({ protocol: coordinator });
      c.send(hello({ protocol: [1, 7], worker: "gpu-1", ...frame }, true, holders));
      expect(c.value()).toEqual({ registered: "idle" });
      const registered = c.emitted.find((e) => e.type === "registered");
      expect(registered).not.toHaveProperty("replaces");
      expect(c.actor.getSnapshot().context.instance).toBe(
        coordinator[1] === 7 ? frame.instance : undefined,
      );
    },
  );

  it("REPLACED → close 4008 saying so, and one WORKER_LOST that releases the held job", () => {
    const c = busy();
    c.send({ type: "REPLACED", by: "c2" });
    const reason = "replaced by a newer connection of the same worker";
    expect(c.closes()).toEqual([{ type: "close", code: 4008, reason }]);
    expect(c.value()).toBe("closing");
    expect(c.lost()).toEqual([{ type: "WORKER_LOST", conn: "c1", code: 4008, reason }]);
    c.send({ type: "CLOSED", code: 1006, reason: "" });
    expect(c.value()).toBe("closed");
    expect(c.lost()).toHaveLength(1);
  });

  it("REPLACED during the handshake changes nothing: only a registered connection holds a name", () => {
    const c = openConnection(v7);
    c.send({ type: "REPLACED", by: "c2" });
    expect(c.value()).toBe("handshaking");
    expect(c.closes()).toEqual([]);
  });
});

describe("connection: closing a registered connection", () => {
  it("a second HELLO → close 4000 and one WORKER_LOST", () => {
    const c = busy();
    c.send(hello());
    expect(c.closes()).toEqual([
      {
        type: "close",
        code: 4000,
        reason: "protocol violation: a second hello on a registered connection",
      },
    ]);
    expect(c.value()).toBe("closing");
    expect(c.lost()).toEqual([
      {
        type: "WORKER_LOST",
        conn: "c1",
        code: 4000,
        reason: "protocol violation: a second hello on a registered connection",
      },
    ]);
  });

  it("BAD_FRAME → close 4000 with the given reason", () => {
    const c = registered();
    c.send({ type: "BAD_FRAME", reason: "result.status: expected completed, failed or blocked" });
    expect(c.closes()).toEqual([
      {
        type: "close",
        code: 4000,
        reason: "result.status: expected completed, failed or blocked",
      },
    ]);
    expect(c.value()).toBe("closing");
  });

  it("RELEASE → close 1000, saying why when the run was stopped early", () => {
    const c = registered();
    c.send({ type: "RELEASE" });
    expect(c.closes()).toEqual([{ type: "close", code: 1000, reason: "the run is finished" }]);
    expect(c.value()).toBe("closing");
    const stopped = registered();
    stopped.send({ type: "RELEASE", reason: "interrupted (Ctrl-C)" });
    expect(stopped.closes()).toEqual([
      { type: "close", code: 1000, reason: "interrupted (Ctrl-C)" },
    ]);
  });

  it.each([
    [false, "lease of job j1 expired: the worker sent no heartbeat before the lease deadline"],
    [true, "lease of job j1 expired: it ran past its timeout and the worker did not stop it"],
  ])(
    "EXPIRE (timed out: %s) → close 4005 saying why, and a WORKER_LOST that says the worker went silent",
    (timedOut, reason) => {
      const c = busy();
      c.send({ type: "EXPIRE", job: "j1", attempt: 1, ...(timedOut && { timedOut }) });
      expect(c.closes()).toEqual([{ type: "close", code: 4005, reason }]);
      expect(c.value()).toBe("closing");
      expect(c.lost()).toEqual([
        { type: "WORKER_LOST", conn: "c1", code: 4005, reason, silent: true },
      ]);
    },
  );

  it("EXPIRE of a job the connection no longer holds is ignored: its result came in time", () => {
    const c = busy();
    c.send(result("j1"));
    c.send({ type: "EXPIRE", job: "j1", attempt: 1 });
    expect(c.value()).toEqual({ registered: "idle" });
    c.send(grant("j2"));
    c.send({ type: "EXPIRE", job: "j1", attempt: 1 });
    expect(c.value()).toEqual({ registered: "busy" });
    expect(c.closes()).toEqual([]);
    expect(c.lost()).toEqual([]);
  });

  it("EXPIRE of an earlier attempt of the job held is ignored: that lease ended, this one is new", () => {
    // The expiry of attempt 1 was delivered late (behind a blocked result's store lookup),
    // after the job was ready again and granted to this same connection as attempt 2.
    const c = busy();
    c.send(result("j1"));
    c.send(grant("j1", 100, 2));
    c.send({ type: "EXPIRE", job: "j1", attempt: 1 });
    expect(c.value()).toEqual({ registered: "busy" });
    expect(c.closes()).toEqual([]);
    expect(c.lost()).toEqual([]);
    c.send({ type: "EXPIRE", job: "j1", attempt: 2 });
    expect(c.value()).toBe("closing");
    expect(c.lost()).toEqual([
      {
        type: "WORKER_LOST",
        conn: "c1",
        code: 4005,
        reason: "lease of job j1 expired: the worker sent no heartbeat before the lease deadline",
        silent: true,
      },
    ]);
  });

  it("CLOSED from idle → WORKER_LOST exactly once, with the link's code and reason", () => {
    const c = registered();
    c.send({ type: "CLOSED", code: 1006, reason: "" });
    expect(c.value()).toBe("closed");
    expect(c.events).toEqual([{ type: "WORKER_LOST", conn: "c1", code: 1006, reason: "" }]);
  });

  it("CLOSED from busy → WORKER_LOST exactly once", () => {
    const c = busy();
    c.send({ type: "CLOSED", code: 1006, reason: "" });
    expect(c.value()).toBe("closed");
    expect(c.events).toEqual([{ type: "WORKER_LOST", conn: "c1", code: 1006, reason: "" }]);
  });

  it("CLOSED with 1001 from the worker (stopped on purpose) → WORKER_LOST going away", () => {
    for (const c of [registered(), busy()]) {
      c.send({ type: "CLOSED", code: 1001, reason: "the worker was stopped (SIGTERM)" });
      expect(c.value()).toBe("closed");
      expect(c.events).toEqual([
        {
          type: "WORKER_LOST",
          conn: "c1",
          code: 1001,
          reason: "the worker was stopped (SIGTERM)",
        },
      ]);
    }
  });

  it("CLOSED after a close was requested (closing) → still WORKER_LOST exactly once", () => {
    const c = busy();
    c.send({ type: "RELEASE" });
    c.send({ type: "CLOSED", code: 1000, reason: "the run is finished" });
    // The second CLOSED reaches a machine that has ended: XState only warns.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      c.send({ type: "CLOSED", code: 1000, reason: "the run is finished" });
      expect(warn.mock.calls.map((call) => String(call[0]))).toEqual([
        expect.stringContaining("sent to stopped actor"),
      ]);
    } finally {
      warn.mockRestore();
    }
    expect(c.value()).toBe("closed");
    // The close this side asked for is the one the coordinator hears of.
    expect(c.events).toEqual([
      { type: "WORKER_LOST", conn: "c1", code: 1000, reason: "the run is finished" },
    ]);
  });

  it("closing without a CLOSED confirmation ends in closed after the close wait (5 s)", () => {
    const c = registered();
    c.send({ type: "RELEASE" });
    c.clock.increment(4999);
    expect(c.value()).toBe("closing");
    c.clock.increment(1);
    expect(c.value()).toBe("closed");
    expect(c.actor.getSnapshot().status).toBe("done");
    expect(c.lost()).toHaveLength(1);
    expect(c.closes()).toHaveLength(1);
  });
});

describe("connection: heartbeat", () => {
  it("after heartbeatMs a ping is emitted", () => {
    const c = registered({ heartbeatMs: 1000 });
    c.clock.increment(999);
    expect(c.emitted).toEqual([]);
    c.clock.increment(1);
    expect(c.emitted).toEqual([{ type: "ping" }]);
    expect(c.value()).toEqual({ registered: "idle" });
    expect(c.actor.getSnapshot().context.probing).toBe(true);
  });

  it("PONG while busy → HEARTBEAT to the coordinator, and the next ping a heartbeat later", () => {
    const c = busy({ heartbeatMs: 1000 });
    c.events.length = 0;
    c.clock.increment(1000);
    c.send({ type: "PONG" });
    expect(c.events).toEqual([{ type: "HEARTBEAT", conn: "c1" }]);
    expect(c.value()).toEqual({ registered: "busy" });
    c.clock.increment(999);
    expect(c.emitted).toEqual([{ type: "ping" }]);
    c.clock.increment(1);
    expect(c.emitted).toEqual([{ type: "ping" }, { type: "ping" }]);
  });

  it("PONG while idle ends the probe without troubling the coordinator: it holds no lease", () => {
    const c = registered({ heartbeatMs: 1000, deadAfterMs: 4000 });
    for (let i = 0; i < 5; i++) {
      c.clock.increment(1000);
      c.send({ type: "PONG" });
    }
    expect(c.emitted.filter((e) => e.type === "ping")).toHaveLength(5);
    expect(c.events).toEqual([]);
    expect(c.closes()).toEqual([]);
    expect(c.value()).toEqual({ registered: "idle" });
  });

  it("a PONG with no probe out is ignored: no HEARTBEAT, the probe keeps its time", () => {
    const c = busy({ heartbeatMs: 1000 });
    c.events.length = 0;
    c.clock.increment(500);
    c.send({ type: "PONG" });
    expect(c.events).toEqual([]);
    c.clock.increment(500);
    expect(c.emitted).toEqual([{ type: "ping" }]);
    c.send({ type: "PONG" });
    c.send({ type: "PONG" });
    expect(c.events).toEqual([{ type: "HEARTBEAT", conn: "c1" }]);
    expect(c.actor.getSnapshot().context.probing).toBe(false);
  });

  it("probing goes on while the connection goes idle ⇄ busy", () => {
    const c = registered({ heartbeatMs: 1000, deadAfterMs: 4000 });
    c.clock.increment(1000);
    c.send(grant("j1"));
    c.send(result("j1"));
    c.send(grant("j2"));
    c.clock.increment(2999);
    expect(c.closes()).toEqual([]);
    c.send({ type: "PONG" });
    c.clock.increment(1000);
    expect(c.emitted.filter((e) => e.type === "ping")).toHaveLength(2);
    expect(c.value()).toEqual({ registered: "busy" });
  });

  it("a ping and its pong copy no context and build no snapshot (XState's cost a probe)", () => {
    for (const c of [registered({ heartbeatMs: 1000 }), busy({ heartbeatMs: 1000 })]) {
      const snapshot = c.actor.getSnapshot();
      for (let i = 0; i < 3; i++) {
        c.clock.increment(1000);
        expect(c.actor.getSnapshot()).toBe(snapshot);
        expect(snapshot.context.probing).toBe(true);
        c.send({ type: "PONG" });
        expect(c.actor.getSnapshot()).toBe(snapshot);
        expect(snapshot.context.probing).toBe(false);
      }
      expect(c.emitted.filter((e) => e.type === "ping")).toHaveLength(3);
    }
  });

  it("no PONG within deadAfter → close 4005 and one WORKER_LOST that says the worker went silent", () => {
    const c = busy({ heartbeatMs: 1000, deadAfterMs: 4000 });
    c.clock.increment(1000);
    expect(c.emitted).toEqual([{ type: "ping" }]);
    c.clock.increment(2999);
    expect(c.closes()).toEqual([]);
    c.clock.increment(1);
    expect(c.closes()).toEqual([{ type: "close", code: 4005, reason: "no heartbeat for 4000 ms" }]);
    expect(c.value()).toBe("closing");
    expect(c.events).toEqual([
      {
        type: "WORKER_LOST",
        conn: "c1",
        code: 4005,
        reason: "no heartbeat for 4000 ms",
        silent: true,
      },
    ]);
    c.clock.increment(10_000);
    expect(c.emitted.filter((e) => e.type === "ping")).toHaveLength(1);
    expect(c.lost()).toHaveLength(1);
  });

  it("a PONG keeps a slow job's connection open past deadAfter", () => {
    const c = busy({ heartbeatMs: 1000, deadAfterMs: 4000 });
    for (let i = 0; i < 10; i++) {
      c.clock.increment(1000);
      c.send({ type: "PONG" });
    }
    expect(c.closes()).toEqual([]);
    expect(c.events.filter((e) => e.type === "HEARTBEAT")).toHaveLength(10);
    expect(c.value()).toEqual({ registered: "busy" });
  });
});
