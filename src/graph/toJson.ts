import { GraphError } from "../errors.ts";
import type { Json } from "./job.ts";

/** State of one walk: the key taken at each depth and the container at each depth. */
interface Walk {
  readonly where: string;
  readonly keys: (string | number)[];
  readonly parents: object[];
  readonly onPath: Set<object>;
}

/**
 * The deepest nesting of arrays and objects taken. Far past any real input, and far below
 * the stack that the recursive steps after this one (ids, canonical JSON, frames) need: a
 * 20,000-deep array used to end in a RangeError from the middle of planning.
 */
const MAX_DEPTH = 1_000;

/** How to turn common non-JSON objects into JSON, by constructor name. */
const HINTS: Readonly<Record<string, string>> = {
  Date: "convert it first, e.g. with date.toISOString()",
  Map: "convert it first, e.g. with Object.fromEntries(map)",
  Set: "convert it first, e.g. with [...set]",
};

/**
 * Checks that a value is JSON and returns a copy of it made of plain objects and arrays.
 * One recursive walk, no `JSON.stringify` round-trip, so it is cheap enough for every
 * input and every handler result.
 *
 * Accepted: `null`, booleans, finite numbers, strings, arrays and plain objects (prototype
 * `Object.prototype` or `null`). Object properties whose value is `undefined` are dropped,
 * as `JSON.stringify` does; own symbol keys are ignored. Anything else throws a
 * `GraphError` with code `NOT_JSON` naming `where`, the path inside the value and what is
 * wrong there: a function, a BigInt, a symbol, `undefined` at the top level or in an array
 * (holes included), NaN or ±Infinity, a cyclic reference, or a non-plain object (Date,
 * Map, Set, Buffer, typed array, class instance), named by its constructor, or nesting
 * deeper than 1,000 levels, or a value whose reading throws (a getter, a Proxy's trap),
 * named where it threw, with what it threw as the error's `cause`. A shared but acyclic
 * reference is fine: it is copied at each place it appears.
 *
 * @param where - what the value is, as a lowercase noun phrase, e.g. `input of job "parse"`,
 *   whose first word starts the paths: `input.items[0].fn`, or "the input" for the whole value
 *   (which read `$`, a JSONPath a new user did not know).
 *
 * @example
 * ```ts
 * toJson({ n: 1, skip: undefined }, 'input of job "parse"'); // { n: 1 }
 * toJson({ items: [{ fn: () => 1 }] }, 'input of job "parse"');
 * // GraphError NOT_JSON: The input of job "parse" is not JSON: input.items[0].fn is a function. …
 * ```
 */
export function toJson(value: unknown, where: string): Json {
  if (value === undefined) {
    throw notJson(where, pathOf(rootOf(where), [], 0), "is undefined; use null for no value");
  }
  // A JSON primitive is itself, without the walk (a worker checks every result it sends).
  if (isJsonPrimitive(value)) return value;
  try {
    return copy(value, { where, keys: [], parents: [], onPath: new Set() }, 0);
  } catch (error) {
    // Only a value that is not what it seems gets here: a getter or a Proxy's trap threw.
    if (error instanceof GraphError) throw error;
    throw unreadable(value, where, error);
  }
}

/**
 * The `NOT_JSON` error for a value whose reading threw (a getter, a Proxy's trap, a revoked
 * Proxy), naming where, found by a second, careful walk: what threw was a bare `Error` or
 * `TypeError` from the caller's own code, with nothing to say it was baton reading an input or
 * a result. The walk runs only once reading failed, so a value that reads costs nothing more.
 */
function unreadable(value: unknown, where: string, error: unknown): GraphError {
  const root = rootOf(where);
  const at = throwingPath(value, root, [], new Set()) ?? pathOf(root, [], 0);
  const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return new GraphError(
    "NOT_JSON",
    `The ${where} could not be read: reading ${at} threw ${what}. Inputs and results are copied as plain data: give values, not getters or proxies.`,
    [],
    { cause: error },
  );
}

/** The path of the first property (or prototype, or key list) of `value` whose reading throws. */
function throwingPath(
  value: unknown,
  root: string,
  keys: (string | number)[],
  seen: Set<object>,
): string | undefined {
  if (typeof value !== "object" || value === null || seen.has(value) || keys.length > MAX_DEPTH) {
    return undefined;
  }
  seen.add(value);
  let names: string[];
  let array: boolean;
  try {
    array = Array.isArray(value);
    if (!array && !isPlainObject(value)) return undefined;
    names = Object.keys(value);
  } catch {
    return pathOf(root, keys, keys.length);
  }
  for (const name of names) {
    keys.push(array ? Number(name) : name);
    let item: unknown;
    try {
      item = (value as Record<string, unknown>)[name];
    } catch {
      return pathOf(root, keys, keys.length);
    }
    const found = throwingPath(item, root, keys, seen);
    if (found !== undefined) return found;
    keys.pop();
  }
  return undefined;
}

