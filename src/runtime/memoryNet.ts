import { frameOverLimit } from "../transport/frameOverLimit.ts";
import type { Link, Listener, Net } from "./ports.ts";

const PING = 0;
const PONG = 1;
const CLOSE = 2;
/** What travels toward one end: a frame, or a control item. */
type Item = string | typeof PING | typeof PONG | typeof CLOSE;

/**
 * Flushes run as microtasks, so a frame and its answer cost no trip through the event loop;
 * but past this many in one turn of the loop, the next flush waits for `setImmediate`. An
 * in-process run is otherwise one unbroken chain of microtasks, and the process embedding it
 * would see no timer, I/O or `progress` event until the run ended (found by an audit: a
 * 60,000-job run let no timer fire for 6 s, so a `cancel()` from a timer never ran).
 */
const FLUSHES_PER_TURN = 1_000;
/**
 * A flush's microtask is a reaction to this settled promise: `queueMicrotask` made an
 * `AsyncResource` and a bound function for each (two flushes a job of an in-process run), a
 * reaction only a promise and a job. They run in the same queue, in the same order.
 */
const SETTLED = Promise.resolve();
let flushesThisTurn = 0;
let turnEnding = false;

/** Runs `flush` soon: as a microtask, or after the event loop's next turn when over budget. */
function scheduleFlush(flush: () => void): void {
  if (flushesThisTurn < FLUSHES_PER_TURN) {
    flushesThisTurn += 1;
    void SETTLED.then(flush);
    if (!turnEnding) {
      turnEnding = true;
      setImmediate(endTurn);
    }
  } else setImmediate(flush);
}

function endTurn(): void {
  flushesThisTurn = 0;
  turnEnding = false;
}

/** The longest queue whose storage an end keeps once it has drained it. */
const MAX_KEPT_ITEMS = 1_024;

type FrameHandler = (frame: string) => void;
type ControlHandler = () => void;
type CloseHandler = (code: number, reason: string) => void;

/**
 * One end of an in-memory link. Each end owns the queue of items travelling toward it and
 * drains it in one microtask per batch (see `scheduleFlush`). Frames wait in the queue while the end has no frame
 * handler, and so does everything behind them.
 */
class MemoryLink implements Link {
  /** The other end; set by `pair`. */
  private peer: MemoryLink = this;
  private open = true;
  private closeCode = 0;
  private closeReason = "";
  /** Whether this end's close handlers have run. */
  private closed = false;
  /**
   * The queue: the items from `head` up to `tail`, every other slot cleared. Drained, it starts
   * again at 0 in the same array: setting the array's length to 0 let its storage go, and the
   * next frame (every frame of an in-process run, which drains each flush) allocated it again.
   */
  private readonly items: (Item | undefined)[] = [];
  private head = 0;
  private tail = 0;
  private scheduled = false;
  private readonly frameHandlers: FrameHandler[] = [];
  private readonly pongHandlers: ControlHandler[] = [];
  private readonly pingHandlers: ControlHandler[] = [];
  private readonly closeHandlers: CloseHandler[] = [];

  private constructor(
    readonly id: string,
    readonly remote: string,
    /** The largest frame this end accepts. */
    readonly maxFrameBytes: number,
    /** Runs once, when either end closes the link. */
    private onClosed: () => void,
  ) {}

  /** Both ends of a new link: `[server, client]`. */
  static pair(
    id: string,
    address: string,
    serverMaxFrameBytes: number,
    clientMaxFrameBytes: number,
    onClosed: () => void,
  ): [MemoryLink, MemoryLink] {
    const server = new MemoryLink(id, `client ${id}`, serverMaxFrameBytes, onClosed);
    const client = new MemoryLink(id, address, clientMaxFrameBytes, onClosed);
    server.peer = client;
    client.peer = server;
    return [server, client];
  }

  /** Counted when asked, not on every send: it is read rarely, frames go by the million. */
  get bufferedAmount(): number {
    return this.peer.queuedBytes();
  }

  send(frame: string): void {
    if (this.open) this.peer.enqueue(frame);
  }

  close(code: number, reason: string): void {
    if (!this.open) return;
    this.shut(code, reason);
    this.peer.shut(code, reason);
    this.onClosed();
  }

  ping(): void {
    if (this.open) this.peer.enqueue(PING);
  }

  onFrame(handler: FrameHandler): void {
    this.frameHandlers.push(handler);
    if (this.frameHandlers.length === 1 && this.ready()) this.schedule();
  }

  onPong(handler: ControlHandler): void {
    this.pongHandlers.push(handler);
  }

  onPing(handler: ControlHandler): void {
    this.pingHandlers.push(handler);
  }

  onClose(handler: CloseHandler): void {
    if (this.closed) queueMicrotask(() => handler(this.closeCode, this.closeReason));
    else this.closeHandlers.push(handler);
  }

  /** No stranger reaches a memory net, so it keeps no handshake budget to lift. */
  admit(): void {}

  private shut(code: number, reason: string): void {
    this.open = false;
    this.closeCode = code;
    this.closeReason = reason;
    this.enqueue(CLOSE);
  }

  private enqueue(item: Item): void {
    this.items[this.tail] = item;
    this.tail += 1;
    this.schedule();
  }

  /** Bytes of the frames queued toward this end and not delivered yet. */
  private queuedBytes(): number {
    let bytes = 0;
    for (let i = this.head; i < this.tail; i++) {
      const item = this.items[i];
      if (typeof item === "string") bytes += Buffer.byteLength(item);
    }
    return bytes;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    scheduleFlush(this.flush);
  }

