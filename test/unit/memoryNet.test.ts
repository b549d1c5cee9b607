import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { memoryNet } from "../../src/runtime/memoryNet.ts";
import type { Link, ListenOptions, Net } from "../../src/runtime/ports.ts";
import { countPongs } from "../fixtures/pongCount.ts";
import { type RecordedLink, record, recordConnections } from "../fixtures/recordedLink.ts";

const ADDRESS = "memory://coordinator";

/** Lets every queued microtask run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A listener and one connection, both ends recorded. */
async function connected(
  serverOptions?: ListenOptions,
  clientOptions?: ListenOptions,
): Promise<{ net: Net; server: RecordedLink; client: RecordedLink }> {
  const net = memoryNet();
  const servers = recordConnections(await net.listen(ADDRESS, serverOptions));
  const client = record(await net.connect(ADDRESS, clientOptions));
  return { net, server: servers[0]!, client };
}

describe("memoryNet", () => {
  it("delivers frames asynchronously and in order, each way", async () => {
    const { server, client } = await connected();
    for (let i = 0; i < 1000; i++) client.link.send(`c${i}`);
    server.link.send("s0");
    server.link.send("s1");
    expect(server.frames).toEqual([]);
    await settle();
    expect(server.frames).toEqual(Array.from({ length: 1000 }, (_, i) => `c${i}`));
    expect(client.frames).toEqual(["s0", "s1"]);
  });

  it("delivers in order batch after batch, a burst longer than the queue an end keeps among them", async () => {
    const { server, client } = await connected();
    const sent: string[] = [];
    for (const size of [1, 3, 2_000, 2, 1]) {
      for (let i = 0; i < size; i++) {
        sent.push(`${size}:${i}`);
        client.link.send(`${size}:${i}`);
      }
      expect(client.link.bufferedAmount).toBeGreaterThan(0);
      await settle();
      expect(client.link.bufferedAmount).toBe(0);
    }
    expect(server.frames).toEqual(sent);
  });

  it("lets what a frame handler throws through as an uncaught exception, and delivers the frames behind it", () => {
    // In a process of its own: the test runner counts an uncaught exception as a failure.
    const script = `const { memoryNet } = await import(${JSON.stringify(
      new URL("../../src/runtime/memoryNet.ts", import.meta.url).pathname,
    )});
      const seen = { uncaught: [], rejected: [], frames: [] };
      process.on("uncaughtException", (error) => seen.uncaught.push(error.message));
      process.on("unhandledRejection", (error) => seen.rejected.push(String(error)));
      const net = memoryNet();
      const listener = await net.listen("memory://c");
      listener.onConnection((link) => link.onFrame((frame) => {
        seen.frames.push(frame);
        if (frame === "boom") throw new Error("handler threw at boom");
      }));
      const client = await net.connect("memory://c");
      client.send("boom");
      client.send("after");
      setTimeout(() => console.log(JSON.stringify(seen)), 50);`;
    const result = spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script],
      { encoding: "utf8", timeout: 30_000, killSignal: "SIGKILL" },
    );
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toEqual({
      uncaught: ["handler threw at boom"],
      rejected: [],
      frames: ["boom", "after"],
    });
  });

  it("lets the event loop turn during a long exchange: a timer fires before it ends", async () => {
    const net = memoryNet();
    const listener = await net.listen(ADDRESS);
    listener.onConnection((link) => link.onFrame((frame) => link.send(frame)));
    const link = await net.connect(ADDRESS);
    const ROUND_TRIPS = 20_000;
    let trips = 0;
    let tripsWhenTimerFired = -1;
    setTimeout(() => {
      tripsWhenTimerFired = trips;
    }, 0);
    const done = new Promise<void>((resolve) =>
      link.onFrame(() => {
        trips += 1;
        if (trips < ROUND_TRIPS) link.send("x");
        else resolve();
      }),
    );
    link.send("x");
    await done;
    // Each round trip is two flushes: the timer waited for at most about a thousand.
    expect(tripsWhenTimerFired).toBeGreaterThanOrEqual(0);
    expect(tripsWhenTimerFired).toBeLessThan(ROUND_TRIPS / 4);
  });

  it("delivers each frame to every frame handler", async () => {
    const { server, client } = await connected();
    const second: string[] = [];
    server.link.onFrame((frame) => second.push(frame));
    client.link.send("a");
    await settle();
    expect(server.frames).toEqual(["a"]);
    expect(second).toEqual(["a"]);
  });

  it("keeps frames that arrive before the first frame handler", async () => {
    const net = memoryNet();
    const listener = await net.listen(ADDRESS);
    listener.onConnection((link) => {
      link.send("welcome");
      link.close(1000, "bye");
    });
    const link = await net.connect(ADDRESS);
    await settle();
    const events: string[] = [];
    link.onClose((code, reason) => events.push(`close ${code} ${reason}`));
    link.onFrame((frame) => events.push(frame));
    await settle();
    expect(events).toEqual(["welcome", "close 1000 bye"]);
  });

  it("hands connections made before onConnection to the first handler", async () => {
    const net = memoryNet();
    const listener = await net.listen(ADDRESS);
    const client = await net.connect(ADDRESS);
    const servers: Link[] = [];
    listener.onConnection((link) => servers.push(link));
    expect(servers.map((link) => link.id)).toEqual([client.id]);
  });

  it("closes both ends exactly once, after the frames already queued", async () => {
    const { server, client } = await connected();
    client.link.send("last words");
    server.link.send("reply");
    client.link.close(4000, "done");
    client.link.close(4001, "again");
    server.link.close(4002, "too late");
    client.link.send("ignored");
    server.link.send("ignored");
    await settle();
    expect(server.frames).toEqual(["last words"]);
    expect(client.frames).toEqual(["reply"]);
    expect(server.closes).toEqual([[4000, "done"]]);
    expect(client.closes).toEqual([[4000, "done"]]);
  });

  it("runs an onClose handler registered after the close", async () => {
    const { server } = await connected();
    server.link.close(1000, "bye");
    await settle();
    const late: [number, string][] = [];
    server.link.onClose((code, reason) => late.push([code, reason]));
    expect(late).toEqual([]);
    await settle();
    expect(late).toEqual([[1000, "bye"]]);
  });

  it("refuses a frame over the server's maxFrameBytes with 4004 and drops what follows", async () => {
    const { server, client } = await connected({ maxFrameBytes: 4 });
    client.link.send("abcd");
    client.link.send("ééé");
    client.link.send("after");
    await settle();
    expect(server.frames).toEqual(["abcd"]);
    const closed: [number, string] = [4004, "frame of 6 bytes exceeds the limit of 4 bytes"];
    expect(server.closes).toEqual([closed]);
    expect(client.closes).toEqual([closed]);
  });

  it("refuses a frame over the client's maxFrameBytes with 4004", async () => {
    const { server, client } = await connected({}, { maxFrameBytes: 10 });
    server.link.send("x".repeat(11));
    client.link.send("x".repeat(11));
    await settle();
    expect(client.frames).toEqual([]);
    expect(server.frames).toEqual(["x".repeat(11)]);
    const closed: [number, string] = [4004, "frame of 11 bytes exceeds the limit of 10 bytes"];
    expect(client.closes).toEqual([closed]);
    expect(server.closes).toEqual([closed]);
  });

  it("answers a ping through the pinging end's onPong, asynchronously and only while open", async () => {
    const { server, client } = await connected();
    const clientPongs = countPongs(client.link, 2);
    const serverPongs = countPongs(server.link);
    client.link.ping();
    expect(clientPongs.count).toBe(0);
    await settle();
    expect(clientPongs.count).toBe(2);
    expect(serverPongs.count).toBe(0);
    client.link.ping();
    server.link.close(1000, "bye");
    client.link.ping();
    await settle();
    expect(clientPongs.count).toBe(2);
  });

  it("tells the pinged end through onPing, in order with frames and only while open", async () => {
    const { server, client } = await connected();
    const seen: string[] = [];
    client.link.onFrame((frame) => seen.push(frame));
    client.link.onPing(() => seen.push("ping"));
    client.link.onPing(() => seen.push("ping again"));
    server.link.onPing(() => seen.push("server pinged"));
    const pongs = countPongs(server.link);
    server.link.send("before");
    server.link.ping();
    server.link.send("after");
    expect(seen).toEqual([]);
    await settle();
    expect(seen).toEqual(["before", "ping", "ping again", "after"]);
    expect(pongs.count).toBe(1);
    server.link.ping();
    client.link.close(1000, "bye");
    await settle();
    expect(seen).toEqual(["before", "ping", "ping again", "after"]);
  });

  it("reports the bytes queued toward the peer as bufferedAmount", async () => {
    const net = memoryNet();
    const listener = await net.listen(ADDRESS);
    listener.onConnection(() => {});
    const client = await net.connect(ADDRESS);
    client.send("abc");
    client.send("é");
    expect(client.bufferedAmount).toBe(5);
    await settle();
    // The server end has no frame handler yet, so the frames are still waiting.
    expect(client.bufferedAmount).toBe(5);
  });

  it("drains bufferedAmount as frames are delivered", async () => {
    const { server, client } = await connected();
    server.link.send("hello");
    expect(server.link.bufferedAmount).toBe(5);
    expect(client.link.bufferedAmount).toBe(0);
    await settle();
    expect(server.link.bufferedAmount).toBe(0);
    expect(client.frames).toEqual(["hello"]);
  });

  it("rejects a connection to an address nobody listens at", async () => {
    const net = memoryNet();
    await expect(net.connect("memory://nowhere")).rejects.toThrow(
      /cannot connect to memory:\/\/nowhere: nothing listens there/,
    );
  });

  it("rejects a second listener on a taken address", async () => {
    const net = memoryNet();
    await net.listen(ADDRESS);
    await expect(net.listen(ADDRESS)).rejects.toThrow(/cannot listen at memory:\/\/coordinator/);
  });

  it("closes every link with 1001 when the listener closes, and stops accepting", async () => {
    const net = memoryNet();
    const listener = await net.listen(ADDRESS);
    const servers = recordConnections(listener);
    const clients = [record(await net.connect(ADDRESS)), record(await net.connect(ADDRESS))];
    clients[1]!.link.close(1000, "leaving");
    await listener.close();
    await settle();
    const closes = [[[1001, "listener closed"]], [[1000, "leaving"]]];
    expect(servers.map((end) => end.closes)).toEqual(closes);
    expect(clients.map((end) => end.closes)).toEqual(closes);
    await expect(net.connect(ADDRESS)).rejects.toThrow(/nothing listens there/);
    await expect(net.listen(ADDRESS)).resolves.toMatchObject({ address: ADDRESS });
  });

  it("numbers links per net and describes the remote end", async () => {
    const net = memoryNet();
    const listener = await net.listen(ADDRESS);
    const servers: Link[] = [];
    listener.onConnection((link) => servers.push(link));
    const first = await net.connect(ADDRESS);
    const second = await net.connect(ADDRESS);
    expect([first.id, second.id]).toEqual(["memory:1", "memory:2"]);
    expect(servers.map((link) => link.id)).toEqual(["memory:1", "memory:2"]);
    expect(first.remote).toBe(ADDRESS);
    expect(servers[0]!.remote).toBe("client memory:1");
    expect(listener.address).toBe(ADDRESS);
  });
});
