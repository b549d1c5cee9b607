import * as crypto from "node:crypto";
import { describe, expect, it } from "vitest";
import { jobId } from "../../src/graph/jobId.ts";
import { sha256Hex, sha256HexWith } from "../../src/graph/sha256Hex.ts";

const TEXTS = ["", "abc", '["noop",1,[],"0"]', "né → 日本 🎉", "x".repeat(100_000)];

describe("sha256Hex", () => {
  it("gives the SHA-256 of the text's UTF-8 bytes in hex", () => {
    expect(sha256Hex("abc")).toBe(
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
    expect(sha256Hex("né")).toBe(
      crypto.createHash("sha256").update(Buffer.from("né", "utf8")).digest("hex"),
    );
  });

  it("gives the same digest with crypto.hash as with a Hash object (Node before 20.12)", () => {
    const oneCall = sha256HexWith(crypto.hash);
    const hashObject = sha256HexWith(undefined);
    for (const text of TEXTS) expect(oneCall(text)).toBe(hashObject(text));
  });

  it("hashes with the one call it is given", () => {
    const calls: unknown[][] = [];
    const hash = ((...args: unknown[]) => {
      calls.push(args);
      return "digest";
    }) as typeof crypto.hash;
    expect(sha256HexWith(hash)("abc")).toBe("digest");
    expect(calls).toEqual([["sha256", "abc", "hex"]]);
  });

  it("keeps job ids as they were with a Hash object", () => {
    const encoded = JSON.stringify(["fetch", '{"url":"https://example.org"}', [], "1"]);
    expect(sha256HexWith(undefined)(encoded).slice(0, 16)).toBe(
      jobId("fetch", { url: "https://example.org" }, [], "1"),
    );
  });
});
