import type { JobProgressEvent } from "../runtime/run.ts";
import { readGroupProgress } from "../viz/groupProgress.ts";
import { groupStatusLine } from "./groupStatusLine.ts";

/** The most running jobs whose reports are shown, each on a line of its own. */
export const MAX_SHOWN = 3;

/** A running job's last report, and when it first reported (a rank group's time since launch). */
interface Report {
  event: JobProgressEvent;
  firstAt: number;
}

/**
 * What running handlers report with `ctx.progress`, as lines under `baton run`'s progress
 * bar: a line for each of the first three jobs still running that reported (in the order
 * they first did), `kind id: done/total · message`, then how many more report. A rank job's
 * report (its group, `readGroupProgress`) is the line `baton launch` shows for it. A job's
 * line goes once `ended` says it left `running` (completed, failed, back to ready when its
 * worker was lost, blocked on `ctx.need`).
 *
 * @example
 * ```ts
 * const lines = new JobProgressLines();
 * lines.report({ id: "3f2a9c1d0b7e4a56", kind: "fetch", worker: "local-1", done: 2, total: 5, message: "page 2" }, Date.now());
 * lines.lines(Date.now()); // ["  fetch 3f2a9c1d0b7e4a56: 2/5 · page 2"]
 * lines.ended("3f2a9c1d0b7e4a56");
 * ```
 */
export class JobProgressLines {
  private readonly reports = new Map<string, Report>();

  report(event: JobProgressEvent, now: number): void {
    const firstAt = this.reports.get(event.id)?.firstAt ?? now;
    this.reports.set(event.id, { event, firstAt });
  }

  ended(id: string): void {
    this.reports.delete(id);
  }

  lines(now: number): string[] {
    const lines = [...this.reports.values()]
      .slice(0, MAX_SHOWN)
      .map(({ event, firstAt }) => `  ${event.kind} ${event.id}: ${said(event, now - firstAt)}`);
    const more = this.reports.size - MAX_SHOWN;
    if (more > 0) lines.push(`  … and ${more} more job${more === 1 ? "" : "s"} reporting progress`);
    return lines;
  }
}

/** What one report says: a rank group's status, or done/total and the message on one line. */
function said({ done, total, message }: JobProgressEvent, sinceFirstMs: number): string {
  const group = readGroupProgress(message);
  if (group) return groupStatusLine(group, sinceFirstMs);
  const count = done === undefined ? [] : [total === undefined ? `${done}` : `${done}/${total}`];
  // A message of many lines, or with a terminal's control characters, stays on its line.
  const text = message?.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  return [...count, ...(text ? [text] : [])].join(" · ") || "running";
}
