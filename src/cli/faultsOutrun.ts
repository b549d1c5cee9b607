import type { Fault } from "../sim/faultPlan.ts";

/**
 * Over the passed seeds of a range of your own graph (a failed one stopped where it broke),
 * those whose run was over before the first of the faults drawn for it: drawn faults start
 * within the first 20 virtual s (heavy: 40 s, `withinMs`), and a graph of yours is often over
 * in seconds, so most seeds of a range passed without meeting a fault, saying nothing of it.
 * `line()` says so when more than half of the seeds that drew faults outran them, with the
 * `--faults-within` to give: the median run, rounded up to whole seconds.
 *
 * @example
 * ```ts
 * const outrun = new FaultsOutrun(20_000);
 * outrun.add(result.faults, result.virtualMs); // for each seed that passed
 * process.stdout.write(outrun.line()); // "your run was over before its first fault in 9 of 10 seeds …"
 * ```
 */
export class FaultsOutrun {
  /** Seeds that drew faults. */
  private drew = 0;
  /** Seeds whose run was over before their first fault. */
  private outran = 0;
  /** The virtual ms each seed that drew faults took. */
  private readonly runs: number[] = [];

  constructor(private readonly withinMs: number) {}

  add(faults: readonly Fault[], virtualMs: number): void {
    if (faults.length === 0) return;
    this.drew++;
    this.runs.push(virtualMs);
    if (Math.min(...faults.map((f) => f.at)) >= virtualMs) this.outran++;
  }

  /** The line to print after the range's summary; "" when most seeds met their faults. */
  line(): string {
    if (this.outran * 2 <= this.drew) return "";
    const sorted = [...this.runs].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const seconds = Math.max(1, Math.ceil(median / 1000));
    return `your run was over before its first fault in ${this.outran} of ${this.drew} seeds that drew faults (the median run took ${median} virtual ms; faults start within the first ${this.withinMs} virtual ms): to have them land during your run, give --faults-within ${seconds}s, about as long as it takes\n`;
  }
}
