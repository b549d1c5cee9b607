/**
 * The shortest stall worth naming: the coordinator's default ping interval (DESIGN §8), so a
 * stall this long has already held up an answer to a ping.
 */
const NOTABLE_STALL_MS = 5_000;

/** How often the loop is looked at: a stall is the time between two looks, less this. */
const TICK_MS = 250;

/** Watches this process's event loop for stalls; see `watchEventLoopStalls`. */
export interface EventLoopStalls {
  /** Why a lost connection may be this process's own doing, or undefined when no stall says so. */
  note(): string | undefined;
  stop(): void;
}

/**
 * Watches how long this process's event loop stays blocked. A worker answers the
 * coordinator's pings on that loop, so a handler that runs synchronous code for longer than
 * the coordinator's limit (20 s by default) loses its connection: the coordinator drops the
 * worker as dead and the worker, once its loop is free, finds the coordinator silent. `note()`
 * says so, with the longest stall (one that has just ended included), when one lasted 5 s or more.
 *
 * @example
 * ```ts
 * const stalls = watchEventLoopStalls();
 * // ... the connection ended abnormally ...
 * const note = stalls.note();
 * if (note) process.stderr.write(`baton worker: ${note}\n`);
 * stalls.stop();
 * ```
 */
export function watchEventLoopStalls(): EventLoopStalls {
  let last = performance.now();
  let longestMs = 0;
  const look = () => {
    const now = performance.now();
    longestMs = Math.max(longestMs, now - last - TICK_MS);
    last = now;
  };
  const timer = setInterval(look, TICK_MS).unref();
  return {
    note() {
      look();
      if (longestMs < NOTABLE_STALL_MS) return undefined;
      return `this worker's event loop was blocked for up to ${(longestMs / 1000).toFixed(1)} s at a time, which may be why: a blocked worker cannot answer the coordinator's pings, and the coordinator drops a worker it has not heard from for 20 s (by default). Run such handlers on a thread of their own with --handler-thread (on baton worker or baton run; handlerThread in localPool and slurmPool), or make them await between pieces of their work (await new Promise(setImmediate))`;
    },
    stop: () => clearInterval(timer),
  };
}
