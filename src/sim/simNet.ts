import { CLOSE_WAIT_MS } from "../machines/connection.ts";
import type { Link, Listener, ListenOptions, Net } from "../runtime/ports.ts";
import { CONNECTION_BROKE } from "../transport/closeCodes.ts";
import { frameOverLimit } from "../transport/frameOverLimit.ts";
import type { SimClock } from "./simClock.ts";
import type { SimEntropy } from "./simEntropy.ts";

/** What travels toward one end of a link. `rst` is a reset: the end closes with 1006. */
type Item =
  | { kind: "frame"; frame: string }
  | { kind: "ping" }
  | { kind: "pong" }
  | { kind: "close"; code: number; reason: string }
  | { kind: "rst" };

type Queued = { item: Item; at: number };

/** Close code of a connection that ended without a close frame (reset, dead peer). */

/** Latency of one frame on a healthy link, in virtual ms (inclusive bounds). */
const BASE_LATENCY_MS: readonly [number, number] = [0, 2];

/** One end of a simulated link. */
class SimEnd implements Link {
  peer!: SimEnd;
  /** The end can send and has not seen its close. */
  open = true;
  /**
   * The end closed the link itself and waits for the peer's answering close (or
   * `CLOSE_WAIT_MS`), as a WebSocket does: meanwhile frames still arrive, and its close
   * handlers run with its own code once the wait is over.
   */
  closing: { code: number; reason: string; timer: unknown } | undefined = undefined;
  /** Its close handlers have run (or it belongs to a dead host). */
  closed = false;
  closeCode = 0;
  closeReason = "";
  readonly incoming: Queued[] = [];
  head = 0;
  pumping: unknown = undefined;
  readonly frameHandlers: ((frame: string) => void)[] = [];
  readonly pongHandlers: (() => void)[] = [];
  readonly pingHandlers: (() => void)[] = [];
  readonly closeHandlers: ((code: number, reason: string) => void)[] = [];

  constructor(
    readonly id: string,
    readonly remote: string,
    readonly host: string,
    readonly side: "server" | "client",
    readonly maxFrameBytes: number,
    private readonly net: SimNet,
  ) {}

  get bufferedAmount(): number {
    let bytes = 0;
    const q = this.peer.incoming;
    for (let i = this.peer.head; i < q.length; i++) {
      const item = q[i]!.item;
      if (item.kind === "frame") bytes += item.frame.length;
    }
    return bytes;
  }

  send(frame: string): void {
    if (this.open) this.net.transmit(this, { kind: "frame", frame });
  }

  close(code: number, reason: string): void {
    if (!this.open) return;
    this.open = false;
    this.net.transmit(this, { kind: "close", code, reason });
    this.net.startClosing(this, code, reason);
  }

  ping(): void {
    if (this.open) this.net.transmit(this, { kind: "ping" });
  }

  onFrame(handler: (frame: string) => void): void {
    this.frameHandlers.push(handler);
    if (this.frameHandlers.length === 1) this.net.pump(this);
  }

  onPong(handler: () => void): void {
    this.pongHandlers.push(handler);
  }

  onPing(handler: () => void): void {
    this.pingHandlers.push(handler);
  }

  onClose(handler: (code: number, reason: string) => void): void {
    if (this.closed) {
      void Promise.resolve().then(() => handler(this.closeCode, this.closeReason));
    } else this.closeHandlers.push(handler);
  }

  /** A simulated net keeps no handshake budget (no stranger reaches it). */
  admit(): void {}
}

class SimListener implements Listener {
  readonly handlers: ((link: Link) => void)[] = [];
  readonly waiting: SimEnd[] = [];
  readonly ends = new Set<SimEnd>();
  closed = false;

  constructor(
    readonly address: string,
    readonly host: string,
    readonly maxFrameBytes: number,
    private readonly net: SimNet,
  ) {}

  onConnection(handler: (link: Link) => void): void {
    this.handlers.push(handler);
    for (const end of this.waiting.splice(0)) handler(end);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.net.unlisten(this);
    for (const end of [...this.ends]) end.close(1001, "listener closed");
  }
}

/** A link as the fault injector sees it. */
export interface SimLinkInfo {
  id: string;
  /** Host of the listening side and of the connecting side. */
  server: string;
  client: string;
  open: boolean;
}

