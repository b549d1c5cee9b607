/**
 * The exports a module's author wrote, read as a graph module (`"graph"`) or a job module
 * (`"jobs"`). An ES module's are its namespace. A CommonJS module's `module.exports` reaches
 * `import()` as the namespace's default export (beside copies of the properties Node finds by
 * reading its source), so `exports.default = [job(…)]`, `module.exports = { jobs, default: […] }`
 * or `module.exports = { graph, jobs }` would be a default export that is no graph. An object
 * default export holding such exports is taken as the module's exports; which objects do
 * depends on what the module is loaded as, since a job module's `module.exports` is its
 * handlers, and a kind may be named `default`, `graph` or `jobs`:
 * - as a graph module, an object (not a job) with a `default`, `graph` or `jobs` of its own
 *   (a job module given as the graph is then still told that it is no graph);
 * - as a job module, an object whose `jobs` is a job module, whose `default` is a job module
 *   or a graph, or whose `graph` is a graph: a kind's handler is a function or a definition
 *   (`{ run }`, `{ ranks }`), neither of which is a job module or a graph.
 * An ES module's `export default { graph, jobs }` reads the same.
 *
 * @example
 * ```ts
 * // exports.default = [job("double", 1)]; exports.jobs = { double: (n) => n * 2 };
 * const exported = commonJsExports(await importUserModule("graph.cjs"), "graph");
 * exported.default; // [job("double", 1)]
 * ```
 */
export function commonJsExports(
  namespace: Record<string, unknown>,
  purpose: "graph" | "jobs",
): Record<string, unknown> {
  const whole = namespace.default;
  if (!isObject(whole) || Array.isArray(whole) || isJob(whole)) return namespace;
  const holdsExports =
    purpose === "graph"
      ? ["default", "graph", "jobs"].some((key) => Object.hasOwn(whole, key))
      : isJobModule(whole.jobs) ||
        isJobModule(whole.default) ||
        isGraph(whole.default) ||
        isGraph(whole.graph);
  if (!holdsExports) return namespace;
  const { default: _, ...named } = namespace;
  return { ...named, ...whole };
}

/** A graph as a module exports it: a list of jobs, or one job. */
export function isGraph(value: unknown): boolean {
  return Array.isArray(value) || (isObject(value) && isJob(value));
}

/** An object of handlers: neither a graph nor one kind's definition (`{ run }`, `{ ranks }`). */
function isJobModule(value: unknown): boolean {
  return (
    isObject(value) &&
    !Array.isArray(value) &&
    !isJob(value) &&
    typeof value.run !== "function" &&
    typeof value.ranks !== "function"
  );
}

/** A job (`job(kind, input, options)`, or one written by hand): it has a `kind`. */
function isJob(value: Record<string, unknown>): boolean {
  return "kind" in value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
