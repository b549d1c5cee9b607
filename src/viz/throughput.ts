import { formatDuration } from "../formatDuration.ts";

/**
 * What the dashboard's throughput panel draws: jobs finished in each bar from the run's start
 * to now, and the words that say what a bar is. Sent whole (at most 120 bars).
 */
export interface ThroughputView {
  /** Width of one bar in ms (`barWidth`). */
  barMs: number;
  /** Jobs finished (completed or failed) in each bar, the first starting with the run. */
  bars: number[];
  /** Bar places on the axis: up to now, or to a replay's end (its bars fill in as it steps). */
  slots: number;
  /** The panel's caption: `jobs finished per second`, `jobs finished per 2 ms`. */
  caption: string;
  /** The tallest bar: `peak 12 in 2 ms`, `peak 12/s`, `peak 34 in 10 s (3.4/s)`. */
  peak: string;
  /** Where the axis ends, since the start: `62 ms`, `3 min 25 s`. */
  end: string;
}

/** Bars drawn at most: the width doubles (or more) before a run needs more. */
export const MAX_BARS = 120;

/**
 * Bar widths (ms), each a multiple of the one before, so that a run that outgrows its bars
 * merges them into wider ones without losing a count; past a day, widths double.
 */
const WIDTHS = [
  1, 2, 10, 20, 100, 200, 1_000, 2_000, 10_000, 20_000, 60_000, 120_000, 600_000, 1_200_000,
  3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000,
];

const UNITS = [
  { ms: 86_400_000, short: "d", long: "day" },
  { ms: 3_600_000, short: "h", long: "hour" },
  { ms: 60_000, short: "min", long: "minute" },
  { ms: 1_000, short: "s", long: "second" },
  { ms: 1, short: "ms", long: "millisecond" },
] as const;

/**
 * The narrowest bar width that draws a run of `runMs` in at most `MAX_BARS` bars: 1 ms bars
 * for a simulated run over in 60 virtual ms, 1 s bars for a run of a minute, 1 min bars for
 * an hour's.
 *
 * @example
 * ```ts
 * barWidth(62); // 1
 * barWidth(204_903); // 2000
 * ```
 */
export function barWidth(runMs: number): number {
  for (const width of WIDTHS) if (Math.floor(runMs / width) < MAX_BARS) return width;
  let width = WIDTHS.at(-1)!;
  while (Math.floor(runMs / width) >= MAX_BARS) width *= 2;
  return width;
}

/** The largest unit no longer than `ms`. */
function unitOf(ms: number): (typeof UNITS)[number] {
  return UNITS.find((unit) => unit.ms <= ms) ?? UNITS.at(-1)!;
}

/**
 * The words of the panel for bars `barMs` wide whose tallest holds `peak` jobs, on an axis
 * `axisMs` long. A bar under a second wide says how many finished in it, not a rate: 3 jobs
 * in one virtual millisecond are not 3,000 a second of anything. A bar of a second or more
 * gives both.
 *
 * @example
 * ```ts
 * throughputWords(2, 12, 62); // { caption: "jobs finished per 2 ms", peak: "peak 12 in 2 ms", end: "62 ms" }
 * ```
 */
export function throughputWords(
  barMs: number,
  peak: number,
  axisMs: number,
): Pick<ThroughputView, "caption" | "peak" | "end"> {
  const unit = unitOf(barMs);
  const width = `${barMs / unit.ms} ${unit.short}`;
  const rate = (peak * 1000) / barMs;
  const words =
    peak === 0
      ? "none finished yet"
      : barMs < 1_000
        ? `peak ${peak} in ${width}`
        : barMs === 1_000
          ? `peak ${peak}/s`
          : `peak ${peak} in ${width}${rate >= 0.1 ? ` (${Number(rate.toFixed(rate < 10 ? 1 : 0))}/s)` : ""}`;
  return {
    caption: `jobs finished per ${barMs === unit.ms ? unit.long : width}`,
    peak: words,
    end: formatDuration(axisMs),
  };
}

/**
 * Jobs finished over a run, folded into at most `MAX_BARS` bars whose width follows the
 * run's length so far (or the whole run's, when it is known: a replay's), merged into wider
 * ones as the run goes on. O(1) memory; merging is O(`MAX_BARS`), at most once per width.
 *
 * @example
 * ```ts
 * const throughput = new Throughput();
 * throughput.finished(3);
 * throughput.at(62);
 * throughput.view().caption; // "jobs finished per millisecond"
 * ```
 */
export class Throughput {
  private barMs: number;
  private readonly bars: number[] = [];
  private elapsed = 0;

  /** `runMs`: the run's whole length, when it is known before it is drawn (a replay). */
  constructor(private readonly runMs = 0) {
    this.barMs = barWidth(runMs);
  }

  /** Moves the axis on to `elapsedMs` since the run's start (a clock that steps back is ignored). */
  at(elapsedMs: number): void {
    if (elapsedMs <= this.elapsed) return;
    this.elapsed = elapsedMs;
    const width = barWidth(Math.max(elapsedMs, this.runMs));
    if (width <= this.barMs) return;
    const merged: number[] = [];
    this.bars.forEach((count, i) => {
      const into = Math.floor((i * this.barMs) / width);
      merged[into] = (merged[into] ?? 0) + count;
    });
    this.bars.splice(0, this.bars.length, ...Array.from(merged, (count) => count ?? 0));
    this.barMs = width;
  }

  /** Counts a job that finished `elapsedMs` after the run's start. */
  finished(elapsedMs: number): void {
    this.at(elapsedMs);
    const bar = Math.floor(Math.max(0, elapsedMs) / this.barMs);
    while (this.bars.length <= bar) this.bars.push(0);
    this.bars[bar]!++;
  }

  view(): ThroughputView {
    const axis = Math.max(this.elapsed, this.runMs);
    const bars = [...this.bars];
    const upTo = Math.floor(this.elapsed / this.barMs);
    while (bars.length <= upTo) bars.push(0);
    return {
      barMs: this.barMs,
      bars,
      slots: Math.floor(axis / this.barMs) + 1,
      ...throughputWords(this.barMs, Math.max(0, ...bars), axis),
    };
  }
}
