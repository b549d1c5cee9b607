/**
 * The one of `names` that `name` is most likely a typo of, for a "did you mean" in an error:
 * the same name in another case (`failfast`), or one within an edit or two, a swap of two
 * neighbouring letters counting as one (`retires`, `prot`, `loadTimeout`); one edit at most
 * for names of four letters or fewer, so that a short name is not matched to any other. The
 * first of the closest, or `undefined` when none is that close.
 *
 * @example
 * ```ts
 * closestName("failfast", ["jobs", "failFast", "force"]); // "failFast"
 * closestName("retires", ["after", "retries"]); // "retries"
 * closestName("colour", ["jobs", "workers"]); // undefined
 * ```
 */
export function closestName(name: string, names: Iterable<string>): string | undefined {
  const lower = name.toLowerCase();
  const most = name.length <= 4 ? 1 : 2;
  let closest: string | undefined;
  let closestDistance = most + 1;
  for (const candidate of names) {
    if (candidate === name) continue;
    const distance =
      candidate.toLowerCase() === lower ? 0 : editDistance(lower, candidate.toLowerCase());
    if (distance < closestDistance) {
      closest = candidate;
      closestDistance = distance;
    }
  }
  return closest;
}

/** Edits (insert, delete, replace, swap of neighbours) from `a` to `b`: optimal string alignment. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, before[j - 2]! + 1);
      }
      current.push(distance);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The end of an error message for a likely typo: `; did you mean X?`, with X the
 * `closestName` of `name` among `names` as `show` writes it, or `""` when none is close.
 *
 * @example
 * ```ts
 * `unknown job kind "doubel"${didYouMean("doubel", ["double"], (kind) => `"${kind}"`)}`;
 * // 'unknown job kind "doubel"; did you mean "double"?'
 * ```
 */
export function didYouMean(
  name: string,
  names: Iterable<string>,
  show: (meant: string) => string = (meant) => meant,
): string {
  const meant = closestName(name, names);
  return meant === undefined ? "" : `; did you mean ${show(meant)}?`;
}

/**
 * The end of an error message naming several unknown names: `; did you mean X?` for one, or
 * `; did you mean X for Y, …?` for each of several that is close to one of `names`, with X and
 * Y as `show` writes them; `""` when none is close. One message for a graph's unknown job
 * kinds (`planGraph`) and for those a simulation's handlers lack (`simulate`).
 *
 * @example
 * ```ts
 * didYouMeanEach(["sqaure"], ["square", "sum"], (kind) => `"${kind}"`); // '; did you mean "square"?'
 * didYouMeanEach(["sqaure", "smu"], ["square", "sum"]); // "; did you mean square for sqaure, sum for smu?"
 * ```
 */
export function didYouMeanEach(
  unknown: readonly string[],
  names: readonly string[],
  show: (name: string) => string = (name) => name,
): string {
  const meant = unknown.flatMap((name) => {
    const close = closestName(name, names);
    return close === undefined ? [] : [{ name, close }];
  });
  if (meant.length === 0) return "";
  if (unknown.length === 1) return `; did you mean ${show(meant[0]!.close)}?`;
  return `; did you mean ${meant.map(({ name, close }) => `${show(close)} for ${show(name)}`).join(", ")}?`;
}
