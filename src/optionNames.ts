import { didYouMean } from "./closestName.ts";
import { ConfigError } from "./errors.ts";

/** How `checkOptionNames` words its refusals, and what it throws. */
export interface OptionNamesWording {
  /** What the options look like (`{ jobs, workers, … }`), said of a value that is no object. */
  shape: string;
  /** Said after the list of names, of a name given where it does not belong. */
  hint?: ((name: string) => string) | undefined;
  /** The error thrown (default: a `ConfigError`). */
  fail?: ((message: string) => Error) | undefined;
}

/**
 * Refuses options, as JavaScript can pass them, that are not an object (`null`, a string, an
 * array: each used to end in a TypeError from inside baton) and a name that `known` does not
 * have (a typo such as `failfast` was ignored without a word), with a message naming `where`,
 * the name, every name it takes and, for a likely typo, the one meant (`closestName`).
 *
 * @example
 * ```ts
 * checkOptionNames("createEngine", { jobs, failfast: true }, ENGINE_OPTIONS, { shape: "{ jobs, workers, … }" });
 * // ConfigError: createEngine: unknown option failfast; it takes jobs, workers, …; did you mean failFast?
 * ```
 */
export function checkOptionNames(
  where: string,
  options: unknown,
  known: object,
  wording: OptionNamesWording,
): void {
  const fail = wording.fail ?? ((message: string) => new ConfigError(message));
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw fail(
      `${where}: the options must be an object, ${wording.shape}, not ${Array.isArray(options) ? "an array" : typeof options === "string" ? JSON.stringify(options) : String(options)}`,
    );
  }
  for (const name of Object.keys(options)) {
    if (!Object.hasOwn(known, name)) {
      throw fail(
        `${where}: unknown option ${name}; it takes ${Object.keys(known).join(", ")}${wording.hint?.(name) ?? ""}${didYouMean(name, Object.keys(known))}`,
      );
    }
  }
}
