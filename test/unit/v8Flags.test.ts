/**
 * The V8 flags the `baton` command sets (bin/v8Flags.mjs) are ones this Node's V8 knows:
 * `v8.setFlagsFromString` ignores a flag it does not know, so a flag renamed or dropped by a
 * later Node would silently stop applying.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { BATON_V8_FLAGS } from "../../bin/v8Flags.mjs";

describe("the baton command's V8 flags", () => {
  const known = execFileSync(process.execPath, ["--v8-options"], { encoding: "utf8" });

  it.each(BATON_V8_FLAGS)("%s is a flag this Node's V8 knows", (flag) => {
    const name = flag.replace(/^--(no-)?/, "");
    expect(known).toMatch(new RegExp(`^\\s+--${name}\\b`, "m"));
  });

  it("are set by bin/baton.js before it loads baton", async () => {
    const { readFile } = await import("node:fs/promises");
    const source = await readFile(new URL("../../bin/baton.js", import.meta.url), "utf8");
    const set = source.indexOf("setBatonV8Flags();");
    expect(set).toBeGreaterThan(-1);
    expect(set).toBeLessThan(source.indexOf("await import(await batonEntry())"));
  });
});
