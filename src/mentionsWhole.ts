/**
 * Whether `text` holds `name` as a whole at least once: where neither the character before it
 * nor the one after it is one `part` of a name may hold. With ids of letters, digits and `-`,
 * `inproc-1` is in "inproc-1 lost" but not in "inproc-10 lost".
 *
 * @example
 * ```ts
 * mentionsWhole("/run/dep-abc/rank-0.marker.json", "dep-abc", /[\w.-]/); // true
 * mentionsWhole("dep-abc2", "dep-abc", /[\w.-]/); // false
 * ```
 */
export function mentionsWhole(text: string, name: string, part: RegExp): boolean {
  for (let at = text.indexOf(name); at !== -1; at = text.indexOf(name, at + 1)) {
    const before = text[at - 1];
    const after = text[at + name.length];
    if (
      (before === undefined || !part.test(before)) &&
      (after === undefined || !part.test(after))
    ) {
      return true;
    }
  }
  return false;
}