/**
 * The simulated network. Each link carries items in order per direction (frames never reorder
 * within a connection), each delivered after a latency drawn from the seed and never before the
 * item ahead of it. Closing is a handshake, as with a WebSocket: the end that closes still receives
 * what its peer sent before reading the close, and its close handlers run when the peer's answering
 * close arrives (or after `CLOSE_WAIT_MS`). Faults: `reset` (an end dies: it closes with 1006
 * and a reset reaches the peer, discarding what was in flight toward it), `partition` (nothing
 * moves either way until it heals; what was sent waits, as TCP retransmits), `halfOpen` (one end
 * loses the connection silently; the other believes it open until it sends something, a frame or a
 * ping, and the reset comes back: no keepalive is modelled, so a worker that only listens learns it
 * from its silence watchdog), `slow` (extra latency on every link for a while) and `killHost` (a
 * crashed process: its links reset, its listeners gone, its later calls ignored). Hosts name
 * simulated processes; `host(name)` is the Net port they use.
 *
 * @example
 * ```ts
 * const net = new SimNet(clock, entropy.fork("net"));
 * const listener = await net.host("coordinator").listen("memory://run");
 * const link = await net.host("worker-1").connect("memory://run");
 * net.partition(link.id, 30_000);
 * ```
 */
export class SimNet {
  private readonly listeners = new Map<string, SimListener>();
  private readonly pairs = new Map<string, [SimEnd, SimEnd]>();
  private readonly deadHosts = new Set<string>();
  private readonly partitions = new Map<string, number>();
  private slowUntil = 0;
  private slowByMs = 0;
  private links = 0;

  constructor(
    private readonly clock: SimClock,
    private readonly entropy: SimEntropy,
    private readonly trace: (line: string) => void = () => {},
  ) {}

  /** The Net port of the simulated process `name`. */
  host(name: string): Net {
    return {
      listen: async (address: string, options: ListenOptions = {}) => {
        if (this.deadHosts.has(name)) return new Promise<Listener>(() => {});
        if (this.listeners.has(address)) {
          throw new Error(
            `cannot listen at ${address}: another listener is already there; close it or pick another address`,
          );
        }
        const listener = new SimListener(
          address,
          name,
          options.maxFrameBytes ?? Number.POSITIVE_INFINITY,
          this,
        );
        this.listeners.set(address, listener);
        return listener;
      },
      connect: async (address: string, options: ListenOptions = {}) => {
        if (this.deadHosts.has(name)) return new Promise<Link>(() => {});
        const listener = this.listeners.get(address);
        if (listener === undefined || this.deadHosts.has(listener.host)) {
          throw new Error(
            `cannot connect to ${address}: nothing listens there; start the listener first or check the address`,
          );
        }
        const id = `sim:${++this.links}`;
        const server = new SimEnd(
          id,
          `${name} ${id}`,
          listener.host,
          "server",
          listener.maxFrameBytes,
          this,
        );
        const client = new SimEnd(
          id,
          address,
          name,
          "client",
          options.maxFrameBytes ?? Number.POSITIVE_INFINITY,
          this,
        );
        server.peer = client;
        client.peer = server;
        this.pairs.set(id, [server, client]);
        listener.ends.add(server);
        this.trace(`net ${id} open ${name} -> ${listener.host}`);
        if (listener.handlers.length === 0) listener.waiting.push(server);
        else for (const handler of listener.handlers) handler(server);
        return client;
      },
    };
  }

  /** Links not closed at both ends, oldest first. */
  openLinks(): SimLinkInfo[] {
    const out: SimLinkInfo[] = [];
    for (const [id, [server, client]] of this.pairs) {
      if (server.closed && client.closed) continue;
      out.push({ id, server: server.host, client: client.host, open: server.open || client.open });
    }
    return out;
  }

  /** The end of link `id` on `side` dies: it closes with 1006, a reset travels to its peer. */
  reset(id: string, side: "server" | "client"): void {
    const end = this.end(id, side);
    if (!end?.open) return;
    this.trace(`fault reset ${id} by ${side}`);
    end.open = false;
    this.discardIncoming(end.peer);
    this.transmit(end, { kind: "rst" });
    this.closeLocally(end, CONNECTION_BROKE, "connection reset");
  }

