/**
 * One line at the bottom of a terminal, redrawn in place (stderr): the progress bar of
 * `baton run`, the group status of `baton launch`. Lines printed through `print` go above it.
 *
 * @example
 * ```ts
 * const line = new LiveLine(process.stderr);
 * line.draw("3/10 done");
 * line.print("a job failed\n"); // above the live line, which is drawn again
 * line.clear();
 * ```
 */
export class LiveLine {
  /** What is on the line now ("" when nothing). */
  private shown = "";

  constructor(private readonly out: NodeJS.WriteStream) {}

  draw(line: string): void {
    // A terminal that reports no size (0 columns, as under script(1)) is not cut to nothing.
    const columns = this.out.columns || 120;
    const shown = line.slice(0, columns - 1);
    // A group's teardown steps redraw `baton launch`'s line, often with the same text.
    if (shown === this.shown) return;
    this.shown = shown;
    this.out.write(`\r\x1b[2K${shown}`);
  }

  /** Writes `text` (whole lines) above the live line, then draws the line again. */
  print(text: string): void {
    const shown = this.shown;
    this.clear();
    this.out.write(text);
    if (shown !== "") this.draw(shown);
  }

  clear(): void {
    if (this.shown !== "") this.out.write("\r\x1b[2K");
    this.shown = "";
  }
}
