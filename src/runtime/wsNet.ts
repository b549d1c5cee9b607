import type { IncomingMessage } from "node:http";
import type { LookupFunction, Socket } from "node:net";
import type { ClientOptions, Server, ServerOptions } from "ws";
import { ConfigError } from "../errors.ts";
import { CLOSE_WAIT_MS } from "../machines/connection.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import type { BatonSocket, Closed } from "./batonSocket.ts";
import { cannotListen } from "./cannotListen.ts";
import type { Link, Listener, ListenOptions, Net } from "./ports.ts";
import { requirePositiveMs } from "./requirePositiveMs.ts";

/** DESIGN §8: the largest frame accepted unless `maxFrameBytes` says otherwise. */
export const DEFAULT_MAX_FRAME_BYTES = 64 * 2 ** 20;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/**
 * A closing link waits for the other end's answering close frame as long as the connection
 * machine's `closing` state does (`CLOSE_WAIT_MS`), then drops the connection. `ws`'s own
 * default, 30 s, held a run's shutdown (the listener closes its links and waits for them) for
 * 30 s behind any worker that had vanished without a reset.
 */

/** `ws` takes `closeTimeout` on sockets and servers; @types/ws 8.18 does not know it yet. */
interface CloseTimeout {
  closeTimeout: number;
}

type FrameHandler = (frame: string) => void;
type CloseHandler = (code: number, reason: string) => void;

/** A host and port to listen at or connect to, and the same as a `ws://` URL. */
export interface WsAddress {
  host: string;
  port: number;
  /** `ws://HOST:PORT`, with an IPv6 host in brackets. */
  url: string;
}

/**
 * Parses `HOST:PORT` or `ws://HOST:PORT` (an IPv6 host in brackets). The host is required:
 * baton never picks the interfaces to listen on for its caller, and a port alone (`7000`,
 * `:7000`) is refused with the addresses it could mean. Port 0 means any free port.
 *
 * @example
 * ```ts
 * parseListenAddress("127.0.0.1:7000"); // { host: "127.0.0.1", port: 7000, url: "ws://127.0.0.1:7000" }
 * parseListenAddress("ws://[::1]:0").host; // "::1"
 * ```
 */
