/**
 * `kind` followed by a short preview of the input, unless the input is null: how messages,
 * and a simulation's trace of your own graph, name a job.
 *
 * @example
 * ```ts
 * label({ kind: "fetch", input: { doc: 3 } }); // 'fetch {"doc":3}'
 * ```
 */
export function label(job: { kind: string; input: unknown }): string {
  return job.input === null || job.input === undefined
    ? job.kind
    : `${job.kind} ${preview(job.input)}`;
}

/** A short, single-line rendering of any value, for messages. */
export function preview(value: unknown): string {
  let text: string;
  if (typeof value === "string") text = JSON.stringify(value);
  else if (typeof value === "function") text = "a function";
  else if (typeof value !== "object" || value === null) text = String(value);
  else {
    try {
      text = JSON.stringify(value) ?? Object.prototype.toString.call(value);
    } catch {
      text = Object.prototype.toString.call(value);
    }
  }
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}
