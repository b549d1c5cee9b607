import { ConfigError } from "./errors.ts";
import { preview } from "./graph/label.ts";

/**
 * The `ConfigError` for a public function given, as a JavaScript caller may, an argument it
 * cannot take: it names the function, the argument, what it takes and what it got, where the
 * caller met a TypeError from deep inside (`text.trim is not a function`) or a NaN. `shown`
 * says what it got where the value itself must not be shown (an environment holds secrets).
 *
 * @example
 * ```ts
 * if (typeof text !== "string") throw argumentError("parseFaults", "its fault list", 'text such as "partition@5000:0+20000"', text);
 * // ConfigError: parseFaults: its fault list must be text such as "partition@5000:0+20000", not 5
 * ```
 */
export function argumentError(
  where: string,
  name: string,
  what: string,
  value: unknown,
  shown = preview(value),
): ConfigError {
  return new ConfigError(`${where}: ${name} must be ${what}, not ${shown}`);
}
