/**
 * `--inspect`: a local WebSocket server on 127.0.0.1 stands in for Stately's inspector and
 * receives a real run's inspection events. Nothing secret arrives (the run secret, the
 * challenge nonces, the proofs), inputs and results arrive cut to 1 KiB, and an inspector
 * that cannot be reached never holds the run up.
 */
import { once } from "node:events";
import { type AddressInfo, createServer, type Socket } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { ConfigError, createEngine, job } from "../../src/index.ts";
import {
  checkInspectorUrl,
  connectInspector,
  type InspectorStream,
} from "../../src/runtime/inspector.ts";
import { nodeEntropy } from "../../src/runtime/nodeEntropy.ts";
import type { Entropy } from "../../src/runtime/ports.ts";
import { INSPECT_VALUE_LIMIT, REDACTED } from "../../src/viz/sanitizeInspection.ts";

/** Node's entropy, remembering every id and byte string it hands out (nonces, the secret). */
function recordingEntropy(): { entropy: Entropy; issued: string[] } {
  const inner = nodeEntropy();
  const issued: string[] = [];
  return {
    issued,
    entropy: {
      random: () => inner.random(),
      id(size) {
        const id = inner.id(size);
        issued.push(id);
        return id;
      },
      bytes(n) {
        const bytes = inner.bytes(n);
        issued.push(Buffer.from(bytes).toString("hex"), Buffer.from(bytes).toString("base64"));
        return bytes;
      },
    },
  };
}

/**
 * Feeds `count` snapshot events to `inspector`, each snapshot counting the times it is read
 * (serialised through its toJSON), as converting it for the inspector does.
 */
function snapshotsReadBy(inspector: InspectorStream, count: number): { reads(): number } {
  let reads = 0;
  const actorRef = { sessionId: "x:0" } as never;
  for (let i = 0; i < count; i++) {
    inspector.inspect.next?.({
      type: "@xstate.snapshot",
      rootId: "x:0",
      actorRef,
      event: { type: "PING" },
      snapshot: {
        toJSON() {
          reads++;
          return { value: "running" };
        },
      } as never,
    });
  }
  return { reads: () => reads };
}

/** A logger at warn that keeps its lines, and a promise of the first. */
function warnings(): { logger: pino.Logger; lines: string[]; firstWarning: Promise<void> } {
  const lines: string[] = [];
  let warned!: () => void;
  const firstWarning = new Promise<void>((resolve) => {
    warned = resolve;
  });
  const logger = pino(
    { level: "warn" },
    {
      write: (line: string) => {
        lines.push(line);
        warned();
      },
    },
  );
  return { logger, lines, firstWarning };
}

