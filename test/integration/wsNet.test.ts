/**
 * wsNet on real sockets (127.0.0.1 only), held to memoryNet's semantics: frames in order,
 * one close per end with the closer's code and reason, ping → pong, the frame limit (4004),
 * and what only a real network has: refused and unanswered connects, dropped connections.
 */
import { createServer as createHttpServer } from "node:http";
import { connect, createServer, type LookupFunction, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { ConfigError } from "../../src/errors.ts";
import type { Link, Listener, ListenOptions } from "../../src/runtime/ports.ts";
import { parseListenAddress, wsNet } from "../../src/runtime/wsNet.ts";
import { closedPort } from "../fixtures/closedPort.ts";
import { countPongs } from "../fixtures/pongCount.ts";
import { type RecordedLink, record, recordConnections } from "../fixtures/recordedLink.ts";

const ANY_PORT = "ws://127.0.0.1:0";

/** Everything a test opened, closed after it whether it passed or not. */
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Lets `ms` milliseconds pass, for whatever is still on the wire to arrive. */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `link`, closed when the test ends. */
function closedAfterTest(link: Link): Link {
  cleanups.push(() => link.close(1000, "test over"));
  return link;
}

async function listen(options?: ListenOptions): Promise<Listener> {
  const listener = await wsNet().listen(ANY_PORT, options);
  cleanups.push(() => listener.close());
  return listener;
}

/** A listener and one connection, both ends recorded. */
async function connected(
  serverOptions?: ListenOptions,
  clientOptions?: ListenOptions,
): Promise<{ listener: Listener; server: RecordedLink; client: RecordedLink }> {
  const listener = await listen(serverOptions);
  const servers = recordConnections(listener);
  const client = record(closedAfterTest(await wsNet().connect(listener.address, clientOptions)));
  await vi.waitFor(() => expect(servers).toHaveLength(1));
  return { listener, server: servers[0]!, client };
}

/** A raw `ws` client, to do what a Link cannot: send binary, drop the TCP connection. */
async function rawClient(address: string): Promise<WebSocket> {
  const socket = new WebSocket(address);
  cleanups.push(() => socket.terminate());
  await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
  return socket;
}

/** Starts `server` on a port of 127.0.0.1 the system hands out, and says which. */
async function listenOnFreePort(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

async function closeServer(server: Server): Promise<void> {
  await new Promise((resolve) => server.close(resolve));
}

describe("wsNet", () => {
  it("delivers frames in order, each way", async () => {
    const { server, client } = await connected();
    for (let i = 0; i < 1000; i++) client.link.send(`c${i}`);
    server.link.send("s0");
    server.link.send("s1");
    await vi.waitFor(() => expect(server.frames).toHaveLength(1000));
    expect(server.frames).toEqual(Array.from({ length: 1000 }, (_, i) => `c${i}`));
    await vi.waitFor(() => expect(client.frames).toEqual(["s0", "s1"]));
  });

  it("keeps frames, and the close behind them, that arrive before the first frame handler", async () => {
    const listener = await listen();
    listener.onConnection((link) => {
      link.send("welcome");
      link.close(1000, "bye");
    });
    const link = await wsNet().connect(listener.address);
    await sleep(50);
    const events: string[] = [];
    link.onClose((code, reason) => events.push(`close ${code} ${reason}`));
    link.onFrame((frame) => events.push(frame));
    await vi.waitFor(() => expect(events).toEqual(["welcome", "close 1000 bye"]));
  });

  it("delivers the close to a link that has no frame handler", async () => {
    const listener = await listen();
    const closes: [number, string][] = [];
    listener.onConnection((link) => link.onClose((code, reason) => closes.push([code, reason])));
    const client = await wsNet().connect(listener.address);
    client.close(1000, "bye");
    await vi.waitFor(() => expect(closes).toEqual([[1000, "bye"]]));
  });

  it("hands connections made before onConnection to the first handler", async () => {
    const listener = await listen();
    closedAfterTest(await wsNet().connect(listener.address));
    await sleep(50);
    const servers: Link[] = [];
    listener.onConnection((link) => servers.push(link));
    expect(servers.map((link) => link.id)).toEqual(["ws:1"]);
  });

  it("closes both ends exactly once with the closer's code and reason", async () => {
    const { server, client } = await connected();
    client.link.send("last words");
    client.link.close(4000, "done");
    client.link.close(4001, "again");
    client.link.send("ignored");
    await vi.waitFor(() => expect(server.closes).toHaveLength(1));
    server.link.close(4002, "too late");
    await vi.waitFor(() => expect(client.closes).toHaveLength(1));
    await sleep(50);
    expect(server.frames).toEqual(["last words"]);
    expect(server.closes).toEqual([[4000, "done"]]);
    expect(client.closes).toEqual([[4000, "done"]]);
  });

  it("reports the server's close on both ends too", async () => {
    const { server, client } = await connected();
    server.link.close(1000, "the run is finished");
    await vi.waitFor(() => expect(client.closes).toEqual([[1000, "the run is finished"]]));
    await vi.waitFor(() => expect(server.closes).toEqual([[1000, "the run is finished"]]));
  });

  it("runs an onClose handler registered after the close", async () => {
    const { server } = await connected();
    server.link.close(1000, "bye");
    await vi.waitFor(() => expect(server.closes).toHaveLength(1));
    const late: [number, string][] = [];
    server.link.onClose((code, reason) => late.push([code, reason]));
    expect(late).toEqual([]);
    await vi.waitFor(() => expect(late).toEqual([[1000, "bye"]]));
  });

  it("cuts a close reason longer than 123 bytes at a whole code point, ending in …", async () => {
    for (const [unit, kept] of [
      ["é", 60], // 2 bytes each: 60 of them and the 3-byte ellipsis make 123 bytes
      ["😀", 30], // 4 bytes each: 30 make 120, and a 31st would not leave room for "…"
      ["a", 120],
    ] as const) {
      const { server, client } = await connected();
      client.link.close(4000, unit.repeat(200));
      const expected = `${unit.repeat(kept)}…`;
      expect(Buffer.byteLength(expected)).toBeLessThanOrEqual(123);
      await vi.waitFor(() => expect(server.closes).toEqual([[4000, expected]]));
      await vi.waitFor(() => expect(client.closes).toEqual([[4000, expected]]));
    }
  });

  it("answers a ping through the pinging end's onPong", async () => {
    const { server, client } = await connected();
    const clientPongs = countPongs(client.link, 2);
    const serverPongs = countPongs(server.link);
    client.link.ping();
    await vi.waitFor(() => expect(clientPongs.count).toBe(2));
    server.link.ping();
    await vi.waitFor(() => expect(serverPongs.count).toBe(1));
    expect(clientPongs.count).toBe(2);
  });

  it("tells the pinged end through onPing, on either side, after the frames before it", async () => {
    const { server, client } = await connected();
    const seen: string[] = [];
    client.link.onFrame((frame) => seen.push(frame));
    client.link.onPing(() => seen.push("client pinged"));
    server.link.onPing(() => seen.push("server pinged"));
    server.link.send("before");
    server.link.ping();
    await vi.waitFor(() => expect(seen).toEqual(["before", "client pinged"]));
    client.link.ping();
    await vi.waitFor(() => expect(seen).toEqual(["before", "client pinged", "server pinged"]));
  });

  it("refuses a frame over the server's maxFrameBytes with 4004 on both ends", async () => {
    const { server, client } = await connected({ maxFrameBytes: 4 });
    client.link.send("abcd");
    client.link.send("ééé");
    client.link.send("after");
    const closed: [number, string] = [4004, "frame of more than 4 bytes exceeds the limit"];
    await vi.waitFor(() => expect(server.closes).toEqual([closed]));
    await vi.waitFor(() => expect(client.closes).toEqual([closed]));
    expect(server.frames).toEqual(["abcd"]);
  });

  it("refuses a frame over the client's maxFrameBytes with 4004 on both ends", async () => {
    const { server, client } = await connected({}, { maxFrameBytes: 10 });
    server.link.send("x".repeat(11));
    const closed: [number, string] = [4004, "frame of more than 10 bytes exceeds the limit"];
    await vi.waitFor(() => expect(client.closes).toEqual([closed]));
    await vi.waitFor(() => expect(server.closes).toEqual([closed]));
    expect(client.frames).toEqual([]);
  });

  it("refuses a frame of more than 64 MiB by default", async () => {
    const { server, client } = await connected();
    client.link.send("x".repeat(64 * 2 ** 20 + 1));
    const closed: [number, string] = [4004, "frame of more than 67108864 bytes exceeds the limit"];
    await vi.waitFor(() => expect(server.closes).toEqual([closed]), { timeout: 10_000 });
    await vi.waitFor(() => expect(client.closes).toEqual([closed]), { timeout: 10_000 });
  });

  it("closes a link sent more than maxHandshakeBytes before admit() with 4004, reads no more of it, and drops it without waiting for closeTimeoutMs", async () => {
    // A close timeout past the test's own: only a drop that does not wait for it ends the link.
    const listener = await wsNet({ closeTimeoutMs: 10 * 60_000 }).listen(ANY_PORT, {
      maxHandshakeBytes: 1024,
    });
    cleanups.push(() => listener.close());
    const servers = recordConnections(listener);
    const client = record(closedAfterTest(await wsNet().connect(listener.address)));
    client.link.send("x".repeat(1000));
    await vi.waitFor(() => expect(servers[0]?.frames).toEqual(["x".repeat(1000)]));
    const server = servers[0]!;
    const serverClosed = new Promise<void>((resolve) => server.link.onClose(() => resolve()));
    // Past the budget: without it, the frame is well under the limit and would arrive.
    client.link.send("y".repeat(2 ** 20));
    const closed: [number, string] = [4004, "more than 1024 bytes before the handshake finished"];
    await vi.waitFor(() => expect(client.closes).toEqual([closed]));
    // This end read neither the rest of the frame nor the answering close: it dropped the
    // connection once its close frame was written.
    await serverClosed;
    expect(server.closes).toEqual([closed]);
    expect(server.frames).toHaveLength(1);
    // Nothing is left for the listener's close to wait for.
    await listener.close();
  });

  it("lets an admitted link receive frames up to maxFrameBytes, however much came before", async () => {
    const { server, client } = await connected({ maxHandshakeBytes: 1024 });
    client.link.send("hello");
    await vi.waitFor(() => expect(server.frames).toEqual(["hello"]));
    server.link.admit();
    for (let i = 0; i < 3; i++) client.link.send("z".repeat(2 ** 20));
    await vi.waitFor(() => expect(server.frames).toHaveLength(4));
    expect(server.closes).toEqual([]);
    expect(client.closes).toEqual([]);
  });

  it("reports bytes not yet written as bufferedAmount", async () => {
    const { server, client } = await connected();
    client.link.send("x".repeat(32 * 2 ** 20));
    expect(client.link.bufferedAmount).toBeGreaterThan(0);
    await vi.waitFor(() => expect(server.frames).toHaveLength(1), { timeout: 10_000 });
    expect(client.link.bufferedAmount).toBe(0);
  });

  it("closes with 4000 when a binary frame arrives", async () => {
    const listener = await listen();
    const servers = recordConnections(listener);
    const raw = await rawClient(listener.address);
    const rawClose = new Promise<[number, string]>((resolve) =>
      raw.once("close", (code, reason) => resolve([code, reason.toString()])),
    );
    raw.send(Buffer.from([1, 2, 3]));
    const closed: [number, string] = [4000, "binary frames are not part of the protocol"];
    await expect(rawClose).resolves.toEqual(closed);
    await vi.waitFor(() => expect(servers[0]?.closes).toEqual([closed]));
  });

  it("closes with 1007 when a text frame is not UTF-8, and says why on its own end", async () => {
    const listener = await listen();
    const servers = recordConnections(listener);
    const raw = await rawClient(listener.address);
    const rawClose = new Promise<number>((resolve) => raw.once("close", resolve));
    raw.send(Buffer.from([0xff, 0xfe]), { binary: false });
    await expect(rawClose).resolves.toBe(1007);
    await vi.waitFor(() =>
      expect(servers[0]?.closes).toEqual([[1007, expect.stringMatching(/invalid UTF-8/i)]]),
    );
  });

  it("reports 1006 once when the TCP connection dies without a close frame", async () => {
    const listener = await listen();
    const servers = recordConnections(listener);
    const raw = await rawClient(listener.address);
    await vi.waitFor(() => expect(servers).toHaveLength(1));
    raw.terminate();
    await vi.waitFor(() => expect(servers[0]!.closes).toEqual([[1006, ""]]));

    const rawServer = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    cleanups.push(() => new Promise<void>((resolve) => rawServer.close(() => resolve())));
    await new Promise((resolve) => rawServer.once("listening", resolve));
    rawServer.on("connection", (socket) => socket.terminate());
    const { port } = rawServer.address() as { port: number };
    const client = record(await wsNet().connect(`ws://127.0.0.1:${port}`));
    await vi.waitFor(() => expect(client.closes).toEqual([[1006, ""]]));
    await sleep(50);
    expect(servers[0]!.closes).toHaveLength(1);
    expect(client.closes).toHaveLength(1);
  });

  it("closes every link with 1001 when the listener closes, and stops accepting", async () => {
    const net = wsNet();
    const listener = await net.listen(ANY_PORT);
    const servers = recordConnections(listener);
    const clients = [
      record(await net.connect(listener.address)),
      record(await net.connect(listener.address)),
    ];
    await vi.waitFor(() => expect(servers).toHaveLength(2));
    clients[1]!.link.close(1000, "leaving");
    await vi.waitFor(() => expect(servers[1]!.closes).toHaveLength(1));
    await listener.close();
    const closes = [[[1001, "listener closed"]], [[1000, "leaving"]]];
    expect(servers.map((end) => end.closes)).toEqual(closes);
    await vi.waitFor(() => expect(clients.map((end) => end.closes)).toEqual(closes));
    await expect(net.connect(listener.address)).rejects.toThrow(/connection refused/);
  });

  it("drops a link whose other end never answers its close after closeTimeoutMs, so the listener closes", async () => {
    const listener = await wsNet({ closeTimeoutMs: 300 }).listen(ANY_PORT);
    cleanups.push(() => listener.close());
    const servers = recordConnections(listener);
    const frozen = await rawClient(listener.address);
    await vi.waitFor(() => expect(servers).toHaveLength(1));
    frozen.pause(); // reads nothing more, so the close frame is never answered
    const started = performance.now();
    servers[0]!.link.close(1000, "the run is finished");
    await listener.close();
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(3_000);
    expect(servers[0]!.closes).toEqual([[1000, "the run is finished"]]);
  });

  it("names links ws:N per listener and the remote end as IP:port; the address has the real port", async () => {
    const net = wsNet();
    const listener = await listen();
    expect(listener.address).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(listener.address).not.toBe(ANY_PORT);
    const servers: Link[] = [];
    listener.onConnection((link) => servers.push(link));
    const first = closedAfterTest(await net.connect(listener.address));
    const second = closedAfterTest(await net.connect(listener.address));
    await vi.waitFor(() => expect(servers).toHaveLength(2));
    expect([first.id, second.id]).toEqual(["ws:1", "ws:2"]);
    expect(servers.map((link) => link.id)).toEqual(["ws:1", "ws:2"]);
    expect(first.remote).toBe(listener.address.slice("ws://".length));
    expect(servers[0]!.remote).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(servers[0]!.remote).not.toBe(servers[1]!.remote);
  });

  it("names the remote end of a connection whose peer reset it before it was taken 'unknown (closed)'", async () => {
    const listener = await listen();
    const remotes: string[] = [];
    listener.onConnection((link) => remotes.push(link.remote));
    const port = Number(new URL(listener.address).port);
    const upgrade =
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    for (let i = 0; i < 10; i++) {
      const socket = connect(port, "127.0.0.1", () => {
        socket.write(upgrade);
        socket.resetAndDestroy();
      });
      socket.on("error", () => {});
    }
    await vi.waitFor(() => expect(remotes).toHaveLength(10));
    for (const remote of remotes) expect(remote).toMatch(/^(127\.0\.0\.1:\d+|unknown \(closed\))$/);
  });

  it("rejects a connection to a closed port with an error naming the address", async () => {
    const address = `ws://127.0.0.1:${await closedPort()}`;
    await expect(wsNet().connect(address)).rejects.toThrow(
      `cannot connect to ${address}: connection refused (nothing listens there)`,
    );
  });

  it("says that the host name could not be resolved, and what to check, where it gave getaddrinfo's own words", async () => {
    // The resolution is the fake's: .invalid never resolves (RFC 6761), and no name server is asked.
    const asked: string[] = [];
    const failing =
      (code: string): LookupFunction =>
      (hostname, _options, callback) => {
        asked.push(hostname);
        const error = Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), {
          code,
          syscall: "getaddrinfo",
          hostname,
        });
        process.nextTick(() => callback(error, "", 0));
      };
    const address = "ws://coordinator.invalid:7000";
    const notFound = wsNet({ lookup: failing("ENOTFOUND") }).connect(address);
    await expect(notFound).rejects.toThrow(
      `cannot connect to ${address}: the host name coordinator.invalid could not be resolved: no such name (ENOTFOUND); check its spelling against the address baton run printed, and that this machine resolves the coordinator's host by that name (getent hosts coordinator.invalid), or give the coordinator's IP address (baton run prints the address workers connect to)`,
    );
    await expect(notFound).rejects.not.toThrow("getaddrinfo");
    await expect(wsNet({ lookup: failing("EAI_AGAIN") }).connect(address)).rejects.toThrow(
      `cannot connect to ${address}: the host name coordinator.invalid could not be resolved: the name servers did not answer (EAI_AGAIN); check this machine's network and DNS (/etc/resolv.conf), and try again, or give the coordinator's IP address`,
    );
    expect(asked).toEqual(["coordinator.invalid", "coordinator.invalid"]);
  });

  it("gives up on a connection nobody answers after the connect timeout", async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
      return closeServer(silent);
    });
    const address = `ws://127.0.0.1:${await listenOnFreePort(silent)}`;
    await expect(wsNet({ connectTimeoutMs: 200 }).connect(address)).rejects.toThrow(
      `cannot connect to ${address}: no answer within 200 ms`,
    );
  });

  it("says that a web server, not a coordinator, answered at the address (a dashboard's port)", async () => {
    const web = createHttpServer((_request, response) => response.writeHead(403).end());
    cleanups.push(() => closeServer(web));
    const address = `ws://127.0.0.1:${await listenOnFreePort(web)}`;
    await expect(wsNet().connect(address)).rejects.toThrow(
      `cannot connect to ${address}: a web server answered (HTTP status 403), not a baton coordinator`,
    );
  });

  it("refuses to listen on a port that is taken with a ConfigError naming the address and what to do", async () => {
    const listener = await listen();
    const refused = await wsNet()
      .listen(listener.address)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).message).toBe(
      `cannot listen at ${listener.address}: the port is in use; pick another, or port 0 for any free one`,
    );
    expect(((refused as ConfigError).cause as { code?: string }).code).toBe("EADDRINUSE");
  });

  it("refuses addresses without an explicit host and port", async () => {
    for (const address of [":7000", "ws://127.0.0.1", "http://127.0.0.1:7000", "ws://h:99999"]) {
      await expect(wsNet().listen(address)).rejects.toThrow(
        /is not an address baton can use|is a port without its host/,
      );
    }
  });
});

