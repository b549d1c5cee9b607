import { closestName } from "../closestName.ts";
import { ConfigError } from "../errors.ts";

/**
 * A command-line flag's value that must be one of `choices` (`--log-level`, `--faults`), as
 * their type; anything else is a `ConfigError` that names the flag, lists the choices, says
 * what it got and, for a typo, which one it meant.
 *
 * @example
 * ```ts
 * choiceFlag("--faults", "heavy", ["none", "default", "heavy"]); // "heavy"
 * choiceFlag("--faults", "hevy", ["none", "default", "heavy"]);
 * // ConfigError: --faults must be one of none, default, heavy, not "hevy"; did you mean heavy?
 * ```
 */
export function choiceFlag<Choice extends string>(
  flag: string,
  value: string,
  choices: readonly Choice[],
): Choice {
  if ((choices as readonly string[]).includes(value)) return value as Choice;
  const meant = closestName(value, choices);
  throw new ConfigError(
    `${flag} must be one of ${choices.join(", ")}, not "${value}"${meant === undefined ? "" : `; did you mean ${meant}?`}`,
  );
}