describe("live inspection", () => {
  let server: WebSocketServer | undefined;
  let inspector: InspectorStream | undefined;
  afterEach(async () => {
    await inspector?.close();
    for (const client of server?.clients ?? []) client.terminate();
    if (server) await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    inspector = undefined;
  });

  it("sends a run's events with secrets redacted and payloads cut to 1 KiB", async () => {
    server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(server, "listening");
    const frames: string[] = [];
    server.on("connection", (socket) => socket.on("message", (data) => frames.push(String(data))));
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    inspector = connectInspector(url);
    const { entropy, issued } = recordingEntropy();
    const big = "b".repeat(20_000);
    const engine = createEngine({
      jobs: { echo: (input: { text: string }) => ({ text: `${input.text}!` }) },
      workers: 2,
      entropy,
      inspect: inspector.inspect,
    });

    const result = await engine.run([1, 2, 3].map((n) => job("echo", { text: `${n}${big}` })));
    await inspector.close();

    expect(result.ok).toBe(true);
    const events = frames.map((text) => JSON.parse(text) as Record<string, unknown>);
    // Each actor under the name the dashboard gives it, so two workers' connections differ.
    const names = events.filter((e) => e.type === "@xstate.actor").map((e) => e.name as string);
    expect(names).toHaveLength(3);
    expect(new Set(names).size).toBe(3);
    expect(names.filter((name) => name === "coordinator")).toHaveLength(1);
    expect(names.filter((name) => /^connection:\S+$/.test(name))).toHaveLength(2);
    expect(inspector.stats.sent).toBe(frames.length);
    // Nonces, the run secret and every other id the run drew never leave, whole.
    const secrets = issued.filter((value) => value.length >= 16);
    expect(secrets.length).toBeGreaterThan(2);
    for (const frame of frames) for (const secret of secrets) expect(frame).not.toContain(secret);
    const hellos = events.filter((e) => (e.event as { type?: string })?.type === "HELLO");
    expect(hellos.length).toBeGreaterThan(0);
    for (const hello of hellos) {
      const event = hello.event as { welcomeProof: string; frame: { proof: string } };
      expect(event.welcomeProof).toBe(REDACTED);
      expect(event.frame.proof).toBe(REDACTED);
    }
    // The inputs went out in GRANTs, the results in RESULTs: each cut to the limit.
    const payloads = events.flatMap((e) => {
      const event = e.event as {
        type?: string;
        frame?: { input?: unknown };
        outcome?: { value?: unknown };
      };
      if (event?.type === "GRANT") return [event.frame?.input];
      if (event?.type === "RESULT" && event.outcome) return [event.outcome.value];
      return [];
    });
    expect(payloads.length).toBeGreaterThanOrEqual(6);
    for (const payload of payloads) {
      expect(typeof payload).toBe("string");
      expect((payload as string).length).toBeLessThanOrEqual(INSPECT_VALUE_LIMIT);
      expect(payload).toMatch(/truncated\)$/);
    }
    for (const frame of frames) expect(frame).not.toContain("b".repeat(INSPECT_VALUE_LIMIT + 1));
  });

  it("drops events when no inspector listens, and closes at once", async () => {
    const probe = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(probe, "listening");
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
    inspector = connectInspector(`ws://127.0.0.1:${port}`, { closeTimeoutMs: 5_000, logger });
    const engine = createEngine({ jobs: { one: () => 1 }, workers: 1, inspect: inspector.inspect });

    expect((await engine.run([job("one", null)])).ok).toBe(true);
    await inspector.close();

    expect(inspector.stats.sent).toBe(0);
    expect(inspector.stats.dropped).toBeGreaterThan(0);
    // One warning with the reason, not an error object with its stack.
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      level: 40,
      url: `ws://127.0.0.1:${port}`,
      reason: expect.stringContaining("ECONNREFUSED"),
      msg: "could not reach the inspector; inspection events are dropped and the run goes on (createInspectorServer() from @statelyai/inspect/server serves one at ws://localhost:8080)",
    });
    expect(lines[0]).not.toContain("stack");
  });

  it("spends nothing on events once no inspector listens: they are dropped, not converted", async () => {
    const probe = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(probe, "listening");
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const { logger, firstWarning } = warnings();
    inspector = connectInspector(`ws://127.0.0.1:${port}`, { logger });
    await firstWarning;

    const feed = snapshotsReadBy(inspector, 1_000);
    await new Promise((resolve) => setTimeout(resolve, 20));

    // Converting a snapshot reads it (its toJSON): a run without an inspector paid for that
    // at every step (10,000 jobs in-process: 2.3 times as long, 55 MB more at its peak).
    expect(feed.reads()).toBe(0);
    expect(inspector.stats).toEqual({ sent: 0, dropped: 1_000 });
  });

  it("gives up on an inspector that takes the connection but never answers its opening, saying so", async () => {
    // A hung inspector (stopped with SIGSTOP): the kernel accepts, nobody answers the upgrade.
    const sockets: Socket[] = [];
    const hung = createServer((socket) => sockets.push(socket));
    hung.listen(0, "127.0.0.1");
    await once(hung, "listening");
    const url = `ws://127.0.0.1:${(hung.address() as AddressInfo).port}`;
    const { logger, lines, firstWarning } = warnings();
    try {
      inspector = connectInspector(url, { logger, openTimeoutMs: 200 });
      // Without a time limit (as before), it waited for good: no warning until close().
      await Promise.race([firstWarning, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      const feed = snapshotsReadBy(inspector, 100);
      await new Promise((resolve) => setTimeout(resolve, 20));

      expect(lines.map((line) => JSON.parse(line))).toEqual([
        expect.objectContaining({
          url,
          reason: "Opening handshake has timed out",
          msg: expect.stringMatching(/^could not reach the inspector; /),
        }),
      ]);
      expect(feed.reads()).toBe(0);
      expect(inspector.stats).toEqual({ sent: 0, dropped: 100 });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hung.close(resolve));
    }
  });

  it("says once that the inspector went away during the run, and converts nothing after", async () => {
    server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(server, "listening");
    // An inspector that takes the first event, then is gone (killed, or its page closed).
    server.on("connection", (socket) => socket.once("message", () => socket.terminate()));
    const { logger, lines, firstWarning } = warnings();
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    inspector = connectInspector(url, { logger });
    snapshotsReadBy(inspector, 1);
    // Without a warning (as before), the lines stay empty after a while.
    await Promise.race([firstWarning, new Promise((resolve) => setTimeout(resolve, 10_000))]);

    const feed = snapshotsReadBy(inspector, 100);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await inspector.close();

    expect(feed.reads()).toBe(0);
    expect(inspector.stats).toEqual({ sent: 1, dropped: 100 });
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({
        level: 40,
        url,
        code: 1006,
        msg: "the inspector closed its connection during the run; inspection events are dropped from here on and the run goes on",
      }),
    ]);
  });

  it("never holds the process up for an inspector that stops reading: events beyond maxBufferedBytes are dropped, close() gives up in time", async () => {
    server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await once(server, "listening");
    // An inspector that accepts the connection and then never reads (hung, or stopped).
    server.on("connection", (socket) =>
      (socket as unknown as { _socket: { pause(): void } })._socket.pause(),
    );
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    inspector = connectInspector(url, {
      logger,
      maxBufferedBytes: 256 * 1024,
      closeTimeoutMs: 500,
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    // 2,000 events of about 40 KB: 80 MB, far more than the kernel's socket buffers hold.
    const fields = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`field${i}`, "x".repeat(INSPECT_VALUE_LIMIT - 8)]),
    );
    const actorRef = { sessionId: "x:0" } as never;
    for (let i = 0; i < 2_000; i++) {
      inspector.inspect.next?.({
        type: "@xstate.event",
        rootId: "x:0",
        actorRef,
        sourceRef: undefined,
        event: { type: "PING", ...fields },
      });
    }

    const started = performance.now();
    await inspector.close();

    // Bounded, not timed: a close that waited for the peer to read 80 MB would never end; 10 s
    // over the 500 ms close timeout leaves room for a loaded machine (2.2 s seen under load 17).
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(inspector.stats.dropped).toBeGreaterThan(0);
    expect(inspector.stats.sent + inspector.stats.dropped).toBe(2_000);
    const warnings = lines.map((line) => JSON.parse(line) as { msg: string });
    expect(warnings).toEqual([
      expect.objectContaining({
        msg: "the inspector is not reading fast enough; inspection events are dropped until it catches up",
      }),
    ]);
  }, 20_000);

  it("connects to the default URL when given none, and refuses one that is no string, saying so", async () => {
    const inspector = connectInspector();
    await inspector.close();
    expect(() => connectInspector(null as never)).toThrow(
      "the inspector's URL must be a WebSocket URL such as ws://localhost:8080 (where @statelyai/inspect's createInspectorServer listens), not null",
    );
  });

  it("refuses a URL that is not a WebSocket URL with a ConfigError that says what to give", () => {
    for (const url of ["notaurl", "ws://[::1", "ftp://127.0.0.1:8080"]) {
      expect(() => connectInspector(url)).toThrow(ConfigError);
      expect(() => connectInspector(url)).toThrow(/ws:\/\/localhost:8080/);
    }
    // `ws` takes http and https as ws and wss: the inspector server's page address works too.
    for (const url of [
      "ws://localhost:8080",
      "wss://x.test",
      "http://localhost:8080",
      "https://x.test",
    ]) {
      expect(() => checkInspectorUrl(url), url).not.toThrow();
    }
  });
});
