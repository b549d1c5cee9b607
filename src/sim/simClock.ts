import type { Clock } from "../runtime/ports.ts";

/** A pending timer: due time, then the order it was set in, breaks ties. */
interface Timer {
  due: number;
  seq: number;
  /** Its delay in whole milliseconds, for `restartTimeout`. */
  delay: number;
  fn: () => void;
  cancelled: boolean;
  /** The pending timers of the scope that set it, which it leaves when it fires. */
  owner: Set<Timer> | undefined;
}

/**
 * One owner's timers on a {@link SimClock} (a simulated process): `kill()` cancels every timer
 * it has pending and turns its later `setTimeout` calls into no-ops, as a crash would.
 */
export interface ClockScope extends Clock {
  kill(): void;
  readonly alive: boolean;
}

/**
 * Virtual time. Nothing moves until the runner calls {@link SimClock.fireNext}, which jumps to
 * the earliest pending timer and runs it; timers due at the same time run in the order they
 * were set. Usable wherever a `Clock` is (the engine's ports, XState's `clock` option).
 * Virtual time is whole milliseconds: a delay that is not whole is rounded up, so a timer
 * never fires before its delay has passed (a handler's `sleep(2_000 + 3_000 * random())` put
 * the trace and every time after it at 4044.1008647950493 ms).
 *
 * @example
 * ```ts
 * const clock = new SimClock();
 * clock.setTimeout(() => console.log(clock.now()), 500);
 * clock.fireNext(); // prints 500
 * ```
 */
export class SimClock implements Clock {
  private time = 0;
  private seq = 0;
  /** A binary min-heap on (due, seq). */
  private readonly heap: Timer[] = [];
  private live = 0;

  now(): number {
    return this.time;
  }

  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown {
    return this.schedule(fn, ms);
  }

  clearTimeout(handle: unknown): void {
    const timer = handle as Timer | undefined;
    if (timer && !timer.cancelled) {
      timer.cancelled = true;
      this.live--;
    }
  }

  /** Clears the timer and sets a new one with its function and delay, which it returns. */
  restartTimeout(handle: unknown): unknown {
    const timer = handle as Timer;
    this.clearTimeout(timer);
    return this.schedule(timer.fn, timer.delay);
  }

  /** Timers set and not yet run or cleared. */
  get pending(): number {
    return this.live;
  }

  /** When the next timer is due, or undefined when none is pending. */
  nextDue(): number | undefined {
    this.dropCancelled();
    return this.heap[0]?.due;
  }

  /**
   * Moves time to the earliest pending timer due no later than `limit` and runs it. Returns
   * false (and moves time to `limit` when finite) when no such timer exists.
   */
  fireNext(limit = Number.POSITIVE_INFINITY): boolean {
    this.dropCancelled();
    const timer = this.heap[0];
    if (timer === undefined || timer.due > limit) {
      if (Number.isFinite(limit) && limit > this.time) this.time = limit;
      return false;
    }
    this.pop();
    timer.cancelled = true;
    this.live--;
    if (timer.due > this.time) this.time = timer.due;
    timer.owner?.delete(timer);
    timer.fn();
    return true;
  }

  /** A scope of this clock that can be killed with everything it scheduled. */
  scope(): ClockScope {
    const clock = this;
    const timers = new Set<Timer>();
    let alive = true;
    const schedule = (fn: () => void, ms: number): Timer | undefined => {
      if (!alive) return undefined;
      const timer = clock.schedule(fn, ms);
      timer.owner = timers;
      timers.add(timer);
      return timer;
    };
    return {
      now: () => clock.time,
      setTimeout: schedule,
      clearTimeout(handle) {
        timers.delete(handle as Timer);
        clock.clearTimeout(handle);
      },
      restartTimeout(handle) {
        const timer = handle as Timer;
        if (!timers.has(timer)) return undefined;
        this.clearTimeout(timer);
        return schedule(timer.fn, timer.delay);
      },
      kill() {
        alive = false;
        for (const timer of timers) clock.clearTimeout(timer);
        timers.clear();
      },
      get alive() {
        return alive;
      },
    };
  }

  private schedule(fn: () => void, ms: number): Timer {
    const delay = Number.isFinite(ms) && ms > 0 ? Math.ceil(ms) : 0;
    const timer: Timer = {
      due: this.time + delay,
      seq: this.seq++,
      delay,
      fn,
      cancelled: false,
      owner: undefined,
    };
    this.live++;
    this.push(timer);
    return timer;
  }

  private dropCancelled(): void {
    while (this.heap.length > 0 && this.heap[0]!.cancelled) this.pop();
  }

  /** Adds `timer`, moving the timers above it down until its place is found (no swaps). */
  private push(timer: Timer): void {
    const heap = this.heap;
    let i = heap.length;
    heap.push(timer);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = heap[parent]!;
      if (!before(timer, above)) break;
      heap[i] = above;
      i = parent;
    }
    heap[i] = timer;
  }

  /** Removes the first timer: the last one sinks from the top, the lesser child moving up. */
  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    const n = heap.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && before(heap[right]!, heap[left]!) ? right : left;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}
