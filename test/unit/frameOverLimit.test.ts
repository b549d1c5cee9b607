import { describe, expect, it } from "vitest";
import { frameOverLimit } from "../../src/transport/frameOverLimit.ts";

describe("frameOverLimit", () => {
  it("gives the UTF-8 size of a frame over the limit, and undefined for one that fits", () => {
    expect(frameOverLimit("x".repeat(10), 10)).toBeUndefined();
    expect(frameOverLimit("x".repeat(11), 10)).toBe(11);
    // Three UTF-8 bytes a character: 4 characters are 12 bytes.
    expect(frameOverLimit("€€€€", 12)).toBeUndefined();
    expect(frameOverLimit("€€€€", 11)).toBe(12);
  });
});
