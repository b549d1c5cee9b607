import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeDirs } from "../../src/runtime/makeDirs.ts";

describe("makeDirs", () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "baton-makedirs-"));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates every missing component with the mode, and accepts a directory that exists", () => {
    const deep = join(dir, "a", "b", "c");
    expect(makeDirs(deep, 0o700)).toBe(join(dir, "a"));
    for (const path of [join(dir, "a"), join(dir, "a", "b"), deep])
      expect(statSync(path).mode & 0o777).toBe(0o700);
    expect(makeDirs(deep)).toBeUndefined();
    expect(() => makeDirs(`${deep}/../c`)).not.toThrow();
  });

  it("accepts a component another process created meanwhile", () => {
    mkdirSync(join(dir, "a"));
    expect(makeDirs(join(dir, "a", "b"))).toBe(join(dir, "a", "b"));
    expect(existsSync(join(dir, "a", "b"))).toBe(true);
  });

  it("refuses a path that is a file, or lies under one", () => {
    writeFileSync(join(dir, "file"), "");
    expect(() => makeDirs(join(dir, "file"))).toThrow(expect.objectContaining({ code: "EEXIST" }));
    expect(() => makeDirs(join(dir, "file", "sub"))).toThrow(
      expect.objectContaining({ code: "ENOTDIR" }),
    );
  });

  it.runIf(existsSync("/proc/self"))(
    "answers ENOENT under /proc/self, where Node's recursive mkdir spins forever",
    () => {
      expect(() => makeDirs("/proc/self/baton-state/deployments")).toThrow(
        expect.objectContaining({ code: "ENOENT", path: "/proc/self/baton-state" }),
      );
    },
  );
});
