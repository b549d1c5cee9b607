import { describe, expect, it } from "vitest";
import { ProgressBar } from "../../src/cli/progressBar.ts";

/** A terminal of `columns` columns that keeps what is written to it. */
function terminal(columns = 200) {
  const written: string[] = [];
  const out = {
    columns,
    write: (text: string) => written.push(text),
  } as unknown as NodeJS.WriteStream;
  return { out, written, last: () => written.at(-1)!.replace("\r\x1b[2K", "") };
}

const counts = { blocked: 0, ready: 3, running: 2, storing: 0, completed: 4, failed: 1 };
/** How the jobs in the failed state ended: `counts.failed`'s one, a failure. */
const ended = { failed: 1, skipped: 0, cancelled: 0 };
/** No job in the failed state. */
const none = { failed: 0, skipped: 0, cancelled: 0 };
/** A run of 10 jobs half done, on 2 workers. */
const halfDone = { total: 10, counts, ...ended, cached: 0, elapsedMs: 1000, rate: 5, workers: 2 };

describe("ProgressBar", () => {
  it("draws done, running, failed, cached, rate and ETA on one line, redrawn in place", () => {
    const t = terminal();
    const bar = new ProgressBar(t.out, 10);
    bar.draw({ total: 10, counts, ...ended, cached: 1, elapsedMs: 1000, rate: 5, workers: 3 });
    expect(t.written[0]!.startsWith("\r\x1b[2K")).toBe(true);
    expect(t.last()).toBe(
      "█████░░░░░ 5/10 done · 2 running · 3 workers · 1 failed · 1 cached · 5.0 jobs/s ETA 1.0 s",
    );
  });

  it("counts skipped and cancelled jobs apart from failed ones, as the summary does", () => {
    const t = terminal();
    const bar = new ProgressBar(t.out, 10);
    const stopped = { blocked: 0, ready: 0, running: 0, storing: 0, completed: 4, failed: 6 };
    const ended = { failed: 1, skipped: 2, cancelled: 3 };
    bar.draw({
      total: 10,
      counts: stopped,
      ...ended,
      cached: 0,
      elapsedMs: 1000,
      rate: 10,
      workers: 2,
    });
    expect(t.last()).toContain("· 1 failed · 2 skipped · 3 cancelled · 0 cached ·");
  });

  it("says it waits for a worker when none is connected and jobs are left", () => {
    const t = terminal();
    const bar = new ProgressBar(t.out, 10);
    const idle = { blocked: 0, ready: 5, running: 0, storing: 0, completed: 0, failed: 0 };
    bar.draw({ total: 5, counts: idle, ...none, cached: 0, elapsedMs: 1000, rate: 0, workers: 0 });
    expect(t.last()).toBe(
      "░░░░░░░░░░ 0/5 done · 0 running · waiting for a worker to connect · 0 failed · 0 cached · 0.0 jobs/s",
    );
    const done = { ...idle, ready: 0, completed: 5 };
    bar.draw({ total: 5, counts: done, ...none, cached: 0, elapsedMs: 1000, rate: 5, workers: 0 });
    expect(t.last()).toContain("· 0 workers ·");
  });

  it("says what the pool waits for (Slurm's pending allocations) while jobs are left", () => {
    const t = terminal();
    const bar = new ProgressBar(t.out, 10);
    const idle = { blocked: 0, ready: 5, running: 0, storing: 0, completed: 0, failed: 0 };
    const waiting = "Slurm: 3 allocations pending (Priority)";
    bar.draw({
      total: 5,
      counts: idle,
      ...none,
      cached: 0,
      elapsedMs: 1000,
      rate: 0,
      workers: 0,
      poolWaitingFor: waiting,
    });
    expect(t.last()).toBe(
      "░░░░░░░░░░ 0/5 done · 0 running · waiting for a worker to connect · Slurm: 3 allocations pending (Priority) · 0 failed · 0 cached · 0.0 jobs/s",
    );
    bar.draw({ ...halfDone, poolWaitingFor: waiting });
    expect(t.last()).toContain(
      "· 2 running · 2 workers · Slurm: 3 allocations pending (Priority) · 1 failed ·",
    );
  });

  it("shows results being stored only when there are some", () => {
    const t = terminal();
    new ProgressBar(t.out, 10).draw({
      total: 10,
      counts: { ...counts, storing: 3 },
      ...ended,
      cached: 0,
      elapsedMs: 1000,
      rate: 5,
      workers: 1,
    });
    expect(t.last()).toContain("· 2 running · 3 storing · 1 worker · 1 failed ·");
  });

  it("says how far reading the stored results has come, then clears the line", () => {
    const t = terminal();
    const bar = new ProgressBar(t.out);
    bar.drawReading({ done: 12_000, total: 20_000 });
    expect(t.last()).toBe("reading stored results: 12,000 of 20,000");
    bar.clear();
    expect(t.written.at(-1)).toBe("\r\x1b[2K");
  });

  it("does not cut the line on a terminal that reports no width", () => {
    const t = terminal(0);
    new ProgressBar(t.out).drawReading({ done: 500, total: 20_000 });
    expect(t.last()).toBe("reading stored results: 500 of 20,000");
  });

  it("cuts the line to the terminal's width", () => {
    const t = terminal(20);
    new ProgressBar(t.out).drawReading({ done: 12_000, total: 20_000 });
    expect(t.last()).toBe("reading stored resu");
  });

  it("prints lines above itself (a log line, a notice) and draws itself again at once", () => {
    const t = terminal();
    const bar = new ProgressBar(t.out, 10);
    bar.draw({ total: 10, counts, ...ended, cached: 1, elapsedMs: 1000, rate: 5, workers: 3 });
    const drawn = t.written.join("");
    bar.print("WARN: worker lost\n");
    // Cleared, the line, and the same bar again: the bar does not wait for its next change.
    expect(t.written.join("")).toBe(`${drawn}\r\x1b[2KWARN: worker lost\n${drawn}`);
  });

  it("shows what running handlers report under the bar, with its next draw, until their job leaves running", () => {
    const t = terminal();
    const bar = new ProgressBar(t.out, 10);
    const progress = halfDone;
    bar.draw(progress);
    bar.jobProgress({
      id: "3f2a9c1d0b7e4a56",
      kind: "fetch",
      worker: "local-1",
      done: 2,
      total: 5,
      message: "page 2",
    });
    bar.jobProgress({
      id: "77aa9c1d0b7e4a56",
      kind: "train",
      worker: "local-2",
      message: "epoch 1",
    });
    expect(t.last()).not.toContain("fetch");
    bar.draw(progress);
    expect(t.last().split("\n").slice(1)).toEqual([
      "  fetch 3f2a9c1d0b7e4a56: 2/5 · page 2",
      "  train 77aa9c1d0b7e4a56: epoch 1",
    ]);
    const [head] = t.last().split("\n");
    bar.jobLeftRunning("3f2a9c1d0b7e4a56");
    bar.draw(progress);
    // The three lines erased from the last up, and the bar drawn with the one line left.
    expect(t.written.at(-1)).toBe(
      `\r\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K${head}\n  train 77aa9c1d0b7e4a56: epoch 1`,
    );
  });
});
