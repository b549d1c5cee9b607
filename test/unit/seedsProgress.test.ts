import { afterEach, describe, expect, it, vi } from "vitest";
import { LiveLine } from "../../src/cli/liveLine.ts";
import { SeedsProgress } from "../../src/cli/seedsProgress.ts";

afterEach(() => {
  vi.useRealTimers();
});

/** A range's progress line, its drawings kept, on a clock the test moves. */
function progress(first: number, last: number) {
  vi.useFakeTimers({ toFake: ["performance", "setInterval", "clearInterval"] });
  const written: string[] = [];
  const out = { columns: 200, write: (text: string) => written.push(text) };
  const line = new LiveLine(out as unknown as NodeJS.WriteStream);
  /** Each drawing as it reads, its redrawing in place taken off. */
  const drawn = { at: (i: number) => written.at(i)?.replace("\r\x1b[2K", "") };
  return { progress: new SeedsProgress(line, first, last, 2), drawn };
}

describe("SeedsProgress", () => {
  it("gives the ETA the rate gives, not rounded up to a whole second", () => {
    // 297 of 300 seeds in 8 s (37.1 seeds/s): 3 are left, 81 ms. It read "ETA 1.0 s".
    const { progress: p, drawn } = progress(1, 300);
    vi.advanceTimersByTime(8_000);
    for (let i = 0; i < 297; i++) p.ended(i % 2 === 0);
    p.draw();
    expect(drawn.at(-1)).toBe(
      "seeds 1..300 on 2 threads: 297/300 done, 148 failed, 37.1 seeds/s, ETA 81 ms",
    );
    // 1 of 2,000 in 2 s: 1,999 more at 0.5 seeds/s.
    const slow = progress(1, 2000);
    vi.advanceTimersByTime(2_000);
    slow.progress.ended(true);
    slow.progress.draw();
    expect(slow.drawn.at(-1)).toBe(
      "seeds 1..2000 on 2 threads: 1/2000 done, 0 failed, 0.5 seeds/s, ETA 1 h 06 min",
    );
    p.stop();
    slow.progress.stop();
  });
});
