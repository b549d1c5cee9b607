import type { Clock } from "./ports.ts";

/** The longest delay a Node timer keeps: a longer one fires at once (with a warning). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timeout longer than Node's timers allow, waited out in hops; `timer` is the current hop. */
class LongTimeout {
  timer: NodeJS.Timeout;

  constructor(
    readonly fn: () => void,
    readonly ms: number,
  ) {
    this.timer = this.hop(fn, ms);
  }

  private hop(fn: () => void, ms: number): NodeJS.Timeout {
    if (ms <= MAX_TIMER_MS) return setTimeout(fn, ms);
    return setTimeout(() => {
      this.timer = this.hop(fn, ms - MAX_TIMER_MS);
    }, MAX_TIMER_MS);
  }
}

/**
 * The Clock port on Node's wall clock and global timers. Timers stay ref'd, so a pending
 * timeout keeps the process alive as a plain `setTimeout` would. A delay longer than Node's
 * timers keep (2^31 − 1 ms, about 24.8 days: a job's `timeoutMs`, a long backoff) is waited
 * out in hops instead of firing at once. `restartTimeout` re-arms a timer in place.
 *
 * @example
 * ```ts
 * const clock = nodeClock();
 * const started = clock.now();
 * const handle = clock.setTimeout(() => console.log(clock.now() - started), 100);
 * clock.clearTimeout(handle);
 * ```
 */
export function nodeClock(): Clock {
  return {
    now: () => Date.now(),
    setTimeout: (fn, ms) => (ms > MAX_TIMER_MS ? new LongTimeout(fn, ms) : setTimeout(fn, ms)),
    clearTimeout: (handle) =>
      clearTimeout(
        handle instanceof LongTimeout ? handle.timer : (handle as NodeJS.Timeout | undefined),
      ),
    restartTimeout(handle) {
      if (!(handle instanceof LongTimeout)) return (handle as NodeJS.Timeout).refresh();
      clearTimeout(handle.timer);
      return new LongTimeout(handle.fn, handle.ms);
    },
  };
}
