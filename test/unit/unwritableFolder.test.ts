/**
 * `unwritableFolder` and `unwritableFolderAdvice`: the one wording for a folder baton cannot
 * write, for every folder it makes. Errors as `node:fs` throws them, on paths of a temporary
 * directory.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unwritableFolder, unwritableFolderAdvice } from "../../src/runtime/unwritableFolder.ts";
import { tempDir } from "../fixtures/tempDir.ts";

/** An errno error as `node:fs` throws it. */
function fsError(code: string, syscall: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, syscall, path });
}

describe("unwritableFolder", () => {
  it("names a full disk or a used-up quota, and says to free space or give another disk", () => {
    const dir = join(tempDir(), "logs");
    const full = unwritableFolder(fsError("ENOSPC", "mkdir", dir), dir);
    expect(full).toEqual({
      kind: "full",
      path: dir,
      why: `cannot mkdir ${dir}: no space left on its disk`,
    });
    expect(unwritableFolder(fsError("EDQUOT", "open", dir), dir)?.why).toBe(
      `cannot open ${dir}: this user's disk quota is used up`,
    );
    expect(unwritableFolderAdvice(full, "workerLogs")).toBe(
      "free some space, or give the workers' logs (logsDir) another directory, on another disk",
    );
  });

  it("names the file in the way, and says to move it aside", () => {
    const dir = tempDir();
    const file = join(dir, "notes.txt");
    writeFileSync(file, "");
    const below = join(file, "logs");
    const inTheWay = unwritableFolder(fsError("ENOTDIR", "mkdir", below), below);
    expect(inTheWay).toEqual({
      kind: "fileInTheWay",
      path: file,
      why: `${file} is a file, not a directory`,
    });
    expect(unwritableFolderAdvice(inTheWay, "stateDir")).toBe(
      "move it aside, or give the state dir (--state-dir, or stateDir) another directory",
    );
  });

  it("reads an access check of a folder that is there as a write to it, and says what is refused", () => {
    const dir = tempDir();
    const denied = unwritableFolder(fsError("EROFS", "access", dir), dir);
    expect(denied).toEqual({
      kind: "denied",
      path: dir,
      why: `cannot write ${dir}: the file system is read-only`,
    });
    expect(unwritableFolderAdvice(denied, "log")).toBe(
      "keep the logs in another directory, one you can write to",
    );
  });

  it("says a refused or full atomic write of the file it was to become, never of its temp file", () => {
    const dir = tempDir();
    const temp = join(dir, ".ab12.json.4711.0123456789ab.tmp");
    const result = join(dir, "ab12.json");
    expect(unwritableFolder(fsError("EROFS", "open", temp), dir)).toEqual({
      kind: "denied",
      path: result,
      why: `cannot write ${result}: the file system is read-only`,
    });
    const full = unwritableFolder(fsError("ENOSPC", "open", temp), dir);
    expect(full).toMatchObject({ kind: "full", path: result });
    expect(full?.why.startsWith(`cannot write ${result}: no space left on its disk`)).toBe(true);
  });

  it("leaves any other error to its caller, with the folder's way out alone", () => {
    const dir = tempDir();
    expect(unwritableFolder(fsError("EIO", "mkdir", dir), dir)).toBeUndefined();
    expect(unwritableFolderAdvice(undefined, "store")).toBe(
      "give the store (--store) another directory",
    );
  });
});
