import { CloseCode } from "../transport/closeCodes.ts";

/**
 * How a registered worker's connection ended, as the coordinator saw it: the close code and
 * reason of whichever side closed first. The coordinator's own closes give its reason
 * (`4005`, `no heartbeat for 20000 ms`); a link the worker or the network closed gives the
 * worker's (`1001`, `worker w1 stopping (SIGTERM)`), or none (`1006`: its process died, or
 * its host or the network failed).
 *
 * @example
 * ```ts
 * const close: WorkerClose = { code: 1006, reason: "" };
 * ```
 */
export interface WorkerClose {
  code: number;
  reason: string;
}

/**
 * Whether the worker left on purpose: it closed first with 1001 (stopped by a signal or its
 * pool, or leaving a run its handler thread can no longer serve). Its job is handed on and
 * does not count towards `maxLost`: the job did not take it down. The coordinator never
 * closes a worker with 1001 itself.
 *
 * @example
 * ```ts
 * leftOnPurpose({ code: 1001, reason: "worker w1 stopping (SIGTERM)" }); // true
 * ```
 */
export function leftOnPurpose(close: WorkerClose): boolean {
  return close.code === CloseCode.goingAway;
}
