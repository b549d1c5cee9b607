/**
 * A launch its state dir refuses says whether another attempt can do better: a rank job whose
 * launch fails so is retried only when the refusal may clear. Nothing is spawned: the files
 * port refuses before any rank.
 */
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RankGroupError } from "../../src/errors.ts";
import { launchGroup } from "../../src/runtime/launchGroup.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { tempDir } from "../fixtures/tempDir.ts";

function refusal(code: string, call: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: refused, ${call} '${path}'`), { code, path });
}

/** What `launchGroup` fails with when `files` refuses `method` with `code`. */
async function refusedBy(method: "list" | "mkdirp", code: string): Promise<RankGroupError> {
  const stateDir = tempDir("baton-refused-");
  const real = nodeFiles();
  const files: Files = {
    ...real,
    [method]: async (path: string) => {
      throw refusal(code, method, path);
    },
  };
  const group = launchGroup({
    argv: ["/nonexistent/never-started"],
    worldSize: 1,
    stateDir,
    ports: { files },
  });
  const error = (await group.wait().catch((thrown: unknown) => thrown)) as RankGroupError;
  expect(group.pids()).toEqual([]);
  return error;
}

describe("a launch its state dir refuses", () => {
  it.each([
    ["list", "EACCES", "REAP_FAILED", false, ": permission denied: this user"],
    [
      "list",
      "EIO",
      "REAP_FAILED",
      undefined,
      "-refused-[^ ]*: refused (EIO)), so the reaper cannot check it for orphans; check the disk it is on",
    ],
    ["mkdirp", "EACCES", "LAUNCH_FAILED", false, ": permission denied: this user"],
    ["mkdirp", "EROFS", "LAUNCH_FAILED", false, ": the file system is read-only"],
    ["mkdirp", "ENOTDIR", "LAUNCH_FAILED", false, " is a file, not a directory); move it aside"],
    ["mkdirp", "ENOSPC", "LAUNCH_FAILED", undefined, ": no space left on its disk"],
    [
      "mkdirp",
      "EIO",
      "LAUNCH_FAILED",
      undefined,
      "-refused-[^ ]*: refused (EIO)); check the disk it is on, or give the state dir",
    ],
  ] as const)(
    "%s refused with %s fails as %s, retryable %s, saying why",
    async (method, code, failure, retryable, why) => {
      const error = await refusedBy(method, code);
      expect(error).toMatchObject({ code: failure });
      expect(error.retryable).toBe(retryable);
      // An I/O error names the path refused and what the system said, not Node's message.
      if (why.startsWith("-refused-"))
        expect(error.message).toMatch(new RegExp(why.replace(/[()]/g, "\\$&")));
      else expect(error.message).toContain(why);
      expect(error.message).toContain("No rank was started");
    },
  );

  it("through a symbolic link to nothing fails for good, naming the link, its target and what to do", async () => {
    const dir = tempDir("baton-refused-");
    const link = join(dir, "scratch");
    const target = join(dir, "not-mounted");
    await symlink(target, link);
    const stateDir = join(link, "state");
    const group = launchGroup({ argv: ["/nonexistent/never-started"], worldSize: 1, stateDir });
    const error = (await group.wait().catch((thrown: unknown) => thrown)) as RankGroupError;
    expect(group.pids()).toEqual([]);
    expect(error).toMatchObject({ code: "LAUNCH_FAILED", retryable: false });
    expect(error.message).toContain(
      `the state dir ${stateDir} cannot hold deployment ${group.deployment} (${link} is a symbolic link to ${target}, which does not exist (a disk not mounted?)); make ${target}, or give the state dir (--state-dir, or stateDir) another directory. No rank was started`,
    );
  });
});
