import type { Clock } from "./ports.ts";

/**
 * The Clock port on Node's wall clock and global timers. Timers stay ref'd, so a pending
 * timeout keeps the process alive as a plain `setTimeout` would.
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
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
  };
}