  /** Whether the item at the head of the queue can be delivered now. */
  private ready(): boolean {
    if (this.head === this.tail) return false;
    return typeof this.items[this.head] !== "string" || this.frameHandlers.length > 0;
  }

  private readonly flush = (): void => {
    try {
      while (this.ready()) {
        const item = this.items[this.head]!;
        this.items[this.head] = undefined;
        this.head += 1;
        this.deliver(item);
      }
    } catch (error) {
      // Thrown again as `queueMicrotask` would have: an uncaught exception, not a rejection.
      queueMicrotask(() => {
        throw error;
      });
    } finally {
      this.scheduled = false;
      if (this.head === this.tail) {
        // A queue a burst made long lets that storage go; a short one is kept for the next.
        if (this.items.length > MAX_KEPT_ITEMS) this.items.length = 0;
        this.head = 0;
        this.tail = 0;
      } else if (this.ready()) {
        // A handler threw: deliver the rest in a later microtask.
        this.schedule();
      }
    }
  };

  private deliver(item: Item): void {
    if (typeof item === "string") {
      const size = frameOverLimit(item, this.maxFrameBytes);
      if (size !== undefined) this.refuse(size);
      else for (const handler of this.frameHandlers) handler(item);
    } else if (item === PING) {
      if (!this.open) return;
      this.peer.enqueue(PONG);
      for (const handler of this.pingHandlers) handler();
    } else if (item === PONG) {
      if (this.open) for (const handler of this.pongHandlers) handler();
    } else {
      this.closed = true;
      for (const handler of this.closeHandlers.splice(0)) handler(this.closeCode, this.closeReason);
      this.release();
    }
  }

  /**
   * Lets go of everything behind a closed end: nothing reaches its handlers any more, and the
   * peer and the listener are done with it. A handler still running after its run ended
   * holds its worker's end; before, that end held the other end's handlers and through them
   * the coordinator and every result of the run.
   */
  private release(): void {
    this.frameHandlers.length = 0;
    this.pongHandlers.length = 0;
    this.pingHandlers.length = 0;
    this.peer = this;
    this.onClosed = () => {};
  }

  /** Drops an oversized frame and, unless a close is already on its way, fails the link. */
  private refuse(size: number): void {
    if (!this.open) return;
    this.items.fill(undefined, this.head, this.tail);
    this.tail = this.head;
    this.close(4004, `frame of ${size} bytes exceeds the limit of ${this.maxFrameBytes} bytes`);
  }
}

class MemoryListener implements Listener {
  private readonly handlers: ((link: Link) => void)[] = [];
  /** Server ends accepted before any connection handler was registered. */
  private readonly waiting: MemoryLink[] = [];
  private readonly links = new Set<MemoryLink>();

  constructor(
    readonly address: string,
    private readonly maxFrameBytes: number,
    private readonly release: () => void,
  ) {}

  onConnection(handler: (link: Link) => void): void {
    this.handlers.push(handler);
    for (const link of this.waiting.splice(0)) handler(link);
  }

  /** Creates a link, hands its server end to the connection handlers, returns the client end. */
  accept(id: string, clientMaxFrameBytes: number): MemoryLink {
    const [server, client] = MemoryLink.pair(
      id,
      this.address,
      this.maxFrameBytes,
      clientMaxFrameBytes,
      () => this.links.delete(server),
    );
    this.links.add(server);
    if (this.handlers.length === 0) this.waiting.push(server);
    else for (const handler of this.handlers) handler(server);
    return client;
  }

  async close(): Promise<void> {
    this.release();
    for (const link of [...this.links]) link.close(1001, "listener closed");
  }
}

/**
 * The Net port within one process: addresses are plain strings (`"memory://coordinator"`),
 * frames are delivered asynchronously and in order per direction, and `maxFrameBytes` is
 * enforced by the receiving end, which closes the link with 4004. Frames that reach an end
 * before it has an `onFrame` handler wait for one, and so does everything behind them, the
 * close included; `onClose` handlers registered after the close still run.
 *
 * @example
 * ```ts
 * const net = memoryNet();
 * const listener = await net.listen("memory://coordinator", { maxFrameBytes: 1 << 20 });
 * listener.onConnection((link) => link.onFrame((frame) => link.send(frame)));
 * const link = await net.connect("memory://coordinator");
 * link.onFrame((frame) => console.log(frame)); // "hello"
 * link.send("hello");
 * ```
 */
export function memoryNet(): Net {
  const listeners = new Map<string, MemoryListener>();
  let links = 0;
  return {
    async listen(address, options = {}) {
      if (listeners.has(address)) {
        throw new Error(
          `cannot listen at ${address}: another listener is already there; close it or pick another address`,
        );
      }
      const listener = new MemoryListener(address, options.maxFrameBytes ?? Infinity, () => {
        if (listeners.get(address) === listener) listeners.delete(address);
      });
      listeners.set(address, listener);
      return listener;
    },

    async connect(address, options = {}) {
      const listener = listeners.get(address);
      if (listener === undefined) {
        throw new Error(
          `cannot connect to ${address}: nothing listens there; start the listener first or check the address`,
        );
      }
      links += 1;
      return listener.accept(`memory:${links}`, options.maxFrameBytes ?? Infinity);
    },
  };
}
