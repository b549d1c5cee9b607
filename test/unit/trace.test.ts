/**
 * A trace's hash is the SHA-256 of every event line followed by a newline, notes left out (the
 * first 16 hex digits): the hash of each seed's trace depends on exactly those bytes.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Trace } from "../../src/sim/trace.ts";

const sha = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);

describe("Trace", () => {
  it("hashes each event line and a newline, without the notes", () => {
    let now = 0;
    const trace = new Trace(() => now);
    trace.add("start coordinator-0");
    now = 7;
    trace.note("why the next line waited");
    trace.add("grant 2e59 to sim:1 attempt 1");
    expect(trace.lines).toEqual([
      "0 start coordinator-0",
      "7 # why the next line waited",
      "7 grant 2e59 to sim:1 attempt 1",
    ]);
    expect(trace.hash).toBe(sha("0 start coordinator-0\n7 grant 2e59 to sim:1 attempt 1\n"));
  });

  it("hashes an empty trace, and one of notes alone, as no bytes", () => {
    expect(new Trace(() => 0).hash).toBe(sha(""));
    const notes = new Trace(() => 0);
    notes.note("only a note");
    expect(notes.hash).toBe(sha(""));
  });

  it("closes at its first hash: later lines are not recorded", () => {
    const trace = new Trace(() => 0);
    trace.add("a");
    const hash = trace.hash;
    trace.add("b");
    expect(trace.lines).toEqual(["0 a"]);
    expect(trace.hash).toBe(hash);
  });
});
