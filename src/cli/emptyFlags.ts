import { ConfigError } from "../errors.ts";

/**
 * Refuses the first of `flags` (names without their dashes) given an empty value, as in
 * `--state-dir "$UNSET"`: a path of "" is the working directory and a name or address of ""
 * none, so the command would go on somewhere nobody asked for. `command` names the
 * command whose `--help` says what the flag takes.
 *
 * @example
 * ```ts
 * emptyFlags("launch", { "state-dir": "" }, ["state-dir", "name"]);
 * // ConfigError: --state-dir is empty: give it a value, or leave it out (baton launch --help says what it takes)
 * ```
 */
export function emptyFlags(
  command: string,
  values: Readonly<Record<string, unknown>>,
  flags: readonly string[],
): void {
  const empty = flags.find((flag) => values[flag] === "");
  if (empty !== undefined) {
    throw new ConfigError(
      `--${empty} is empty: give it a value, or leave it out (baton ${command} --help says what it takes)`,
    );
  }
}
