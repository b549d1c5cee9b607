import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { logTail } from "../../src/runtime/logTail.ts";

const dir = mkdtempSync(join(tmpdir(), "baton-log-tail-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function log(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe("logTail", () => {
  it("quotes the last 20 lines, and says so in the singular for one", async () => {
    const lines = Array.from({ length: 25 }, (_, i) => `line ${i + 1}`).join("\n");
    const many = await logTail(log("many.log", `${lines}\n`));
    expect(many.split("\n")[0]).toBe("Last 20 lines of the log:");
    expect(many.split("\n").slice(1)).toEqual(
      Array.from({ length: 20 }, (_, i) => `  | line ${i + 6}`),
    );
    expect(await logTail(log("one.log", "it broke\n"))).toBe(
      "The last line of the log:\n  | it broke",
    );
  });

  it("says when the log is empty or cannot be read", async () => {
    expect(await logTail(log("empty.log", ""))).toBe("(Its log is empty.)");
    expect(await logTail(join(dir, "missing.log"))).toMatch(
      /^\(Its log could not be read: ENOENT: no such file or directory, open '.*missing\.log'\.\)$/,
    );
  });
});
