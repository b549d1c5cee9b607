/**
 * Protocol versions. Each side speaks a range `[min, max]`; a connection uses the highest
 * version both ranges share, and two ranges that share none are a rejection naming both.
 *
 * @example
 * ```ts
 * const version = negotiate(PROTOCOL, hello.protocol);
 * if (version === undefined) {
 *   link.close(4002, `no shared version: ours ${describeRange(PROTOCOL)}, theirs ${describeRange(hello.protocol)}`);
 * }
 * ```
 */

/**
 * An inclusive range of protocol versions, `[min, max]`, positive integers with min ≤ max.
 *
 * @example
 * ```ts
 * const range: ProtocolRange = [1, 2];
 * ```
 */
export type ProtocolRange = readonly [min: number, max: number];

/**
 * The protocol versions this build speaks. Version 2 adds the welcome's `heartbeatMs` (the
 * coordinator's ping interval, for the worker's silence watchdog); with a peer that speaks
 * only version 1 the connection uses 1 and the welcome goes without it. Version 3 adds the
 * cancel frame's `reason` and a needed job's `timeoutMs`; below 3 the coordinator sends no
 * reason and the worker leaves `timeoutMs` out of the jobs it needs (that coordinator
 * knows no timeouts). Version 4 adds the welcome's `maxFrameBytes` (the largest frame the
 * coordinator accepts), so the worker fails an attempt whose result is larger with a
 * `ResultTooLarge` error instead of sending a frame that would cost it its connection.
 * Version 5 adds the hello's `maxFrameBytes` (the largest frame the worker accepts; the
 * worker sends it only when the challenge's range includes 5), so the coordinator fails an
 * attempt whose job frame is larger with a `JobTooLarge` error instead of sending it.
 * Version 6 adds a failed result's `error.retryable: false` (the handler threw a
 * `NonRetryableError`), so the coordinator fails the job without retrying it; the worker
 * leaves the field out below 6, and that coordinator retries as before.
 * Version 7 adds the hello's `instance`, an id the worker process draws once (an in-process
 * pool, once per worker slot) and gives on every connection it makes: a hello under the name
 * of a connected worker replaces that connection when the instance is the same (the worker
 * connecting again after its old connection was lost unseen) and is refused with 4010 when it
 * differs (another process given the same `--name`). The worker sends it only when the
 * challenge's range includes 7; a hello without it is taken under any name, as before.
 * Version 8 adds the hello's `abortGraceMs` (how long the worker gives an aborted handler to
 * return): a job that ran past its timeout and whose worker still holds it that long (and
 * `ABORT_GRACE_SLACK_MS`) after its cancel is given up at once with 4005 and runs again,
 * where below 8 its lease expires only once unrenewed for the lease timeout (20 s). The
 * worker sends it only when the challenge's range includes 8.
 *
 * @example
 * ```ts
 * link.send(encode({ type: "challenge", nonce, protocol: PROTOCOL }));
 * ```
 */
export const PROTOCOL: ProtocolRange = [1, 8];

/**
 * The highest version both ranges contain, or `undefined` when they are disjoint.
 *
 * @example
 * ```ts
 * negotiate([1, 3], [2, 5]); // 3
 * negotiate([1, 1], [2, 2]); // undefined
 * ```
 */
export function negotiate(ours: ProtocolRange, theirs: ProtocolRange): number | undefined {
  const low = Math.max(ours[0], theirs[0]);
  const high = Math.min(ours[1], theirs[1]);
  return low <= high ? high : undefined;
}

/**
 * A range as a person reads it: `"1..2"`, or `"1"` when it holds one version.
 *
 * @example
 * ```ts
 * describeRange([1, 2]); // "1..2"
 * describeRange([3, 3]); // "3"
 * ```
 */
export function describeRange(range: ProtocolRange): string {
  return range[0] === range[1] ? `${range[0]}` : `${range[0]}..${range[1]}`;
}

/**
 * Why a connection closes with 4002 (no shared version), naming both ranges; the coordinator
 * says it to a worker's hello, and a worker to a challenge, whichever side finds it first.
 *
 * @example
 * ```ts
 * noCommonVersion([1, 6], [7, 8]);
 * // "no common protocol version: the coordinator speaks 1..6, the worker speaks 7..8; install matching baton versions"
 * ```
 */
export function noCommonVersion(coordinator: ProtocolRange, worker: ProtocolRange): string {
  return `no common protocol version: the coordinator speaks ${describeRange(coordinator)}, the worker speaks ${describeRange(worker)}; install matching baton versions`;
}
