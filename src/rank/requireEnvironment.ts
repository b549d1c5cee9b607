import { argumentError } from "../argumentError.ts";

/** What a value is, said without showing it: an environment's values may be secrets. */
function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * Refuses, with {@link argumentError}'s `ConfigError`, an environment (`name`, of `where`)
 * that is no object of text: a `KEY=value` string or a list of them, which was read as no
 * environment, or a variable whose value is no string, which failed deep inside (`The first
 * argument must be of type string`). Neither the environment nor a value is ever shown, only
 * what it is, and the variable's name: an environment holds secrets. With `unset`, a variable
 * may also be undefined, as `process.env`'s type allows (`readRankEnv`).
 *
 * @example
 * ```ts
 * requireEnvironment("spawnRemoteRank", "env", { RANK: 1 }, "the rank's variables, { RANK: \"1\", … }");
 * // ConfigError: spawnRemoteRank: env.RANK must be text, as every variable's value is, not a number
 * ```
 */
export function requireEnvironment(
  where: string,
  name: string,
  value: unknown,
  what: string,
  unset = false,
): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw argumentError(where, name, what, value, kindOf(value));
  }
  for (const [variable, text] of Object.entries(value)) {
    if (typeof text !== "string" && !(unset && text === undefined)) {
      throw argumentError(
        where,
        `${name}.${variable}`,
        unset ? "text, or undefined for a variable unset" : "text, as every variable's value is",
        text,
        kindOf(text),
      );
    }
  }
}
