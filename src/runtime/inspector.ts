import { createRequire } from "node:module";
import type { StatelyInspectionEvent } from "@statelyai/inspect";
import type { Logger } from "pino";
import type WebSocket from "ws";
import type { InspectionEvent, Observer } from "xstate";
import { ConfigError } from "../errors.ts";
import { sanitizeInspection } from "../viz/sanitizeInspection.ts";

/**
 * Where `@statelyai/inspect`'s WebSocket inspector listens by default (its docs).
 *
 * @example
 * ```ts
 * const inspector = connectInspector(process.env.INSPECTOR_URL ?? DEFAULT_INSPECTOR_URL);
 * ```
 */
export const DEFAULT_INSPECTOR_URL = "ws://localhost:8080";

/** Events `connectInspector` holds while the connection opens, by default (`maxPending`). */
export const INSPECTOR_MAX_PENDING = 1000;
/** Bytes sent and not yet taken past which `connectInspector` drops events, by default. */
export const INSPECTOR_MAX_BUFFERED_BYTES = 16 * 2 ** 20;
/** How long `connectInspector`'s `close()` waits in all by default (`closeTimeoutMs`). */
export const INSPECTOR_CLOSE_TIMEOUT_MS = 2000;
/** How long the inspector's connection may take to open by default (`openTimeoutMs`). */
export const INSPECTOR_OPEN_TIMEOUT_MS = 5000;

/** How `connectInspector` logs, and how much it holds for an inspector that is slow or not there. */
export interface InspectorOptions {
  logger?: Logger | undefined;
  /** Events held while the connection opens; past this the oldest are dropped (default 1,000). */
  maxPending?: number | undefined;
  /**
   * Most bytes sent but not yet taken by the inspector; past this, events are dropped until
   * it catches up (default 16 MiB), so an inspector that stops reading costs events, not memory.
   */
  maxBufferedBytes?: number | undefined;
  /** How long `close()` waits, in all, for the connection to open, drain and close (default 2 s). */
  closeTimeoutMs?: number | undefined;
  /**
   * How long the connection may take to open (default 5 s); an inspector that has not answered
   * by then (hung, or a port where something else listens and says nothing) is unreachable.
   */
  openTimeoutMs?: number | undefined;
}

/** A live inspection stream: pass `inspect` to the engine, `close()` when the run is over. */
export interface InspectorStream {
  inspect: Observer<InspectionEvent>;
  /** Events sent, and events dropped (inspector unreachable, or too many while connecting). */
  readonly stats: { sent: number; dropped: number };
  /** Sends what is still queued, then closes the connection. */
  close(): Promise<void>;
}

/**
 * The XState inspection events `@statelyai/inspect` converts and sends; it leaves out the
 * others (actions, microsteps), so only these count as dropped.
 */
const SENT_TYPES = new Set<string>(["@xstate.actor", "@xstate.event", "@xstate.snapshot"]);

/** The URL schemes the `ws` client connects to (`http` and `https` mean `ws` and `wss`). */
const SCHEMES = new Set(["ws:", "wss:", "http:", "https:"]);

/**
 * Checks that `url` is a URL `connectInspector` can connect to (`ws:`, `wss:`, or `http:`
 * and `https:`, which mean the same), so that a command can refuse a bad one before it
 * starts anything.
 *
 * @throws {ConfigError} naming the URL and an example of a good one.
 * @example
 * ```ts
 * checkInspectorUrl("ws://127.0.0.1:8080"); // fine
 * checkInspectorUrl("localhost:8080"); // ConfigError
 * ```
 */
export function checkInspectorUrl(url: string): void {
  if (typeof url !== "string" || !URL.canParse(url) || !SCHEMES.has(new URL(url).protocol)) {
    throw new ConfigError(
      `the inspector's URL must be a WebSocket URL such as ${DEFAULT_INSPECTOR_URL} (where @statelyai/inspect's createInspectorServer listens), not ${typeof url === "string" ? `"${url}"` : String(url)}`,
    );
  }
}

/**
 * `@statelyai/inspect`, an optional peer dependency (an installed baton does not bring it):
 * imported when an inspector is first connected, so that `import "baton"` neither needs nor
 * loads it.
 *
 * @throws {ConfigError} when it is not installed, saying what to install.
 */
function importStatelyInspect(): Promise<typeof import("@statelyai/inspect")> {
  try {
    createRequire(import.meta.url).resolve("@statelyai/inspect");
  } catch {
    throw new ConfigError(
      "streaming to an inspector needs @statelyai/inspect, which baton leaves to you (an optional peer dependency): install it beside baton with npm install @statelyai/inspect",
    );
  }
  return import("@statelyai/inspect");
}

/**
 * Streams XState inspection events to a Stately WebSocket inspector (`@statelyai/inspect`'s
 * `createInspectorServer`, or anything speaking its protocol: one JSON inspection event
 * per text frame). Events are converted by `@statelyai/inspect` and sanitised by
 * `sanitizeInspection` (secrets redacted, inputs and results cut to 1 KiB) before they leave.
 *
 * It uses `createInspector` with its own adapter over `ws` rather than
 * `createWebSocketInspector`, whose adapter retries an unreachable URL every 5 s forever,
 * even after `stop()`, which would keep `baton run` from exiting: here one attempt is made,
 * and an unreachable inspector, or one lost during the run, costs a warning and the events
 * (dropped as they come, unconverted), never the run.
 * `@statelyai/inspect` and `ws` are loaded by the first call, not with baton; events that
 * come meanwhile are held, as are those while the connection opens.
 *
 * Without a URL it connects to `DEFAULT_INSPECTOR_URL`, where `@statelyai/inspect`'s server
 * listens by default.
 *
 * @throws {ConfigError} for a URL that is not a WebSocket URL, or when `@statelyai/inspect`
 * is not installed.
 * @example
 * ```ts
 * const inspector = connectInspector(DEFAULT_INSPECTOR_URL);
 * const result = await createEngine({ jobs, inspect: inspector.inspect }).run(graph);
 * await inspector.close();
 * ```
 */
