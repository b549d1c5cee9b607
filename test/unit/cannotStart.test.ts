import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { cannotStart } from "../../src/runtime/cannotStart.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("cannotStart", () => {
  it("names a program that is not on PATH, or not executable", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-start-"));
    dirs.push(dir);
    writeFileSync(join(dir, "plain.sh"), "#!/bin/sh\n");
    chmodSync(join(dir, "plain.sh"), 0o644);
    for (const [command, path] of [
      ["no-such-program-here", "/usr/bin:/bin"],
      ["plain.sh", dir],
      [join(dir, "plain.sh"), undefined],
    ] as const) {
      const error = cannotStart(command, undefined, path);
      expect(error.message).toBe(
        `cannot start ${JSON.stringify(command)}: check that the program exists on PATH (or give its full path) and is executable`,
      );
      // Starting it again fails the same way: a rank job that meets it is not retried.
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toHaveProperty("retryable", false);
    }
  });

  it("names a working directory that does not exist", () => {
    const error = cannotStart("sh", "/nonexistent/work", "/usr/bin:/bin");
    expect(error.message).toBe(
      'cannot start "sh" in /nonexistent/work: /nonexistent/work is not a directory; give a working directory that exists',
    );
    expect(error).toHaveProperty("retryable", false);
  });

  it("says the system refused another process when the program is there (EAGAIN at ulimit -u)", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-start-"));
    dirs.push(dir);
    writeFileSync(join(dir, "rank.sh"), "#!/bin/sh\n");
    chmodSync(join(dir, "rank.sh"), 0o755);
    // Found on the child's PATH, by a path relative to the working directory, or by its full path.
    for (const [command, cwd, path] of [
      ["sh", undefined, "/nonexistent:/usr/bin:/bin"],
      ["./rank.sh", dir, undefined],
      ["rank.sh", dir, "."],
      [join(dir, "rank.sh"), undefined, undefined],
    ] as const) {
      const error = cannotStart(command, cwd, path);
      expect(error.message).toMatch(
        /: the system refused another process( \(this user may run at most \d+ processes and threads: ulimit -u\))?, or is out of memory; start fewer processes \(a smaller world\), or raise the limit$/,
      );
      // Once other processes have ended it may start: worth another attempt.
      expect(error).not.toBeInstanceOf(ConfigError);
      expect(error).not.toHaveProperty("retryable");
    }
  });
});
