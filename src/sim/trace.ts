import { createHash } from "node:crypto";

/**
 * A simulation's trace: one line per event, `<virtual ms> <event>`. Two runs of one seed must
 * give the same lines, byte for byte; the hash says so in 16 hex digits. The hash is taken
 * once, over every line followed by a newline, when it is first asked for: that closes the
 * trace, and whatever a simulated process still says after the run is over is not recorded.
 * A note (`<virtual ms> # <note>`) explains events rather than being one (a handler that ran
 * on after its attempt was aborted): it is in the lines, so `--check-determinism` compares it,
 * but not in the hash, which stays the events' own when a note is added to baton.
 *
 * @example
 * ```ts
 * const trace = new Trace(() => clock.now());
 * trace.add("fault reset sim:3 by client");
 * trace.note("2e59… (a) attempt 1: its handler ended 117 ms after its abort (timed out)");
 * trace.hash; // "9f2c…"
 * trace.last(20); // the last 20 lines, for a failure report
 * ```
 */
export class Trace {
  readonly lines: string[] = [];
  /** Which of the lines are notes, left out of the hash. */
  private readonly notes = new Set<number>();
  private final: string | undefined;

  constructor(
    private readonly now: () => number,
    private readonly onLine?: (at: number, event: string) => void,
  ) {}

  /** Records `event` at the current virtual time (nothing, once the trace is closed). */
  readonly add = (event: string): void => {
    if (this.final !== undefined) return;
    const at = this.now();
    this.lines.push(`${at} ${event}`);
    this.onLine?.(at, event);
  };

  /** Records `note` as `# <note>` at the current virtual time: a line the hash leaves out. */
  readonly note = (note: string): void => {
    if (this.final !== undefined) return;
    this.notes.add(this.lines.length);
    this.add(`# ${note}`);
  };

  /** The hash of every line so far but the notes (the trace is closed by the first call). */
  get hash(): string {
    if (this.final === undefined) {
      // One update of the lines joined: the same bytes as one update a line, at a fraction of
      // the cost (each update crosses into the hash's native code).
      const events =
        this.notes.size === 0 ? this.lines : this.lines.filter((_, i) => !this.notes.has(i));
      const text = events.length === 0 ? "" : `${events.join("\n")}\n`;
      this.final = createHash("sha256").update(text).digest("hex").slice(0, 16);
    }
    return this.final;
  }

  last(n: number): string[] {
    return this.lines.slice(-n);
  }
}
