import { describe, expect, it } from "vitest";
import { GraphError } from "../../src/errors.ts";
import { isJsonPrimitive, toJson } from "../../src/graph/toJson.ts";

const WHERE = 'input of job "parse"';

function errorOf(value: unknown): GraphError {
  try {
    toJson(value, WHERE);
  } catch (err) {
    expect(err).toBeInstanceOf(GraphError);
    expect((err as GraphError).code).toBe("NOT_JSON");
    return err as GraphError;
  }
  throw new Error("expected toJson to throw");
}

function messageOf(value: unknown): string {
  return errorOf(value).message;
}

describe("toJson", () => {
  it("returns JSON scalars as they are", () => {
    for (const value of [null, true, false, 0, -1.5, 1e300, "", "text"]) {
      expect(toJson(value, WHERE)).toBe(value);
    }
  });

  it("says which values it returns as they are: isJsonPrimitive", () => {
    for (const value of [null, true, false, 0, -1.5, 1e300, "", "text"]) {
      expect(isJsonPrimitive(value)).toBe(true);
    }
    const walkedOrRefused = [undefined, Number.NaN, Number.POSITIVE_INFINITY, 1n, {}, [], () => 1];
    for (const value of walkedOrRefused) expect(isJsonPrimitive(value)).toBe(false);
  });

  it("copies plain objects and arrays", () => {
    const inner = { b: [1, "x", null] };
    const value = { a: inner, list: [inner, { c: false }] };
    const copy = toJson(value, WHERE);
    expect(copy).toEqual(value);
    expect(copy).not.toBe(value);
    expect((copy as { a: unknown }).a).not.toBe(inner);
  });

  it("accepts a shared, acyclic reference and copies it at each place", () => {
    const shared = { n: 1 };
    expect(toJson([shared, { again: shared }], WHERE)).toEqual([{ n: 1 }, { again: { n: 1 } }]);
  });

  it("accepts objects without a prototype", () => {
    const value = Object.assign(Object.create(null) as object, { a: 1 });
    expect(toJson(value, WHERE)).toEqual({ a: 1 });
  });

  it("drops object properties that are undefined, as JSON.stringify does", () => {
    const copy = toJson({ a: 1, b: undefined, c: { d: undefined } }, WHERE);
    expect(copy).toEqual({ a: 1, c: {} });
    expect(Object.keys(copy as object)).toEqual(["a", "c"]);
  });

  it("keeps a __proto__ key as an own property", () => {
    const value = JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as unknown;
    const copy = toJson(value, WHERE) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(["__proto__", "y"]);
    expect(JSON.stringify(copy)).toBe('{"__proto__":{"x":1},"y":2}');
  });

  it("names where, the path and the problem for a function", () => {
    expect(messageOf({ items: [0, 1, 2, { fn: () => 1 }] })).toBe(
      'The input of job "parse" is not JSON: input.items[3].fn is a function. ' +
        "Inputs and results may hold only null, booleans, finite numbers, strings, arrays " +
        "and plain objects.",
    );
  });

  it("uses the where it is given", () => {
    expect(() => toJson(Symbol("s"), "result of job abc123")).toThrow(
      /^The result of job abc123 is not JSON: the result is a symbol \(Symbol\(s\)\)\./,
    );
  });

  it("quotes keys that are not identifiers", () => {
    expect(messageOf({ "a b": { "": [1n] } })).toMatch(
      /: input\["a b"\]\[""\]\[0\] is a BigInt \(1n\); use a number or a string\./,
    );
  });

  it("rejects undefined at the top level and in arrays, holes included", () => {
    expect(messageOf(undefined)).toMatch(/: the input is undefined; use null for no value\./);
    expect(messageOf({ a: [1, undefined] })).toMatch(/: input\.a\[1\] is undefined;/);
    // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested
    expect(messageOf([1, , 3])).toMatch(/: input\[1\] is undefined;/);
  });

  it("rejects NaN and infinities", () => {
    expect(messageOf({ x: Number.NaN })).toMatch(
      /: input\.x is NaN; JSON has no NaN or Infinity, use null or a string\./,
    );
    expect(messageOf([Number.POSITIVE_INFINITY])).toMatch(/: input\[0\] is Infinity;/);
    expect(messageOf({ y: Number.NEGATIVE_INFINITY })).toMatch(/: input\.y is -Infinity;/);
  });

  it("rejects symbols", () => {
    expect(messageOf({ s: Symbol("tag") })).toMatch(/: input\.s is a symbol \(Symbol\(tag\)\)\./);
  });

  it("names the target of a cyclic reference", () => {
    const a: Record<string, unknown> = { n: 1 };
    a.b = { back: a };
    expect(messageOf({ a })).toMatch(/: input\.a\.b\.back is a cyclic reference to input\.a\./);
    const list: unknown[] = [];
    list.push(list);
    expect(messageOf(list)).toMatch(/: input\[0\] is a cyclic reference to the input\./);
  });

  it("names the constructor of a non-plain object, with a hint when there is one", () => {
    class Point {
      x = 1;
    }
    expect(messageOf({ when: new Date(0) })).toMatch(
      /: input\.when is an instance of Date, not a plain object; convert it first, e\.g\. with date\.toISOString\(\)\./,
    );
    expect(messageOf([new Map()])).toMatch(
      /: input\[0\] is an instance of Map, not a plain object; .*Object\.fromEntries\(map\)/,
    );
    expect(messageOf({ s: new Set() })).toMatch(
      /: input\.s is an instance of Set, .*\[\.\.\.set\]/,
    );
    expect(messageOf({ p: new Point() })).toMatch(
      /: input\.p is an instance of Point, not a plain object\. /,
    );
    expect(messageOf({ b: Buffer.from("x") })).toMatch(
      /: input\.b is an instance of Buffer, not a plain object; .*Array\.from\(bytes\)/,
    );
    expect(messageOf(new Float64Array(2))).toMatch(/: the input is an instance of Float64Array, /);
    expect(messageOf(Object.create({}))).toMatch(
      /: the input is an object with a custom prototype, not a plain object\./,
    );
  });

  it("throws a GraphError that names no job", () => {
    expect(errorOf(() => 1).jobs).toEqual([]);
  });

  // A getter or a Proxy's trap that throws was its bare Error out of engine.run, with nothing
  // saying that baton was reading a job's input (or, from a handler, its result: retried).
  it.each([
    [
      "a getter",
      () => ({
        n: 1,
        deep: [
          {
            get secret(): string {
              throw new Error("no access");
            },
          },
        ],
      }),
      'The input of job "x" could not be read: reading input.deep[0].secret threw Error: no access.',
    ],
    [
      "a Proxy whose trap throws",
      () => ({
        cfg: new Proxy(
          {},
          {
            ownKeys() {
              throw new TypeError("trap says no");
            },
          },
        ),
      }),
      'The input of job "x" could not be read: reading input.cfg threw TypeError: trap says no.',
    ],
    [
      "a revoked Proxy",
      () => {
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
      "The input of job \"x\" could not be read: reading the input threw TypeError: Cannot perform 'IsArray' on a proxy that has been revoked.",
    ],
  ])(
    "names where %s threw while the value was read, as a NOT_JSON GraphError",
    (_, make, message) => {
      let thrown: unknown;
      try {
        toJson(make(), 'input of job "x"');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(GraphError);
      expect(thrown).toMatchObject({ code: "NOT_JSON", retryable: false });
      expect((thrown as Error).message).toContain(message);
      expect((thrown as Error).cause).toBeInstanceOf(Error);
    },
  );
});
