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
  switch (typeof value) {
    case "string":
      return quoted(value);
    // What JSON.stringify prints for a number (`-0` as `0`, NaN and ±Infinity as null).
    case "number":
      return Number.isFinite(value) ? `${value}` : "null";
    case "boolean":
      return value ? "true" : "false";
    case "object":
      if (value === null) return "null";
      return Array.isArray(value) ? canonicalArray(value) : canonicalObject(value);
    default:
      return JSON.stringify(value);
  }
}

function canonicalArray(value: readonly Json[]): string {
  let out = "[";
  for (let i = 0; i < value.length; i++) {
    if (i > 0) out += ",";
    out += canonicalJson(value[i]!);
  }
  return `${out}]`;
}

/** Keys written in order already (most objects a graph makes) are not sorted again. */
function canonicalObject(value: { readonly [key: string]: Json }): string {
  const keys = Object.keys(value);
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      keys.sort();
      break;
    }
  }
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out += ",";
    const key = keys[i]!;
    out += `${quoted(key)}:${canonicalJson(value[key]!)}`;
  }
  return `${out}}`;
}

/** What JSON.stringify escapes in a string: a quote, a backslash, a control character, a surrogate. */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify(text)`, which for a string with nothing to escape (keys, ids, most values) is
 * the string in quotes. With numbers and booleans printed here too and keys sorted only when
 * out of order, a seed's values (job inputs, results, store entries) encode in about half the
 * time of a `JSON.stringify` per key and leaf (a simulated seed made 3,300 such calls).
 */
function quoted(text: string): string {
  return ESCAPED.test(text) ? JSON.stringify(text) : `"${text}"`;
}
