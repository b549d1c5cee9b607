import { formatDuration } from "../formatDuration.ts";
import type { LiveLine } from "./liveLine.ts";

/** How often the line is drawn again when seeds end, at most (wall ms). */
const DRAW_EVERY_MS = 100;
/** How often the line is drawn again while no seed ends: its elapsed time and ETA move on. */
const TICK_MS = 1000;

/**
 * The progress line of `baton sim --seeds A..B` on a terminal: the seeds ended so far on
 * every thread (as they end, not in the seed order they are reported in, where a slow first
 * seed held the line still while the other threads finished dozens), those that failed, the
 * rate and an ETA (`seeds 1..2000 on 2 threads: 812/2000 done, 1 failed, 41.2 seeds/s, ETA 28.8 s`):
 * what is left at that rate, as `formatDuration` writes it (it was rounded up to a whole
 * second, so the last seeds of a fast range read `ETA 1.0 s` with 81 ms left).
 *
 * @example
 * ```ts
 * const progress = new SeedsProgress(new LiveLine(process.stderr), 1, 2000, 2);
 * for await (const r of simulateSeeds(1, 2000, drawn, { threads: 2, onSeedEnded: (r) => progress.ended(r.ok) })) {
 *   progress.draw();
 * }
 * progress.stop();
 * ```
 */
export class SeedsProgress {
  private readonly started = performance.now();
  private done = 0;
  private failed = 0;
  private drawnAt = Number.NEGATIVE_INFINITY;
  private readonly tick: NodeJS.Timeout;

  constructor(
    private readonly line: LiveLine,
    private readonly first: number,
    private readonly last: number,
    private readonly threads: number,
  ) {
    this.draw();
    this.tick = setInterval(() => this.draw(), TICK_MS);
    this.tick.unref();
  }

  /** A seed ended, on any thread. */
  ended(ok: boolean): void {
    this.done++;
    if (!ok) this.failed++;
    if (performance.now() - this.drawnAt >= DRAW_EVERY_MS) this.draw();
  }

  /** Draws the line now (again after something was printed above it). */
  draw(): void {
    const now = performance.now();
    this.drawnAt = now;
    const total = this.last - this.first + 1;
    const seconds = (now - this.started) / 1000;
    const rate = this.done / seconds;
    const pace =
      this.done > 0 && this.done < total
        ? `, ${rate.toFixed(1)} seeds/s, ETA ${formatDuration(((total - this.done) / rate) * 1000)}`
        : ` (${formatDuration(now - this.started)})`;
    this.line.draw(
      `seeds ${this.first}..${this.last} on ${this.threads} thread${this.threads === 1 ? "" : "s"}: ${this.done}/${total} done, ${this.failed} failed${pace}`,
    );
  }

  /** Stops redrawing and clears the line. */
  stop(): void {
    clearInterval(this.tick);
    this.line.clear();
  }
}