export function parseListenAddress(text: string): WsAddress {
  const match = /^(?:ws:\/\/)?(?:\[([0-9A-Fa-f:.]+)\]|([^\s:/[\]@?#]+)):(\d{1,5})\/?$/.exec(text);
  const port = Number(match?.[3]);
  // `:7000`, which is every interface to Go's net.Listen.
  const portAlone = /^:?(\d{1,5})$/.exec(text)?.[1];
  if (portAlone !== undefined && Number(portAlone) <= 65_535) {
    throw new ConfigError(
      `"${text}" is a port without its host: write HOST:PORT, such as 127.0.0.1:${portAlone} for this machine alone (baton never picks the interfaces to listen on: 0.0.0.0:${portAlone} listens on every one)`,
    );
  }
  if (!match || port > 65_535) {
    throw new ConfigError(
      `"${text}" is not an address baton can use: write HOST:PORT or ws://HOST:PORT (for example 127.0.0.1:7000; an IPv6 host in brackets; port 0 for any free port)`,
    );
  }
  const host = match[1] ?? match[2]!;
  return { host, port, url: urlOf(host, port) };
}

const urlOf = (host: string, port: number) =>
  `ws://${host.includes(":") ? `[${host}]` : host}:${port}`;

/** A Link over one `ws` socket. */
class WsLink implements Link {
  private readonly frameHandlers: FrameHandler[] = [];
  private readonly pongHandlers: (() => void)[] = [];
  private readonly pingHandlers: (() => void)[] = [];
  private readonly closeHandlers: CloseHandler[] = [];
  /** Frames (and the close behind them) that arrived before the first frame handler. */
  private readonly waiting: (string | Closed)[] = [];
  private flushing = false;
  /** The close, once delivered to the close handlers. */
  private closed: Closed | undefined;
  /** Why `ws` gave up on the socket, for a close it started without a reason. */
  private error: Error | undefined;
  /** Stops counting against the handshake budget (`limitUntilAdmitted`) until `admit`. */
  private stopCounting: (() => void) | undefined;
  /** Settles when the socket has closed. */
  readonly ended: Promise<void>;

  constructor(
    readonly id: string,
    readonly remote: string,
    private readonly socket: BatonSocket,
  ) {
    socket.on("message", (data: Buffer, isBinary: boolean) => {
      if (isBinary) this.close(4000, "binary frames are not part of the protocol");
      else this.receive(data.toString("utf8"));
    });
    socket.on("pong", () => {
      if (socket.readyState === socket.OPEN) for (const handler of this.pongHandlers) handler();
    });
    // `ws` has already answered with a pong.
    socket.on("ping", () => {
      if (socket.readyState === socket.OPEN) for (const handler of this.pingHandlers) handler();
    });
    socket.on("error", (error) => {
      this.error = error;
    });
    this.ended = new Promise((resolve) => {
      socket.on("close", (code: number, reason: Buffer) => {
        const started = socket.started;
        this.receive({
          code: started?.code ?? code,
          reason: started?.reason || reason.toString("utf8") || this.error?.message || "",
        });
        resolve();
      });
    });
  }

  get maxFrameBytes(): number {
    return this.socket.maxFrameBytes;
  }

  get bufferedAmount(): number {
    return this.socket.bufferedAmount;
  }

  send(frame: string): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(frame);
  }

  close(code: number, reason: string): void {
    this.socket.shut(code, reason);
  }

  ping(): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.ping();
  }

  onFrame(handler: FrameHandler): void {
    this.frameHandlers.push(handler);
    if (this.frameHandlers.length === 1 && this.waiting.length > 0) this.scheduleFlush();
  }

  onPong(handler: () => void): void {
    this.pongHandlers.push(handler);
  }

  onPing(handler: () => void): void {
    this.pingHandlers.push(handler);
  }

  onClose(handler: CloseHandler): void {
    const closed = this.closed;
    if (closed) queueMicrotask(() => handler(closed.code, closed.reason));
    else this.closeHandlers.push(handler);
  }

  admit(): void {
    this.stopCounting?.();
  }

  /**
   * Closes the link with 4004 once `tcp`, its TCP connection, has carried more than `budget`
   * bytes from the other end before `admit()`, and stops reading it: `ws` would otherwise go
   * on buffering the message under way up to the frame limit. The close frame goes out, then
   * the end of the stream, so the other end learns the code at once; once both are written,
   * this end, which would read no answer, drops the connection, not `closeTimeout` later (a
   * listener's close, and a run's end with it, waited that long). With bytes unread, the
   * drop is a TCP reset; it follows the close frame, which the other end reads first.
   * `ws`'s `maxPayload` cannot serve:
   * it is the server's, for every socket, and fixed once a socket is open. Counted after
   * `ws` has read each chunk (its listener came first): one chunk (at most 64 KiB as Node
   * reads TCP) past the budget is read, and a message that ends in it is still delivered.
   */
  limitUntilAdmitted(tcp: Socket, budget: number): void {
    let received = 0;
    const count = (chunk: Buffer) => {
      // A chunk that carried an accepted hello and more still reaches this listener.
      if (this.stopCounting === undefined) return;
      received += chunk.length;
      if (received <= budget) return;
      this.stopCounting();
      this.socket.pause();
      this.close(4004, `more than ${budget} bytes before the handshake finished`);
      tcp.end(() => tcp.destroy());
    };
    this.stopCounting = () => {
      tcp.off("data", count);
      this.stopCounting = undefined;
    };
    tcp.on("data", count);
  }

  private receive(item: string | Closed): void {
    const frameWithoutHandler = typeof item === "string" && this.frameHandlers.length === 0;
    if (frameWithoutHandler || this.waiting.length > 0) this.waiting.push(item);
    else this.deliver(item);
  }

  private deliver(item: string | Closed): void {
    if (typeof item === "string") {
      for (const handler of this.frameHandlers) handler(item);
    } else {
      this.closed = item;
      for (const handler of this.closeHandlers.splice(0)) handler(item.code, item.reason);
    }
  }

  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => {
      try {
        while (this.waiting.length > 0) this.deliver(this.waiting.shift()!);
      } finally {
        this.flushing = false;
        // A handler threw: deliver the rest in a later microtask.
        if (this.waiting.length > 0) this.scheduleFlush();
      }
    });
  }
}

const remoteOf = (request: IncomingMessage) => {
  const { remoteAddress, remotePort } = request.socket;
  // A peer that closed before it was asked leaves a socket that no longer knows it.
  if (remoteAddress === undefined) return "unknown (closed)";
  return `${remoteAddress.includes(":") ? `[${remoteAddress}]` : remoteAddress}:${remotePort}`;
};

