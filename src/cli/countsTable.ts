/**
 * A table of counts per job kind, kinds in order, then a `total` row: the first column left
 * aligned, the counts right aligned, a rule under the header and another above the totals.
 *
 * @example
 * ```ts
 * countsTable(["completed", "failed"], new Map([["fetch", [16, 0]]]), [16, 0]);
 * // kind   completed  failed
 * // ─────  ─────────  ──────
 * // fetch         16       0
 * // ─────  ─────────  ──────
 * // total         16       0
 * ```
 */
export function countsTable(
  columns: readonly string[],
  byKind: ReadonlyMap<string, readonly number[]>,
  total: readonly number[],
): string[] {
  const header = ["kind", ...columns];
  const rows = [...byKind]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, counts]) => [kind, ...counts.map(String)]);
  const totals = ["total", ...total.map(String)];
  const widths = header.map((h, i) =>
    Math.max(h.length, totals[i]!.length, ...rows.map((r) => r[i]!.length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join("  ");
  const rule = widths.map((w) => "─".repeat(w)).join("  ");
  // A rule above the totals too: a kind may well be called "total".
  return [line(header), rule, ...rows.map(line), rule, line(totals)];
}

/**
 * Counts per job kind for {@link countsTable}: a row of `columns` zeros for each kind, and
 * one added, for each item, to every column `columnsOf(item)` names.
 *
 * @example
 * ```ts
 * countByKind(plan.jobs, (job) => job.kind, 2, (job) => [job.stored ? 0 : 1]);
 * // Map { "fetch" => [16, 0] }
 * ```
 */
export function countByKind<T>(
  items: Iterable<T>,
  kindOf: (item: T) => string,
  columns: number,
  columnsOf: (item: T) => readonly number[],
): Map<string, number[]> {
  const byKind = new Map<string, number[]>();
  for (const item of items) {
    const kind = kindOf(item);
    let row = byKind.get(kind);
    if (!row) {
      row = new Array<number>(columns).fill(0);
      byKind.set(kind, row);
    }
    for (const column of columnsOf(item)) row[column]!++;
  }
  return byKind;
}
