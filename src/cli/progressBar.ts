import { formatDuration } from "../formatDuration.ts";
import type { JobProgressEvent, RunProgress, StoreReadingEvent } from "../runtime/run.ts";
import { JobProgressLines } from "./jobProgressLines.ts";
import { LiveLine } from "./liveLine.ts";

/**
 * A live progress bar for a terminal: done / running / failed / skipped / cancelled / cached
 * (as the summary counts them), rate and ETA, redrawn
 * in place on stderr, with what running handlers report (`ctx.progress`) on lines under it
 * (`JobProgressLines`, drawn with the bar's next `progress`); before the run starts, how far
 * reading the stored results has come.
 *
 * @example
 * ```ts
 * const bar = new ProgressBar(process.stderr);
 * run.on("store.reading", (r) => bar.drawReading(r));
 * run.on("progress", (p) => bar.draw(p));
 * run.on("job.progress", (p) => bar.jobProgress(p));
 * run.on("job", (e) => {
 *   if (e.state !== "running") bar.jobLeftRunning(e.id);
 * });
 * bar.print("a worker joined\n"); // above the bar, which is drawn again
 * bar.clear();
 * ```
 */
export class ProgressBar {
  private readonly line: LiveLine;
  private readonly jobs = new JobProgressLines();

  constructor(
    out: NodeJS.WriteStream,
    private readonly width = 28,
  ) {
    this.line = new LiveLine(out);
  }

  draw(progress: RunProgress): void {
    const { counts, total, rate, cached } = progress;
    const finished = counts.completed + counts.failed;
    const fraction = total === 0 ? 1 : finished / total;
    const filled = Math.round(fraction * this.width);
    const bar = `${"█".repeat(filled)}${"░".repeat(this.width - filled)}`;
    const left = total - finished;
    const eta = rate > 0 && left > 0 ? ` ETA ${formatDuration((left / rate) * 1000)}` : "";
    // Results waiting for the store show only when there are some (a slow or stalled disk).
    const storing = counts.storing > 0 ? ` · ${counts.storing} storing` : "";
    // A bar that does not move says why when no worker is there to take a job.
    const workers =
      progress.workers === 0 && left > 0
        ? " · waiting for a worker to connect"
        : ` · ${progress.workers} worker${progress.workers === 1 ? "" : "s"}`;
    // What more workers wait for (Slurm's pending allocations), while jobs are left for them.
    const pool =
      progress.poolWaitingFor !== undefined && left > 0 ? ` · ${progress.poolWaitingFor}` : "";
    // How the jobs that did not complete ended, as the summary counts them: a skip or a cancel
    // is not a failure, and shows only when there are some.
    const skipped = progress.skipped > 0 ? ` · ${progress.skipped} skipped` : "";
    const cancelled = progress.cancelled > 0 ? ` · ${progress.cancelled} cancelled` : "";
    const line = `${bar} ${finished}/${total} done · ${counts.running} running${storing}${workers}${pool} · ${progress.failed} failed${skipped}${cancelled} · ${cached} cached · ${rate.toFixed(rate < 10 ? 1 : 0)} jobs/s${eta}`;
    this.line.draw([line, ...this.jobs.lines(Date.now())].join("\n"));
  }

  /** A handler's report: shown under the bar from its next draw, until its job leaves running. */
  jobProgress(event: JobProgressEvent): void {
    this.jobs.report(event, Date.now());
  }

  /** The job is no longer running: its handler's report goes with the bar's next draw. */
  jobLeftRunning(id: string): void {
    this.jobs.ended(id);
  }

  /** Reading the results earlier runs stored: `done` of `total` entries. */
  drawReading({ done, total }: StoreReadingEvent): void {
    this.line.draw(
      `reading stored results: ${done.toLocaleString("en-US")} of ${total.toLocaleString("en-US")}`,
    );
  }

  /** Writes `text` (whole lines: a log line, a notice) above the bar, then draws it again. */
  print(text: string): void {
    this.line.print(text);
  }

  clear(): void {
    this.line.clear();
  }

  /** What others write to `streams` goes above the bar until the returned function is called. */
  adopt(streams: readonly NodeJS.WriteStream[]): () => void {
    return this.line.adopt(streams);
  }
}