class WsListener implements Listener {
  private readonly handlers: ((link: Link) => void)[] = [];
  /** Links accepted before any connection handler was registered. */
  private readonly waiting: WsLink[] = [];
  private readonly links = new Set<WsLink>();
  private count = 0;

  constructor(
    readonly address: string,
    private readonly server: Server<typeof BatonSocket>,
    maxFrameBytes: number,
    maxHandshakeBytes: number | undefined,
  ) {
    server.on("connection", (socket, request) => {
      socket.maxFrameBytes = maxFrameBytes;
      this.count += 1;
      const link = new WsLink(`ws:${this.count}`, remoteOf(request), socket);
      if (maxHandshakeBytes !== undefined)
        link.limitUntilAdmitted(request.socket, maxHandshakeBytes);
      this.links.add(link);
      void link.ended.then(() => this.links.delete(link));
      if (this.handlers.length === 0) this.waiting.push(link);
      else for (const handler of this.handlers) handler(link);
    });
  }

  onConnection(handler: (link: Link) => void): void {
    this.handlers.push(handler);
    for (const link of this.waiting.splice(0)) handler(link);
  }

  async close(): Promise<void> {
    const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const links = [...this.links];
    for (const link of links) link.close(1001, "listener closed");
    await Promise.all([stopped, ...links.map((link) => link.ended)]);
  }
}

/** How long `wsNet`'s links wait to connect and to close. */
export interface WsNetOptions {
  /** How long `connect` waits for the coordinator to accept (default 10 s). */
  connectTimeoutMs?: number | undefined;
  /**
   * How long a closing link, on either end, waits for the other end to answer its close
   * before dropping the connection (default 5 s).
   */
  closeTimeoutMs?: number | undefined;
  /**
   * How `connect` resolves a host name (default the system's, `dns.lookup`): a test gives one
   * that fails as a name that does not resolve does, without asking a name server.
   */
  lookup?: LookupFunction | undefined;
}

/** Every option `wsNet` takes (the compiler holds this to `WsNetOptions`). */
const WS_NET_OPTIONS: Record<keyof WsNetOptions, true> = {
  connectTimeoutMs: true,
  closeTimeoutMs: true,
  lookup: true,
};

/**
 * The Net port over WebSockets (`ws`), for workers on other processes and machines. Text
 * frames only, permessage-deflate off. Each end refuses messages over its `maxFrameBytes`
 * (default 64 MiB) before buffering them and closes the link with 4004; a binary message
 * closes it with 4000. A listener given `maxHandshakeBytes` closes a link whose other end
 * sends more than that before `admit()` with 4004 and stops reading it. Close reasons over 123
 * UTF-8 bytes are cut at a code point and end in "…"; codes must be ones WebSocket allows (1000–1003, 1007–1014, 3000–4999). `onClose`
 * runs once per link, with the code and reason of the end that closed (1006 when the
 * connection died without a close frame); a closing end waits `closeTimeoutMs` (5 s) for the
 * other's answering close, then drops the connection. Frames, and the close behind them, that
 * arrive before a link's first `onFrame` handler wait for it, as in `memoryNet`.
 * `ws` is loaded by the first `listen` or `connect`, not with baton. Options that are no object
 * (`null`), a name it does not take, a wait that is no positive number of ms or a `lookup`
 * that is no function are a `ConfigError` at the call.
 *
 * @example
 * ```ts
 * const net = wsNet();
 * const listener = await net.listen("ws://127.0.0.1:0", { maxFrameBytes: 1 << 20 });
 * listener.onConnection((link) => link.onFrame((frame) => link.send(frame)));
 * const link = await net.connect(listener.address); // ws://127.0.0.1:PORT
 * link.onFrame((frame) => {
 *   console.log(frame); // "hello"
 *   void listener.close(); // and its links: an open socket keeps the process alive
 * });
 * link.send("hello");
 * ```
 */
