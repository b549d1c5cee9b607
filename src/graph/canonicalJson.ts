import type { Json } from "./job.ts";

/**
 * Renders a JSON value as one canonical string: object keys sorted recursively (by UTF-16
 * code units, the order of RFC 8785), no whitespace, strings and numbers exactly as
 * `JSON.stringify` prints them (so `-0` is `0`). Two values that are equal as JSON give
 * the same string whatever the order their keys were written in.
 *
 * @example
 * ```ts
 * canonicalJson({ b: [1, { d: 2, c: 3 }], a: "x" }); // '{"a":"x","b":[1,{"c":3,"d":2}]}'
 * ```
 */
export function canonicalJson(value: Json): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      out += canonicalJson(value[i]!);
    }
    return `${out}]`;
  }
  let out = "{";
  for (const key of Object.keys(value).sort()) {
    if (out.length > 1) out += ",";
    out += `${JSON.stringify(key)}:${canonicalJson(value[key]!)}`;
  }
  return `${out}}`;
}
