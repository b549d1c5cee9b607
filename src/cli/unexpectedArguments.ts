import { shellLine } from "../runtime/shellQuote.ts";

/**
 * How a refusal names arguments a command does not take: each as the shell reads it back
 * (`'more x'` quoted), so that the user sees which ones, and where one with spaces was split.
 *
 * @example
 * ```ts
 * unexpectedArguments(["extra", "more x"]); // "unexpected arguments extra, 'more x'"
 * ```
 */
export function unexpectedArguments(strays: readonly string[]): string {
  const arguments_ = strays.length === 1 ? "argument" : "arguments";
  return `unexpected ${arguments_} ${strays.map((stray) => shellLine([stray])).join(", ")}`;
}
