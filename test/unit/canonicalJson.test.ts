import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/graph/canonicalJson.ts";
import type { Json } from "../../src/graph/job.ts";

describe("canonicalJson", () => {
  it("sorts keys recursively and prints no whitespace", () => {
    expect(canonicalJson({ b: [1, { d: 2, c: 3 }], a: "x" })).toBe(
      '{"a":"x","b":[1,{"c":3,"d":2}]}',
    );
  });

  it("keeps the order of arrays", () => {
    expect(canonicalJson([3, 1, 2, [], {}])).toBe("[3,1,2,[],{}]");
  });

  it("prints scalars as JSON.stringify does", () => {
    const strings = ["\ud800", "a\udfffb", "\u0000\u001f\u007f", "é\t"];
    for (const value of [
      null,
      true,
      false,
      0,
      -0,
      0.1,
      1e21,
      -1.5e-7,
      "",
      'a"\\\n\u2028😀',
      ...strings,
    ]) {
      expect(canonicalJson(value)).toBe(JSON.stringify(value));
    }
  });

  it("sorts keys by UTF-16 code units", () => {
    expect(canonicalJson({ b: 1, a: 2, B: 3, "😀": 4, "\u00e9": 5, "10": 6, "9": 7 })).toBe(
      '{"10":6,"9":7,"B":3,"a":2,"b":1,"é":5,"😀":4}',
    );
  });

  it("does not depend on the order keys were written in", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const reversed = JSON.parse(JSON.stringify(value), (_key, v: unknown) =>
          v !== null && typeof v === "object" && !Array.isArray(v)
            ? Object.fromEntries(Object.entries(v).reverse())
            : v,
        ) as Json;
        expect(canonicalJson(reversed)).toBe(canonicalJson(value as Json));
      }),
    );
  });

  it("gives the bytes of a plain encoder, keys sorted and each part JSON.stringify's, for any UTF-16 text", () => {
    const plain = (value: Json): string => {
      if (typeof value !== "object" || value === null) return JSON.stringify(value);
      if (Array.isArray(value)) return `[${value.map(plain).join(",")}]`;
      const keys = Object.keys(value).sort();
      return `{${keys.map((key) => `${JSON.stringify(key)}:${plain(value[key]!)}`).join(",")}}`;
    };
    // Any UTF-16 code unit: lone surrogates, control characters, quotes and backslashes too.
    const text = fc.string({
      unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
    });
    const value = fc.letrec((tie) => ({
      json: fc.oneof(
        { depthSize: "small" },
        text,
        fc.double(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie("json")),
        fc.dictionary(text, tie("json")),
      ),
    })).json as fc.Arbitrary<Json>;
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(plain(v));
      }),
      { numRuns: 2_000 },
    );
  });

  it("is valid JSON for the same value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value as Json))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });
});
