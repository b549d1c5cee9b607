import { createInspector, type StatelyInspectionEvent } from "@statelyai/inspect";
import type { Logger } from "pino";
import WebSocket from "ws";
import type { InspectionEvent, Observer } from "xstate";
import { sanitizeInspection } from "../viz/sanitizeInspection.ts";

/** Where `@statelyai/inspect`'s WebSocket inspector listens by default (its docs). */
export const DEFAULT_INSPECTOR_URL = "ws://localhost:8080";

export interface InspectorOptions {
  logger?: Logger;
  /** Events held while the connection opens; past this the oldest are dropped (default 1,000). */
  maxPending?: number;
  /** How long `close()` waits for the connection to open and drain (default 2 s). */
  closeTimeoutMs?: number;
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
 * Streams XState inspection events to a Stately WebSocket inspector (`@statelyai/inspect`'s
 * `createInspectorServer`, or anything speaking its protocol: one JSON inspection event
 * per text frame). Events are converted by `@statelyai/inspect` and sanitised by
 * `sanitizeInspection` (secrets redacted, inputs and results cut to 1 KiB) before they leave.
 *
 * It uses `createInspector` with its own adapter over `ws` rather than
 * `createWebSocketInspector`, whose adapter retries an unreachable URL every 5 s forever,
 * even after `stop()`, which would keep `baton run` from exiting: here one attempt is made,
 * and an unreachable inspector costs a warning and the events, never the run.
 *
 * @example
 * ```ts
 * const inspector = connectInspector(DEFAULT_INSPECTOR_URL);
 * const result = await createEngine({ jobs, inspect: inspector.inspect }).run(graph);
 * await inspector.close();
 * ```
 */
export function connectInspector(url: string, options: InspectorOptions = {}): InspectorStream {
  const maxPending = options.maxPending ?? 1000;
  const stats = { sent: 0, dropped: 0 };
  const pending: string[] = [];
  const socket = new WebSocket(url, { perMessageDeflate: false });
  let state: "connecting" | "open" | "closed" = "connecting";
  const settled = new Promise<void>((resolve) => {
    socket.once("open", () => {
      state = "open";
      for (const frame of pending.splice(0)) send(frame);
      resolve();
    });
    socket.once("error", (error) => {
      // Nothing listening is a plain situation, not a bug: its reason, without a stack.
      options.logger?.warn(
        { url, reason: error.message },
        "could not reach the inspector; inspection events are dropped",
      );
      resolve();
    });
    socket.once("close", () => {
      state = "closed";
      stats.dropped += pending.splice(0).length;
      resolve();
    });
  });
  const send = (frame: string) => {
    socket.send(frame);
    stats.sent++;
  };
  const inspector = createInspector(
    {
      send(event: StatelyInspectionEvent) {
        const frame = JSON.stringify(event);
        if (state === "open") send(frame);
        else if (state === "closed") stats.dropped++;
        else {
          pending.push(frame);
          if (pending.length > maxPending) {
            pending.shift();
            stats.dropped++;
          }
        }
      },
    },
    { serialize: (event) => sanitizeInspection(event) },
  );
  return {
    inspect: inspector.inspect,
    stats,
    async close() {
      // `@statelyai/inspect` converts each event on a later timer tick: let those run first.
      await new Promise((resolve) => setTimeout(resolve, 1));
      const timeout = options.closeTimeoutMs ?? 2000;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        settled,
        new Promise((resolve) => {
          timer = setTimeout(resolve, timeout);
        }),
      ]);
      clearTimeout(timer);
      if (state === "closed") return;
      const closed = new Promise((resolve) => socket.once("close", resolve));
      if (state === "open") socket.close(1000, "the run is over");
      else socket.terminate();
      await closed;
    },
  };
}
