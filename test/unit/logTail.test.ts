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

  it("quotes only what was written from `from` on: a relaunch's, not the earlier runs' before it", async () => {
    const earlier = "run 1: loading\nrun 1: done\n";
    const path = log("relaunched.log", `${earlier}run 2: loading\nrun 2: it broke\n`);
    expect(await logTail(path, Buffer.byteLength(earlier))).toBe(
      "Last 2 lines of the log:\n  | run 2: loading\n  | run 2: it broke",
    );
    expect(await logTail(log("nothing-new.log", earlier), Buffer.byteLength(earlier))).toBe(
      "(It wrote nothing to its log.)",
    );
    // Truncated by hand since: quoted from its start.
    expect(await logTail(log("truncated.log", "short\n"), 1000)).toBe(
      "The last line of the log:\n  | short",
    );
  });

  it("drops a cut first line only when the 16 KiB read starts inside what was written from `from` on", async () => {
    const long = `${"x".repeat(20 * 1024)}\nlast\n`;
    expect(await logTail(log("long.log", `earlier\n${long}`), 8)).toBe(
      "The last line of the log:\n  | last",
    );
  });
});
