import { CloseCode, closeName } from "../transport/closeCodes.ts";

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

/**
 * The workers of some losses (`lostWorkers` with `lostWhy`, in order), told apart as a
 * person reads them: `lost`, each worker once, in the order it first went, with how its
 * connection ended by the name of its close (`connection broke`, `lease expired`; a worker
 * lost more than once, each way once); `left`, each worker that left on purpose
 * (`leftOnPurpose`) once, by name alone. The run's summary and a poison job's error both
 * name workers this way.
 *
 * @example
 * ```ts
 * namedLosses([["local-1", { code: 1006, reason: "" }], ["local-2", { code: 1001, reason: "" }]]);
 * // { lost: ["local-1 (connection broke)"], left: ["local-2"] }
 * ```
 */
export function namedLosses(losses: Iterable<readonly [string, WorkerClose]>): {
  lost: string[];
  left: string[];
} {
  /** The names of the closes of each worker lost. */
  const lost = new Map<string, Set<string>>();
  const left = new Set<string>();
  for (const [worker, close] of losses) {
    if (leftOnPurpose(close)) {
      left.add(worker);
      continue;
    }
    const ways = lost.get(worker) ?? new Set<string>();
    ways.add(closeName(close.code));
    lost.set(worker, ways);
  }
  return {
    lost: [...lost].map(([worker, ways]) => `${worker} (${[...ways].join(", ")})`),
    left: [...left],
  };
}
