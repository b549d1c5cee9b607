import type { Clock } from "./ports.ts";

/** Node's longest timer; a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Notices a coordinator gone silent: one timer, restarted whenever the coordinator is heard
 * from, that calls `onSilent` once `limitMs` has passed without. A worker also counts its
 * time without a job with one (`idleExitMs`), restarted at each result. It measures with timers
 * alone, never with `now()`: a wall clock stepped forward (NTP at boot, a resumed VM) must not
 * look like silence. A limit past Node's longest timer is waited out in pieces.
 *
 * @example
 * ```ts
 * const watch = new SilenceWatch(clock, 20_000, () => link.close(4009, "coordinator silent"));
 * link.onFrame(() => watch.heard());
 * link.onClose(() => watch.stop());
 * ```
 */
export class SilenceWatch {
  private timer: unknown;
  /** Of the limit, what is left after the piece the timer is waiting out now. */
  private left = 0;
  /** The timer is waiting out the limit's first piece: `heard` restarts it in place. */
  private onFirstPiece = false;

  constructor(
    private readonly clock: Clock,
    private readonly limitMs: number,
    private readonly onSilent: () => void,
  ) {
    this.heard();
  }

  heard(): void {
    // Once a frame on a busy worker: re-armed, not cleared and set again, where the clock can.
    if (this.onFirstPiece && this.clock.restartTimeout !== undefined) {
      this.timer = this.clock.restartTimeout(this.timer);
      return;
    }
    this.stop();
    this.left = this.limitMs;
    this.next();
    this.onFirstPiece = true;
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.onFirstPiece = false;
  }

  private next(): void {
    const piece = Math.min(this.left, MAX_TIMER_MS);
    this.left -= piece;
    this.timer = this.clock.setTimeout(this.elapsed, piece);
  }

  private readonly elapsed = (): void => {
    this.timer = undefined;
    this.onFirstPiece = false;
    if (this.left > 0) this.next();
    else this.onSilent();
  };
}
