/**
 * Where `error` was thrown in the user's code (its first stack frame outside Node and baton),
 * as ` (at FILE:LINE:COLUMN)`, or `""` when no frame is.
 *
 * @example
 * ```ts
 * whereThrown(new TypeError("x is undefined")); // " (at /home/me/sim.ts:3:27)"
 * ```
 */
export function whereThrown(error: unknown): string {
  const at = thrownAt(error);
  return at === undefined ? "" : ` (at ${at})`;
}

/**
 * The `FILE:LINE:COLUMN` of `error`'s first stack frame outside Node and baton, or `undefined`.
 *
 * @example
 * ```ts
 * thrownAt(new TypeError("x is undefined")); // "/home/me/sim.ts:3:27"
 * ```
 */
export function thrownAt(error: unknown): string | undefined {
  const frames = ((error as Error)?.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line));
  const user = frames.find((line) => !/node:|node_modules|\/src\/cli\//.test(line));
  const at = user?.trim().replace(/^at (?:.* \()?(.*?)\)?$/, "$1");
  return at || undefined;
}
