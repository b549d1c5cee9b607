/**
 * The `ws` socket wsNet's links run on. It is a module of its own because it extends `ws`'s
 * WebSocket class: wsNet loads it, and with it `ws`, on its first listen or connect, so that a
 * program that imports baton and never serves or reaches a worker over the network does not
 * load `ws` (and Node's http, https, tls and zlib behind it).
 */
import WebSocket from "ws";
import { DEFAULT_MAX_FRAME_BYTES } from "./wsNet.ts";

/** RFC 6455 §5.5: a close frame's payload is at most 125 bytes, two of them the code. */
const MAX_REASON_BYTES = 123;
const ELLIPSIS = "…";

/** A close of a link: its code and reason. */
export interface Closed {
  code: number;
  reason: string;
}

/**
 * A close reason that fits a close frame: reasons over 123 UTF-8 bytes are cut after the
 * last whole code point that leaves room for "…".
 */
function fitReason(reason: string): string {
  if (Buffer.byteLength(reason) <= MAX_REASON_BYTES) return reason;
  const room = MAX_REASON_BYTES - Buffer.byteLength(ELLIPSIS);
  let bytes = 0;
  let kept = "";
  for (const codePoint of reason) {
    bytes += Buffer.byteLength(codePoint);
    if (bytes > room) break;
    kept += codePoint;
  }
  return kept + ELLIPSIS;
}

/**
 * A `ws` WebSocket that remembers the close its own end started. `ws` reports the code of
 * the peer's answering close frame, or 1006 when that answer is never read (after a refused
 * frame `ws` stops reading); the link reports the close that was sent instead.
 */
export class BatonSocket extends WebSocket {
  maxFrameBytes = DEFAULT_MAX_FRAME_BYTES;
  started: Closed | undefined;

  /** Closes with `code` and `reason` (fitted to a close frame); no-op once closing. */
  shut(code: number, reason: string): void {
    if (this.readyState !== WebSocket.OPEN) return;
    const fitted = fitReason(reason);
    super.close(code, fitted);
    this.started = { code, reason: fitted };
  }

  /**
   * Only `ws` calls this (links close through `shut`): to answer the peer's close, or with a
   * code alone when an incoming frame broke the rules (1002, 1007; the 'error' event that
   * follows says why) or a message was longer than `maxPayload` (1009, sent as baton's 4004
   * with a reason a person can read).
   */
  override close(code?: number, data?: string | Buffer): void {
    if (code === undefined || data !== undefined || this.readyState !== WebSocket.OPEN) {
      super.close(code, data);
      return;
    }
    if (code === 1009) {
      this.shut(4004, `frame of more than ${this.maxFrameBytes} bytes exceeds the limit`);
      return;
    }
    super.close(code);
    this.started = { code, reason: "" };
  }
}