export function connectInspector(
  url: string = DEFAULT_INSPECTOR_URL,
  options: InspectorOptions = {},
): InspectorStream {
  checkInspectorUrl(url);
  const loading = importStatelyInspect();
  const maxPending = options.maxPending ?? INSPECTOR_MAX_PENDING;
  const maxBuffered = options.maxBufferedBytes ?? INSPECTOR_MAX_BUFFERED_BYTES;
  const stats = { sent: 0, dropped: 0 };
  /** Queues `item` until it can go; past `maxPending`, the oldest is dropped. */
  const hold = <T>(queue: T[], item: T) => {
    queue.push(item);
    if (queue.length > maxPending) {
      queue.shift();
      stats.dropped++;
    }
  };
  const pending: string[] = [];
  /** The connection, once `ws` has loaded (on this first call, not with baton). */
  let socket: WebSocket | undefined;
  const created = import("ws").then(({ default: WebSocket }) => {
    socket = new WebSocket(url, {
      perMessageDeflate: false,
      handshakeTimeout: options.openTimeoutMs ?? INSPECTOR_OPEN_TIMEOUT_MS,
    });
    return socket;
  });
  let warnedBehind = false;
  let state: "connecting" | "open" | "closing" | "closed" = "connecting";
  const settled = created.then(
    (opened) =>
      new Promise<void>((resolve) => {
        opened.once("open", () => {
          state = "open";
          for (const frame of pending.splice(0)) send(frame);
          resolve();
        });
        /** Why an open connection broke (a reset), said with its close. */
        let broke: string | undefined;
        opened.on("error", (error) => {
          // Nothing listening is a plain situation, not a bug: its reason, without a stack.
          if (state === "connecting" && broke === undefined) {
            options.logger?.warn(
              { url, reason: error.message },
              "could not reach the inspector; inspection events are dropped and the run goes on (createInspectorServer() from @statelyai/inspect/server serves one at ws://localhost:8080)",
            );
          }
          broke ??= error.message;
          resolve();
        });
        opened.once("close", (code) => {
          if (state === "open") {
            options.logger?.warn(
              { url, code, ...(broke !== undefined && { reason: broke }) },
              "the inspector closed its connection during the run; inspection events are dropped from here on and the run goes on",
            );
          }
          state = "closed";
          stats.dropped += pending.splice(0).length;
          resolve();
        });
      }),
  );
  // Only once open: the socket is there.
  const send = (frame: string) => {
    socket!.send(frame);
    stats.sent++;
  };
  /**
   * Whether an event would be dropped now: the connection is closed (never opened, or lost),
   * or the inspector is behind (said once). Asked before an event is converted too, so that an
   * inspector that is not there costs the run nothing but this question.
   */
  const dropping = () => {
    if (state === "closed" || state === "closing") return true;
    if (state !== "open" || socket!.bufferedAmount <= maxBuffered) return false;
    if (!warnedBehind) {
      options.logger?.warn(
        { url, buffered: socket!.bufferedAmount },
        "the inspector is not reading fast enough; inspection events are dropped until it catches up",
      );
    }
    warnedBehind = true;
    return true;
  };
  const adapter = {
    send(event: StatelyInspectionEvent) {
      if (dropping()) stats.dropped++;
      else if (state === "open") {
        send(JSON.stringify(event));
      } else {
        hold(pending, JSON.stringify(event));
      }
    },
  };
  const held: InspectionEvent[] = [];
  let inspect: Observer<InspectionEvent> | undefined;
  const loaded = loading.then(
    ({ createInspector }) => {
      inspect = createInspector(adapter, {
        serialize: (event) => sanitizeInspection(event),
      }).inspect;
      for (const event of held.splice(0)) inspect.next?.(event);
    },
    // Installed but broken (a dependency of its own missing): like an inspector that cannot
    // be reached, it costs a warning and the events, never the run.
    (error: unknown) => {
      options.logger?.warn(
        { reason: (error as Error)?.message ?? String(error) },
        "could not load @statelyai/inspect; inspection events are dropped (reinstall it: npm install @statelyai/inspect)",
      );
      stats.dropped += held.splice(0).length;
      inspect = { next: () => void stats.dropped++ };
    },
  );
  return {
    inspect: {
      next: (event) => {
        if (dropping()) {
          if (SENT_TYPES.has(event.type)) stats.dropped++;
        } else if (inspect) inspect.next?.(event);
        else hold(held, event);
      },
    },
    stats,
    async close() {
      await loaded;
      const socket = await created;
      // `@statelyai/inspect` converts each event on a later timer tick: let those run first.
      await new Promise((resolve) => setTimeout(resolve, 1));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(
          () => resolve("timeout"),
          options.closeTimeoutMs ?? INSPECTOR_CLOSE_TIMEOUT_MS,
        );
      });
      await Promise.race([settled, timedOut]);
      if (state !== "closed") {
        const closed = new Promise((resolve) => socket.once("close", resolve));
        if (state === "connecting") socket.terminate();
        else {
          state = "closing";
          socket.close(1000, "the run is over");
          // An inspector that does not read never answers the close: give up on it in time.
          if ((await Promise.race([closed, timedOut])) === "timeout") socket.terminate();
        }
        await closed;
      }
      clearTimeout(timer);
    },
  };
}
