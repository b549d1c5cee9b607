import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { batonCommand } from "../../src/cli/batonCommand.ts";

const BIN = resolve("bin/baton.js");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A folder holding a `baton` that is a link to `target`, as npm's bin folders hold it. */
function binDir(target: string, under = ""): string {
  const top = mkdtempSync(join(tmpdir(), "baton-command-"));
  dirs.push(top);
  const dir = join(top, under);
  mkdirSync(dir, { recursive: true });
  symlinkSync(target, join(dir, "baton"));
  return dir;
}

describe("batonCommand", () => {
  it("is baton when the shell's first baton is this one", () => {
    const global = binDir(BIN);
    expect(batonCommand({ PATH: ["/nonexistent", global, "/usr/bin"].join(delimiter) })).toBe(
      "baton",
    );
  });

  it("is this baton's path when no baton is on the PATH, as after npm install in a project", () => {
    expect(batonCommand({ PATH: "/nonexistent" })).toBe(`'${BIN}'`);
    expect(batonCommand({})).toBe(`'${BIN}'`);
  });

  it("is this baton's path when the shell's first baton is another one", () => {
    const other = mkdtempSync(join(tmpdir(), "baton-other-"));
    dirs.push(other);
    writeFileSync(join(other, "baton.js"), "");
    const global = binDir(join(other, "baton.js"));
    expect(batonCommand({ PATH: [global, binDir(BIN)].join(delimiter) })).toBe(`'${BIN}'`);
  });

  it("passes over the node_modules/.bin folders npx and npm run put on the PATH, which another terminal lacks", () => {
    const project = binDir(BIN, join("app", "node_modules", ".bin"));
    const PATH = [project, "/usr/bin"].join(delimiter);
    expect(batonCommand({ PATH, npm_command: "exec" })).toBe(`'${BIN}'`);
    // The same folder put on the PATH by the user's own shell is theirs.
    expect(batonCommand({ PATH })).toBe("baton");
  });
});
