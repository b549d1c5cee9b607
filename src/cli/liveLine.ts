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

  constructor(private readonly out: NodeJS.WriteStream) {}

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
    const erase = this.erase();
    this.shown = shown;
    this.out.write(`${erase}${shown}`);
  }

  /** Writes `text` (whole lines) above the live lines, then draws them again. */
  print(text: string): void {
    const shown = this.shown;
    this.clear();
    this.out.write(text);
    if (shown !== "") this.draw(shown);
  }

  clear(): void {
    if (this.shown !== "") this.out.write(this.erase());
    this.shown = "";
  }

  /** Erases the lines shown, from the last up, leaving the cursor where the first began. */
  private erase(): string {
    const above = this.shown.split("\n").length - 1;
    return `\r\x1b[2K${"\x1b[1A\x1b[2K".repeat(above)}`;
  }
}
