import type { RunResult } from "../runtime/run.ts";
import { formatDuration } from "./progressBar.ts";

/**
 * The end-of-run summary: one row per job kind with counts, then every failure with its
 * cause (a run with many failures lists the first 20).
 *
 * @example
 * ```ts
 * process.stderr.write(summaryTable(await run));
 * ```
 */
export function summaryTable(result: RunResult): string {
  const byKind = new Map<
    string,
    { completed: number; failed: number; skipped: number; cancelled: number; cached: number }
  >();
  for (const outcome of result.jobs.values()) {
    let row = byKind.get(outcome.kind);
    if (!row) {
      row = { completed: 0, failed: 0, skipped: 0, cancelled: 0, cached: 0 };
      byKind.set(outcome.kind, row);
    }
    row[outcome.status]++;
    if (outcome.cached) row.cached++;
  }
  const header = ["kind", "completed", "failed", "skipped", "cancelled", "cached"];
  const rows = [...byKind]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, r]) => [
      kind,
      String(r.completed),
      String(r.failed),
      String(r.skipped),
      String(r.cancelled),
      String(r.cached),
    ]);
  const c = result.counts;
  rows.push([
    "total",
    String(c.completed),
    String(c.failed),
    String(c.skipped),
    String(c.cancelled),
    String(c.cached),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join("  ");
  const out = [line(header), widths.map((w) => "─".repeat(w)).join("  "), ...rows.map(line)];
  const failures = [...result.jobs.values()].filter((o) => o.status === "failed");
  for (const o of failures.slice(0, 20)) {
    out.push(
      `✗ ${o.kind} ${o.id} (${o.cause ?? "error"}, ${o.attempts} attempt${o.attempts === 1 ? "" : "s"}): ${o.error?.message ?? ""}`,
    );
  }
  if (failures.length > 20)
    out.push(`… and ${failures.length - 20} more failures (use --json for all)`);
  if (c.cached > 0) {
    out.push(`${c.cached} results reused from the store (--force recomputes them)`);
  }
  const verdict = result.ok ? "✓ every job completed" : "✗ the run did not complete";
  out.push(`${verdict} in ${formatDuration(result.durationMs)}`);
  return `${out.join("\n")}\n`;
}
