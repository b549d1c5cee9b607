/** The longest expression an inline guard is drawn by; a longer one is drawn `inline guard`. */
const MAX_EXPRESSION = 40;

/**
 * What a guard written in place in a machine's config (a function with no name of its own)
 * is drawn as: the expression an arrow function returns, when it has one of at most 40
 * characters (`({ context }) => context.tries > 2` is `context.tries > 2`), else `inline
 * guard`. JavaScript names a function written as a property value after the property
 * (`guard`), which diagrams drew as if it were a guard named `guard`; a function given a name
 * of its own (`function ready() {…}`) is not inline, and gives `undefined`.
 *
 * @example
 * ```ts
 * inlineGuard(({ context }: { context: { n: number } }) => context.n > 2); // "context.n > 2"
 * inlineGuard(function ready() { return true; }); // undefined
 * ```
 */
export function inlineGuard(guard: { readonly name: string }): string | undefined {
  if (guard.name !== "" && guard.name !== "guard") return undefined;
  const arrow = /^(?:async\s*)?(?:\([^()]*\)|[\w$]+)\s*=>\s*(.*)$/s.exec(String(guard));
  const expression = arrow?.[1]?.replace(/\s+/g, " ").trim();
  if (expression === undefined || expression.startsWith("{") || expression.length > MAX_EXPRESSION)
    return "inline guard";
  return expression;
}