/**
 * Whether `value` is a JSON primitive (`null`, a string, a boolean or a finite number), which
 * {@link toJson} returns as it is: a caller whose `where` costs a string to build (a job's id
 * in it) asks this first and builds it only for a value `toJson` walks.
 *
 * @example
 * ```ts
 * isJsonPrimitive(3); // true
 * isJsonPrimitive(Number.NaN); // false: toJson refuses it
 * isJsonPrimitive({ n: 1 }); // false: toJson copies it
 * ```
 */
export function isJsonPrimitive(value: unknown): value is string | number | boolean | null {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  return typeof value === "number" && Number.isFinite(value);
}

function copy(value: unknown, walk: Walk, depth: number): Json {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (Number.isFinite(value)) return value;
      throw fail(walk, depth, `is ${value}; JSON has no NaN or Infinity, use null or a string`);
    case "object":
      return value === null ? null : copyObject(value, walk, depth);
    case "undefined":
      throw fail(walk, depth, "is undefined; use null for no value");
    case "bigint":
      throw fail(walk, depth, `is a BigInt (${value}n); use a number or a string`);
    case "symbol":
      throw fail(walk, depth, `is a symbol (${value.toString()})`);
    case "function":
      throw fail(walk, depth, "is a function");
  }
}

function copyObject(value: object, walk: Walk, depth: number): Json {
  if (depth === MAX_DEPTH) {
    throw new GraphError(
      "NOT_JSON",
      `The ${walk.where} nests arrays and objects deeper than ${MAX_DEPTH} levels (at ${walkPath(walk, 3)}…), which baton does not take: every step that reads it recurses. Flatten it, or pass the data by reference, such as the path of a file that holds it.`,
    );
  }
  if (walk.onPath.has(value)) {
    const target = walkPath(walk, walk.parents.lastIndexOf(value, depth - 1));
    throw fail(walk, depth, `is a cyclic reference to ${target}`);
  }
  const array = Array.isArray(value);
  if (!array && !isPlainObject(value)) {
    throw fail(walk, depth, nonPlain(value));
  }
  walk.parents[depth] = value;
  walk.onPath.add(value);
  const out = array ? copyArray(value, walk, depth) : copyProperties(value, walk, depth);
  walk.onPath.delete(value);
  return out;
}

function copyArray(value: readonly unknown[], walk: Walk, depth: number): Json[] {
  const out: Json[] = [];
  for (let i = 0; i < value.length; i++) {
    walk.keys[depth] = i;
    out.push(copy(value[i], walk, depth + 1));
  }
  return out;
}

function copyProperties(value: object, walk: Walk, depth: number): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  for (const key of Object.keys(value)) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined) continue;
    walk.keys[depth] = key;
    const json = copy(item, walk, depth + 1);
    if (key === "__proto__") {
      Object.defineProperty(out, key, {
        value: json,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      out[key] = json;
    }
  }
  return out;
}

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype;
}

function nonPlain(value: object): string {
  const proto = Object.getPrototypeOf(value) as { constructor?: unknown };
  const ctor = Object.hasOwn(proto, "constructor") ? proto.constructor : undefined;
  const name = typeof ctor === "function" && ctor.name !== "" ? ctor.name : undefined;
  if (name === undefined) return "is an object with a custom prototype, not a plain object";
  const hint = ArrayBuffer.isView(value)
    ? "convert it first, e.g. with Array.from(bytes) or a base64 string"
    : HINTS[name];
  return `is an instance of ${name}, not a plain object${hint === undefined ? "" : `; ${hint}`}`;
}

function fail(walk: Walk, depth: number, what: string): GraphError {
  return notJson(walk.where, walkPath(walk, depth), what);
}

/**
 * The path of the walk's first `depth` keys. Its root is found from `where` only here, once
 * something is wrong: splitting `where` for every value copied (each result a worker sends)
 * cost about 1 µs a call, 0.3 % of a simulated seed.
 */
function walkPath(walk: Walk, depth: number): string {
  return pathOf(rootOf(walk.where), walk.keys, depth);
}

function notJson(where: string, path: string, what: string): GraphError {
  return new GraphError(
    "NOT_JSON",
    `The ${where} is not JSON: ${path} ${what}. ` +
      "Inputs and results may hold only null, booleans, finite numbers, strings, arrays " +
      "and plain objects.",
  );
}

/** What the paths of the value `where` names start from: its first word. */
function rootOf(where: string): string {
  return where.split(" ", 1)[0]!;
}

/**
 * Renders the first `depth` keys as a path from `root`: `input.items[3].fn`, `input["a b"]`,
 * or, with none, the whole value: `the input`.
 */
function pathOf(root: string, keys: readonly (string | number)[], depth: number): string {
  if (depth === 0) return `the ${root}`;
  let path = root;
  for (let i = 0; i < depth; i++) {
    const key = keys[i];
    if (typeof key === "number") path += `[${key}]`;
    else if (key !== undefined && /^[A-Za-z_$][\w$]*$/.test(key)) path += `.${key}`;
    else path += `[${JSON.stringify(key)}]`;
  }
  return path;
}