export function wsNet(options: WsNetOptions = {}): Net {
  checkOptionNames("wsNet", options, WS_NET_OPTIONS, {
    shape: "{ connectTimeoutMs, closeTimeoutMs, lookup }, or nothing",
  });
  for (const name of ["connectTimeoutMs", "closeTimeoutMs"] as const) {
    if (options[name] !== undefined) requirePositiveMs("wsNet", name, options[name]);
  }
  requireOptionalFunction(
    "wsNet",
    "lookup",
    "dns.lookup's (hostname, options, callback)",
    options.lookup,
  );
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const closeTimeout = options.closeTimeoutMs ?? CLOSE_WAIT_MS;
  let links = 0;
  return {
    async listen(address, listenOptions: ListenOptions = {}) {
      const { host, port } = parseListenAddress(address);
      const maxFrameBytes = listenOptions.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
      const [{ BatonSocket }, { WebSocketServer }] = await Promise.all([
        import("./batonSocket.ts"),
        import("ws"),
      ]);
      const serverOptions: ServerOptions<typeof BatonSocket> & CloseTimeout = {
        host,
        port,
        WebSocket: BatonSocket,
        perMessageDeflate: false,
        maxPayload: maxFrameBytes,
        clientTracking: false,
        closeTimeout,
      };
      const server = new WebSocketServer<typeof BatonSocket>(serverOptions);
      await new Promise<void>((resolve, reject) => {
        // Also the server's error handler for good: after listening, errors are not expected.
        server.on("error", (error) => reject(cannotListen(address, error)));
        server.once("listening", resolve);
      });
      const bound = server.address();
      const realPort = typeof bound === "object" && bound !== null ? bound.port : port;
      return new WsListener(
        urlOf(host, realPort),
        server,
        maxFrameBytes,
        listenOptions.maxHandshakeBytes,
      );
    },

    connect(address, connectOptions: ListenOptions = {}) {
      const { url, host } = parseListenAddress(address);
      const maxFrameBytes = connectOptions.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
      // A bad address is refused before ws loads, as the call's own error (not a rejection).
      return import("./batonSocket.ts").then(
        ({ BatonSocket }) =>
          new Promise<Link>((resolve, reject) => {
            const clientOptions: ClientOptions & CloseTimeout = {
              perMessageDeflate: false,
              maxPayload: maxFrameBytes,
              closeTimeout,
              ...(options.lookup !== undefined && { lookup: options.lookup }),
            };
            const socket = new BatonSocket(url, clientOptions);
            socket.maxFrameBytes = maxFrameBytes;
            let remote = url;
            let timedOut = false;
            const timer = setTimeout(() => {
              timedOut = true;
              socket.terminate();
            }, connectTimeoutMs);
            const fail = (error: Error & { code?: string }) => {
              clearTimeout(timer);
              // ws's words for an HTTP answer that is not a WebSocket upgrade (its only clue).
              const status = /^Unexpected server response: (\d+)$/.exec(error.message)?.[1];
              const unresolved = timedOut ? undefined : unresolvedHost(host, error.code);
              const why = timedOut
                ? `no answer within ${connectTimeoutMs} ms`
                : error.code === "ECONNREFUSED"
                  ? "connection refused (nothing listens there)"
                  : status !== undefined
                    ? `a web server answered (HTTP status ${status}), not a baton coordinator: another program's port, such as the run's --ui dashboard, or a proxy that does not pass WebSockets on`
                    : error.message;
              reject(
                new Error(
                  `cannot connect to ${address}: ${unresolved ?? `${why}; check that the coordinator is running and the address is right`}`,
                  { cause: error },
                ),
              );
            };
            socket.on("upgrade", (response) => {
              remote = remoteOf(response);
            });
            socket.once("error", fail);
            socket.once("open", () => {
              clearTimeout(timer);
              socket.off("error", fail);
              links += 1;
              resolve(new WsLink(`ws:${links}`, remote, socket));
            });
          }),
      );
    },
  };
}

/**
 * Why `host` gave no address, by the resolver's error `code`, and what to check; undefined for
 * an error that is not the name's. getaddrinfo's own words (`getaddrinfo ENOTFOUND h`) said
 * neither that the name was the trouble nor what to do.
 */
function unresolvedHost(host: string, code: string | undefined): string | undefined {
  const instead = `or give the coordinator's IP address (baton run prints the address workers connect to)`;
  if (code === "ENOTFOUND") {
    return `the host name ${host} could not be resolved: no such name (ENOTFOUND); check its spelling against the address baton run printed, and that this machine resolves the coordinator's host by that name (getent hosts ${host}), ${instead}`;
  }
  if (code === "EAI_AGAIN") {
    return `the host name ${host} could not be resolved: the name servers did not answer (EAI_AGAIN); check this machine's network and DNS (/etc/resolv.conf), and try again, ${instead}`;
  }
  return undefined;
}
