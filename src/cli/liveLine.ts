/**
 * Lines at the bottom of a terminal, redrawn in place (stderr): the progress bar of
 * `baton run` (and under it what running handlers report), the group status of `baton
 * launch`. Lines printed through `print` go above them. Each line is cut to the terminal's
 * width: one that wrapped would leave its second row behind when redrawn.
 *
 * @example
 * ```ts
 * const line = new LiveLine(process.stderr);
 * line.draw("3/10 done\n  fetch 3f2a…: 2/5");
 * line.print("a job failed\n"); // above the live lines, which are drawn again
 * line.clear();
 * ```
 */
export class LiveLine {
  /** What is on the lines now, joined by newlines ("" when nothing). */
  private shown = "";
  /** The stream's own `write`, which `adopt` leaves to the live lines. */
  private readonly write: (text: string) => void;
  /** Whether text written through `adopt` left the cursor in the middle of a line. */
  private midLine = false;

  constructor(private readonly out: NodeJS.WriteStream) {
    const write = out.write;
    this.write = (text) => {
      write.call(out, text);
    };
  }

  /** Draws `text` (one line, or several joined by newlines) in place of what is shown. */
  draw(text: string): void {
    // A terminal that reports no size (0 columns, as under script(1)) is not cut to nothing.
    const columns = this.out.columns || 120;
    const shown = text
      .split("\n")
      .map((line) => line.slice(0, columns - 1))
      .join("\n");
    // A group's teardown steps redraw `baton launch`'s line, often with the same text.
    if (shown === this.shown) return;
    const erase = this.midLine ? "\n" : this.erase();
    this.midLine = false;
    this.shown = shown;
    this.write(`${erase}${shown}`);
  }

  /** Writes `text` (whole lines) above the live lines, then draws them again. */
  print(text: string): void {
    const shown = this.shown;
    this.clear();
    this.write(this.midLine ? `\n${text}` : text);
    this.midLine = false;
    if (shown !== "") this.draw(shown);
  }

  clear(): void {
    if (this.shown !== "") this.write(this.erase());
    this.shown = "";
  }

  /**
   * Until the function it returns is called, what anything else writes to `streams` (this
   * line's stream, and stdout when it is the same terminal) goes above the live lines, as
   * `print` puts it: with `baton run --in-process`, a handler's `console.log` was written
   * after the progress bar's text, and left the bar's line behind. After text that does not
   * end its line, the live lines wait for the next `draw`, which begins a line of its own.
   */
  adopt(streams: readonly NodeJS.WriteStream[]): () => void {
    const restores = streams.map((stream) => {
      const write = stream.write;
      stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        if (chunk.length === 0) return write.call(stream, chunk, ...(rest as []));
        const shown = this.shown;
        this.clear();
        const written = write.call(stream, chunk, ...(rest as []));
        this.midLine = typeof chunk === "string" ? !chunk.endsWith("\n") : chunk.at(-1) !== 10;
        if (!this.midLine && shown !== "") this.draw(shown);
        return written;
      }) as typeof stream.write;
      return () => {
        stream.write = write;
      };
    });
    return () => {
      for (const restore of restores) restore();
    };
  }

  /** Erases the lines shown, from the last up, leaving the cursor where the first began. */
  private erase(): string {
    const above = this.shown.split("\n").length - 1;
    return `\r\x1b[2K${"\x1b[1A\x1b[2K".repeat(above)}`;
  }
}

/** The streams on the terminal that lines on stderr share: stderr, and stdout if a terminal. */
export function terminalStreams(): NodeJS.WriteStream[] {
  return process.stdout.isTTY === true ? [process.stderr, process.stdout] : [process.stderr];
}
