/**
 * Ranks as a message names them: "rank 3", "ranks 0, 2", with each run of three or more in a
 * row as a range ("ranks 0-39", "ranks 0-3, 7, 9-12"), so that a line about a large world
 * stays a line (40 ranks that exited before their marker used to be listed one by one).
 * Sorted, each rank once.
 *
 * @example
 * ```ts
 * rankList([5, 0, 1, 2, 3, 9]); // "ranks 0-3, 5, 9"
 * ```
 */
export function rankList(ranks: readonly number[]): string {
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let start = 0; start < sorted.length; ) {
    let end = start;
    while (end + 1 < sorted.length && sorted[end + 1] === sorted[end]! + 1) end++;
    if (end - start >= 2) parts.push(`${sorted[start]}-${sorted[end]}`);
    else for (let at = start; at <= end; at++) parts.push(String(sorted[at]));
    start = end + 1;
  }
  return `${sorted.length === 1 ? "rank" : "ranks"} ${parts.join(", ")}`;
}