describe("parseListenAddress", () => {
  it("reads HOST:PORT and ws://HOST:PORT, IPv6 in brackets", () => {
    expect(parseListenAddress("127.0.0.1:7000")).toEqual({
      host: "127.0.0.1",
      port: 7000,
      url: "ws://127.0.0.1:7000",
    });
    expect(parseListenAddress("ws://localhost:0/")).toEqual({
      host: "localhost",
      port: 0,
      url: "ws://localhost:0",
    });
    expect(parseListenAddress("[::1]:7000")).toEqual({
      host: "::1",
      port: 7000,
      url: "ws://[::1]:7000",
    });
  });

  it("refuses a port alone, giving the addresses it could mean", () => {
    expect(() => parseListenAddress("7000")).toThrow(
      '"7000" is a port without its host: write HOST:PORT, such as 127.0.0.1:7000 for this machine alone (baton never picks the interfaces to listen on: 0.0.0.0:7000 listens on every one)',
    );
    expect(() => parseListenAddress(":7000")).toThrow(
      '":7000" is a port without its host: write HOST:PORT, such as 127.0.0.1:7000 for this machine alone (baton never picks the interfaces to listen on: 0.0.0.0:7000 listens on every one)',
    );
    expect(() => parseListenAddress("99999")).toThrow(/is not an address baton can use/);
  });
});
