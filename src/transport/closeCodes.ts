/**
 * WebSocket close codes baton uses. 1000 and 1001 are the standard ones; every rejection is a
 * 4xxx code whose meaning `describeClose` spells out for a person reading a log.
 *
 * @example
 * ```ts
 * link.close(CloseCode.versionMismatch, "no shared protocol version: ours 1, theirs 2..3");
 * log.warn(`disconnected: ${describeClose(code)}`);
 * ```
 */

/**
 * The close codes baton sends. A normal close (1000) is the stop signal to a worker.
 *
 * @example
 * ```ts
 * link.close(CloseCode.normal, "run finished");
 * ```
 */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  protocolViolation: 4000,
  authFailed: 4001,
  versionMismatch: 4002,
  helloTimeout: 4003,
  frameTooLarge: 4004,
  leaseExpired: 4005,
  codeMismatch: 4006,
  tooManyHandshakes: 4007,
  replaced: 4008,
  coordinatorSilent: 4009,
  nameInUse: 4010,
} as const;

/**
 * The code a connection reports when it ended without a close frame: its peer's process died
 * or the network failed. Only ever seen, never sent (a close frame cannot carry it), so it is
 * not among `CloseCode`'s.
 *
 * @example
 * ```ts
 * if (close.code === CONNECTION_BROKE) console.log("its worker may have died");
 * ```
 */
export const CONNECTION_BROKE = 1006;

/**
 * One of the codes in `CloseCode`.
 *
 * @example
 * ```ts
 * const code: CloseCode = CloseCode.authFailed;
 * ```
 */
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];

const MEANINGS: Readonly<Record<number, string>> = {
  [CloseCode.normal]: "normal close: the run is finished or the peer is done; nothing to do",
  [CloseCode.goingAway]:
    "going away: the other side is shutting down; a worker started with --retry-for connects again, and joins if the run is still going",
  [CloseCode.protocolViolation]:
    "protocol violation: a frame was malformed or out of place; run the same baton build on both sides",
  [CloseCode.authFailed]:
    "authentication failed: the worker's proof did not match; give the worker this run's secret",
  [CloseCode.versionMismatch]:
    "protocol version mismatch: the two sides share no protocol version; upgrade the older side",
  [CloseCode.helloTimeout]:
    "hello timeout: the worker sent no hello before the deadline (default 10 s); check that it starts and can reach the coordinator",
  [CloseCode.frameTooLarge]:
    "frame too large: a frame exceeded the size limit (default 64 MiB), or a connection sent more than 64 KiB before its hello was accepted; return smaller results or raise the limit",
  [CloseCode.leaseExpired]:
    "lease expired: the coordinator heard no heartbeat (no answer to its pings) from the worker in time, or the worker did not stop a job that ran past its timeout; either the worker's event loop was blocked (for CPU-bound handlers, use --handler-thread) or the network between them stopped carrying the worker's frames; the job it held, if any, runs again elsewhere",
  [CloseCode.codeMismatch]:
    "job module mismatch: the worker's job module (its file, the local files it imports, or a kind's version) differs from the coordinator's; deploy the same files to both and give the worker the module the coordinator loaded: baton worker's --jobs (baton run's --jobs, or its graph module without --jobs), or a localPool's or slurmPool's jobsModule (the module createEngine's jobs come from)",
  [CloseCode.tooManyHandshakes]:
    "too many handshakes: too many connections were handshaking at once; retry after a delay",
  [CloseCode.replaced]:
    "replaced: the same worker process connected again under its name (its old connection was lost without the coordinator seeing it close), so the old connection was closed; the job it held, if any, runs again",
  [CloseCode.coordinatorSilent]:
    "coordinator silent: the worker heard no frame and no ping from the coordinator for longer than its limit (default 4 × the coordinator's ping interval); check that the coordinator is still running and reachable, then start the worker again",
  [CloseCode.nameInUse]:
    "name in use: another worker process connected under this --name is still connected to the run; give each worker its own --name (a worker that connects again itself, as with --retry-for, replaces its own old connection instead; a new process under the name of one whose host was lost joins once the coordinator lets that connection go, within 20 s by default)",
  1005: "closed without a status code: the peer gave no reason; check the peer's logs",
  1006: "connection broke: it ended without a close frame, as when the network failed or the peer crashed; check the peer",
  1009: "message too big: the WebSocket layer refused an oversized frame; return smaller results or raise the limit",
  1011: "internal error: the peer hit an unexpected condition; check the peer's logs",
};

/**
 * A one-line meaning of a close code and what to do about it, for logs and error messages.
 * Codes baton does not know are named as such rather than guessed at.
 *
 * @example
 * ```ts
 * describeClose(4002);
 * // "protocol version mismatch: the two sides share no protocol version; upgrade the older side"
 * ```
 */
export function describeClose(code: number): string {
  return (
    MEANINGS[code] ??
    `close code ${code}: not one this baton sends; check the peer's logs and that both sides run the same version`
  );
}

/**
 * The short name of a close code, as a summary names it: `describeClose` up to its first
 * colon (`lease expired`, `connection broke`, `close code 4100` for a code baton does not know).
 *
 * @example
 * ```ts
 * closeName(1006); // "connection broke"
 * ```
 */
export function closeName(code: number): string {
  const meaning = describeClose(code);
  return meaning.slice(0, meaning.indexOf(":"));
}
