import { createHash, type Hash } from "node:crypto";

/**
 * A simulation's trace: one line per event, `<virtual ms> <event>`, hashed as it grows. Two
 * runs of one seed must give the same lines, byte for byte; the hash says so in 16 hex digits.
 *
 * @example
 * ```ts
 * const trace = new Trace(() => clock.now());
 * trace.add("fault reset sim:3 by client");
 * trace.hash; // "9f2c…"
 * trace.last(20); // the last 20 lines, for a failure report
 * ```
 */
export class Trace {
  readonly lines: string[] = [];
  private readonly digest: Hash = createHash("sha256");
  private final: string | undefined;

  constructor(
    private readonly now: () => number,
    private readonly onLine?: (at: number, event: string) => void,
  ) {}

  /** Records `event` at the current virtual time. */
  readonly add = (event: string): void => {
    const at = this.now();
    const line = `${at} ${event}`;
    this.lines.push(line);
    this.digest.update(line);
    this.digest.update("\n");
    this.onLine?.(at, event);
  };

  /** The hash of every line so far (the trace is closed by the first call). */
  get hash(): string {
    this.final ??= this.digest.digest("hex").slice(0, 16);
    return this.final;
  }

  last(n: number): string[] {
    return this.lines.slice(-n);
  }
}