  /** The end of link `id` on `side` loses the connection; its peer is not told. */
  halfOpen(id: string, side: "server" | "client"): void {
    const end = this.end(id, side);
    if (!end?.open) return;
    this.trace(`fault half-open ${id}: ${side} gone, peer unaware`);
    end.open = false;
    this.closeLocally(end, CONNECTION_BROKE, "connection lost");
  }

  /** Nothing moves on link `id` until `ms` from now. */
  partition(id: string, ms: number): void {
    if (!this.pairs.has(id)) return;
    const until = this.clock.now() + ms;
    this.partitions.set(id, Math.max(this.partitions.get(id) ?? 0, until));
    this.trace(`fault partition ${id} for ${ms} ms`);
  }

  /** Every link gets `byMs` more latency for the next `forMs`. */
  slow(byMs: number, forMs: number): void {
    this.slowByMs = byMs;
    this.slowUntil = this.clock.now() + forMs;
    this.trace(`fault slow +${byMs} ms for ${forMs} ms`);
  }

  /** The faults are over: partitions lift and links are fast again. */
  healAll(): void {
    this.partitions.clear();
    this.slowUntil = 0;
  }

  /** The process `host` crashed: its listeners go, its links reset, its ends fall silent. */
  killHost(host: string): void {
    this.deadHosts.add(host);
    this.trace(`fault kill ${host}`);
    for (const [address, listener] of this.listeners) {
      if (listener.host === host) this.listeners.delete(address);
    }
    for (const [server, client] of this.pairs.values()) {
      for (const end of [server, client]) {
        if (end.host !== host) continue;
        const wasOpen = end.open;
        end.open = false;
        end.closed = true;
        end.closeHandlers.length = 0;
        end.frameHandlers.length = 0;
        end.pongHandlers.length = 0;
        end.pingHandlers.length = 0;
        this.discardIncoming(end);
        if (wasOpen && end.peer.open) {
          this.discardIncoming(end.peer);
          this.deliverLater(end.peer, { kind: "rst" });
        }
      }
    }
  }

  unlisten(listener: SimListener): void {
    if (this.listeners.get(listener.address) === listener) this.listeners.delete(listener.address);
  }

  /** Sends `item` from `from` toward its peer. */
  transmit(from: SimEnd, item: Item): void {
    if (this.deadHosts.has(from.host)) return;
    this.deliverLater(from.peer, item);
  }

  /** `end` closed the link: it waits for the answering close, at most `CLOSE_WAIT_MS`. */
  startClosing(end: SimEnd, code: number, reason: string): void {
    const timer = this.clock.setTimeout(() => this.closeLocally(end, code, reason), CLOSE_WAIT_MS);
    end.closing = { code, reason, timer };
  }

  /** Runs the close handlers of `end` (its own close, a reset, or a close it received). */
  closeLocally(end: SimEnd, code: number, reason: string): void {
    if (end.closed) return;
    if (end.closing !== undefined) {
      this.clock.clearTimeout(end.closing.timer);
      // The end that closed reports its own code, however the wait ended.
      ({ code, reason } = end.closing);
    }
    end.closed = true;
    end.closeCode = code;
    end.closeReason = reason;
    this.trace(`net ${end.id} ${end.side} closed ${code}${reason ? ` ${reason}` : ""}`);
    const handlers = end.closeHandlers.splice(0);
    void Promise.resolve().then(() => {
      for (const handler of handlers) handler(code, reason);
    });
    if (end.side === "server") {
      for (const listener of this.listeners.values()) listener.ends.delete(end);
    }
  }

  /** Delivers what is due at the head of `end`'s queue, and arms the next delivery. */
  pump(end: SimEnd): void {
    if (end.pumping !== undefined || end.head >= end.incoming.length) return;
    const first = end.incoming[end.head]!;
    // A frame waits for the end to have a frame handler (onFrame pumps again).
    if (first.item.kind === "frame" && end.frameHandlers.length === 0 && end.open) return;
    const now = this.clock.now();
    const healAt = this.partitions.get(end.id);
    const at = healAt !== undefined && healAt > now ? Math.max(first.at, healAt) : first.at;
    end.pumping = this.clock.setTimeout(() => {
      end.pumping = undefined;
      const healed = this.partitions.get(end.id);
      if (healed !== undefined && healed > this.clock.now()) {
        this.pump(end);
        return;
      }
      this.deliverHead(end);
      this.pump(end);
    }, at - now);
  }

