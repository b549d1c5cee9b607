/** What leaves the process through `--inspect`: no secret, no value over 1 KiB. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  INSPECT_VALUE_LIMIT,
  REDACTED,
  sanitizeInspection,
} from "../../src/viz/sanitizeInspection.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

describe("sanitizeInspection", () => {
  it("redacts proofs, nonces and secrets at any depth", () => {
    const event = {
      type: "@xstate.event",
      event: {
        type: "HELLO",
        authentic: true,
        welcomeProof: "c0ffee",
        frame: { type: "hello", worker: "w1", proof: "deadbeef", protocol: [1, 1] },
      },
      snapshot: { context: { nonce: "n-123", run: "r1", nested: [{ secret: "s3" }] } },
    };
    const clean = sanitizeInspection(event);
    const text = JSON.stringify(clean);
    for (const secret of ["c0ffee", "deadbeef", "n-123", "s3"]) expect(text).not.toContain(secret);
    expect(clean.event.frame.worker).toBe("w1");
    expect(clean.event.welcomeProof).toBe(REDACTED);
    expect(clean.snapshot.context.run).toBe("r1");
  });

  it("cuts inputs, results and long strings to the limit, and keeps the definition whole", () => {
    const big = "x".repeat(5000);
    const definition = JSON.stringify({ id: "m", states: { a: { description: big } } });
    const clean = sanitizeInspection({
      type: "@xstate.actor",
      definition,
      event: {
        type: "GRANT",
        frame: { input: { rows: Array.from({ length: 500 }, (_, i) => i) }, kind: "k" },
      },
      snapshot: { context: { note: big }, value: "idle" },
    });
    expect(clean.definition).toBe(definition);
    const input = clean.event.frame.input as unknown as string;
    expect(typeof input).toBe("string");
    expect(input.length).toBeLessThanOrEqual(INSPECT_VALUE_LIMIT);
    expect(input).toMatch(/truncated\)$/);
    expect(clean.snapshot.context.note.length).toBeLessThanOrEqual(INSPECT_VALUE_LIMIT);
    expect(clean.event.frame.kind).toBe("k");
  });

  it("honours toJSON, drops functions and survives cycles", () => {
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    const clean = sanitizeInspection({
      snapshot: { context: { board: { toJSON: () => ({ jobs: 3 }) }, fn: () => 1, cyclic } },
    });
    expect(clean.snapshot.context).toEqual({
      board: { jobs: 3 },
      cyclic: { name: "loop", self: "[circular]" },
    });
  });

  it("leaves no secret value and no oversized payload, whatever the shape (property)", () => {
    const secretKey = fc.constantFrom("secret", "proof", "welcomeProof", "nonce", "token");
    const payloadKey = fc.constantFrom("input", "value", "deps", "error");
    const leaf = fc.oneof(
      fc.string({ maxLength: 3000 }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
    );
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        leaf,
        fc.array(tie("node"), { maxLength: 4 }),
        fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), secretKey, payloadKey), tie("node"), {
          maxKeys: 5,
        }),
      ),
    })).node;
    const details = fc.check(
      fc.property(tree, (value) => {
        const once = sanitizeInspection({ event: value });
        // Idempotent: sanitising what was sent changes nothing.
        expect(sanitizeInspection(once)).toEqual(once);
        const check = (v: unknown, key: string | undefined) => {
          if (key !== undefined && /secret|proof|nonce|token/i.test(key)) {
            expect(v).toBe(REDACTED);
            return;
          }
          if (key !== undefined && ["input", "value", "deps", "error"].includes(key)) {
            expect(JSON.stringify(v).length).toBeLessThanOrEqual(INSPECT_VALUE_LIMIT + 2);
          }
          if (typeof v === "string") expect(v.length).toBeLessThanOrEqual(INSPECT_VALUE_LIMIT);
          if (v && typeof v === "object") {
            for (const [k, inner] of Object.entries(v)) check(inner, k);
          }
        };
        check(once, undefined);
      }),
      propertyParameters(propertyRuns(200)),
    );
    throwIfFailed(details, import.meta.url);
  });
});