  private deliverHead(end: SimEnd): void {
    const queued = end.incoming[end.head];
    if (queued === undefined) return;
    const { item } = queued;
    end.head++;
    if (end.head === end.incoming.length) {
      end.incoming.length = 0;
      end.head = 0;
    }
    if (end.closing !== undefined && !end.closed) {
      // Closing: frames still arrive (the peer sent them before it read the close); pings
      // and pongs are not answered or heard; the peer's close or a reset ends the wait.
      if (item.kind === "frame") {
        this.trace(`net ${end.id} > ${end.side} ${describeFrame(item.frame)} (closing)`);
        for (const handler of end.frameHandlers) handler(item.frame);
      } else if (item.kind === "close" || item.kind === "rst") {
        this.closeLocally(end, end.closing.code, end.closing.reason);
      }
      return;
    }
    if (!end.open) {
      // Sending to an end that lost the connection (not one closing normally, whose close is
      // already on its way) brings a reset back.
      const sent = item.kind === "frame" || item.kind === "ping";
      if (sent && end.peer.open && !this.closingInFlight(end.peer)) {
        this.deliverLater(end.peer, { kind: "rst" });
      }
      if (item.kind === "close") this.closeLocally(end, item.code, item.reason);
      else if (item.kind === "rst")
        this.closeLocally(end, CONNECTION_BROKE, "connection reset by peer");
      return;
    }
    switch (item.kind) {
      case "frame": {
        const size = frameOverLimit(item.frame, end.maxFrameBytes);
        if (size !== undefined) {
          end.close(4004, `frame of ${size} bytes exceeds the limit of ${end.maxFrameBytes} bytes`);
          return;
        }
        this.trace(`net ${end.id} > ${end.side} ${describeFrame(item.frame)}`);
        for (const handler of end.frameHandlers) handler(item.frame);
        return;
      }
      case "ping":
        this.transmit(end, { kind: "pong" });
        for (const handler of end.pingHandlers) handler();
        return;
      case "pong":
        for (const handler of end.pongHandlers) handler();
        return;
      case "close":
        // Answer the close, as a WebSocket does, then close.
        end.open = false;
        this.transmit(end, { kind: "close", code: item.code, reason: item.reason });
        this.closeLocally(end, item.code, item.reason);
        return;
      case "rst":
        end.open = false;
        this.closeLocally(end, CONNECTION_BROKE, "connection reset by peer");
        return;
    }
  }

  private deliverLater(end: SimEnd, item: Item): void {
    const now = this.clock.now();
    const [low, high] = BASE_LATENCY_MS;
    const latency = this.entropy.int(low, high) + (now < this.slowUntil ? this.slowByMs : 0);
    const last = end.incoming[end.incoming.length - 1];
    const at = Math.max(now + latency, last?.at ?? 0);
    end.incoming.push({ item, at });
    this.pump(end);
  }

  /** What was in flight toward `end` is lost (a reset discards it). */
  private discardIncoming(end: SimEnd): void {
    end.incoming.length = 0;
    end.head = 0;
    if (end.pumping !== undefined) this.clock.clearTimeout(end.pumping);
    end.pumping = undefined;
  }

  private closingInFlight(end: SimEnd): boolean {
    for (let i = end.head; i < end.incoming.length; i++) {
      const kind = end.incoming[i]!.item.kind;
      if (kind === "close" || kind === "rst") return true;
    }
    return false;
  }

  private end(id: string, side: "server" | "client"): SimEnd | undefined {
    const pair = this.pairs.get(id);
    return pair === undefined ? undefined : pair[side === "server" ? 0 : 1];
  }
}

const FRAME_TYPE = /^\{"type":"([a-z]+)"/;
const FRAME_JOB = /"(?:id|job)":"([0-9a-f]{16})"/;
const RESULT_STATUS = /"status":"([a-z]+)"/;

/**
 * A frame's type and, for job traffic, the job it names: enough for a trace line. One a frame
 * delivered, so its parts are joined as they are found, with no list to filter and join.
 */
function describeFrame(frame: string): string {
  const type = FRAME_TYPE.exec(frame)?.[1] ?? "?";
  let text = type;
  const job = FRAME_JOB.exec(frame)?.[1];
  if (job !== undefined) text += ` ${job}`;
  if (type === "result") {
    const status = RESULT_STATUS.exec(frame)?.[1];
    if (status !== undefined) text += ` ${status}`;
  }
  return text;
}
