import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { cannotStart } from "../../src/runtime/cannotStart.ts";
import { tempDir } from "../fixtures/tempDir.ts";

/** A command `cannotStart` is asked about (with its working directory and PATH), and what it says. */
type Refusal = readonly [
  command: string,
  cwd: string | undefined,
  path: string | undefined,
  why: string,
  shellCode: number,
];

/**
 * Each command's error from `cannotStart`: its message says `why`; starting it again fails
 * the same way (a rank job that meets it is not retried); and it carries what a shell exits
 * with for it, 127 not there, 126 there but not executable.
 */
function expectRefused(refusals: readonly Refusal[]): void {
  for (const [command, cwd, path, why, shellCode] of refusals) {
    const error = cannotStart(command, cwd, path);
    expect(error.message).toBe(
      `cannot start ${JSON.stringify(command)}${cwd === undefined ? "" : ` in ${cwd}`}: ${why}`,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toHaveProperty("retryable", false);
    expect(error).toHaveProperty("shellCode", shellCode);
  }
}

describe("cannotStart", () => {
  it("says what is wrong with a program and what to do: not on PATH, missing, a directory, not executable", () => {
    const dir = tempDir("baton-start-");
    writeFileSync(join(dir, "plain.sh"), "#!/bin/sh\n");
    chmodSync(join(dir, "plain.sh"), 0o644);
    mkdirSync(join(dir, "train"));
    expectRefused([
      // A bare name is looked for on the child's PATH, and only there.
      [
        "no-such-program-here",
        undefined,
        "/usr/bin:/bin",
        "no program no-such-program-here on PATH (/usr/bin:/bin); install it, add its directory to the PATH the process gets, or give its path",
        127,
      ],
      [
        "no-such-program-here",
        undefined,
        undefined,
        "no program no-such-program-here on PATH (not set); install it, add its directory to the PATH the process gets, or give its path",
        127,
      ],
      // exec passes over a file it may not execute, or a directory, and says EACCES.
      [
        "plain.sh",
        undefined,
        `/nonexistent:${dir}`,
        `${dir}/plain.sh, found on PATH, is not executable; make it so (chmod +x ${dir}/plain.sh) or run it through its interpreter`,
        126,
      ],
      [
        "train",
        undefined,
        dir,
        `${dir}/train, found on PATH, is a directory, not a program; give the program's path`,
        126,
      ],
      // A path plays PATH no part: relative, it is resolved against the working directory.
      [
        "./missing",
        dir,
        "/usr/bin:/bin",
        `${dir}/missing does not exist (a relative path is resolved against the working directory, ${dir}); give the program's path`,
        127,
      ],
      [
        "/opt/no-such/train",
        undefined,
        "/usr/bin:/bin",
        "/opt/no-such/train does not exist; give the program's path",
        127,
      ],
      [
        join(dir, "plain.sh"),
        undefined,
        "/usr/bin:/bin",
        `${dir}/plain.sh is not executable; make it so (chmod +x ${dir}/plain.sh) or run it through its interpreter`,
        126,
      ],
      [
        "./train",
        dir,
        undefined,
        `${dir}/train is a directory, not a program; give the program's path`,
        126,
      ],
    ]);
  });

  it("names the #! interpreter of a script that is not there (exec's ENOENT for a file that is), and what to do", () => {
    const dir = tempDir("baton-start-");
    const script = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      chmodSync(join(dir, name), 0o755);
      return join(dir, name);
    };
    const missing = script("train.py", "#!/opt/no-such/python9 -u\nprint(1)\n");
    const crlf = script("crlf.sh", "#!/bin/sh\r\necho 1\r\n");
    const relative = script("rel.sh", "#! ./tools/run\n");
    mkdirSync(join(dir, "tools", "run"), { recursive: true });
    const plain = join(dir, "plain");
    writeFileSync(plain, "");
    const notExecutable = script("noexec.sh", `#!${plain}\n`);
    const noEnv = script("noenv.sh", "#!/opt/no-such/env python3\n");
    expectRefused([
      [
        missing,
        undefined,
        "/usr/bin:/bin",
        `${missing} starts with #!/opt/no-such/python9, an interpreter that does not exist; install it, or change that line to an interpreter that is there (#!/usr/bin/env python9 takes it from PATH), or run the script through one`,
        127,
      ],
      [
        "train.py",
        undefined,
        `/nonexistent:${dir}`,
        `${missing}, found on PATH, starts with #!/opt/no-such/python9, an interpreter that does not exist; install it, or change that line to an interpreter that is there (#!/usr/bin/env python9 takes it from PATH), or run the script through one`,
        127,
      ],
      [
        "./crlf.sh",
        dir,
        undefined,
        `${crlf} starts with #!/bin/sh\\r (its lines end in CR LF, Windows line endings), an interpreter that does not exist; convert it to Unix line endings (dos2unix ${crlf}, or sed -i 's/\\r$//' ${crlf})`,
        127,
      ],
      // A relative interpreter is resolved against the working directory, as exec does.
      [
        relative,
        dir,
        undefined,
        `${relative} starts with #!./tools/run, an interpreter that is a directory, not a program; change that line to the interpreter's path, or run the script through it`,
        126,
      ],
      [
        notExecutable,
        undefined,
        undefined,
        `${notExecutable} starts with #!${plain}, an interpreter that is not executable; change that line to the interpreter's path, or run the script through it`,
        126,
      ],
      [
        noEnv,
        undefined,
        undefined,
        `${noEnv} starts with #!/opt/no-such/env, an interpreter that does not exist; install it, or change that line to an interpreter that is there, or run the script through one`,
        127,
      ],
    ]);
  });

  it("passes over a script with a missing interpreter on PATH to the program after it, as execvp does", () => {
    const [first, second] = [1, 2].map(() => tempDir("baton-start-"));
    writeFileSync(join(first!, "rank"), "#!/opt/no-such/python9\n");
    writeFileSync(join(second!, "rank"), "#!/bin/sh\n");
    chmodSync(join(first!, "rank"), 0o755);
    chmodSync(join(second!, "rank"), 0o755);
    const error = cannotStart("rank", undefined, `${first}:${second}`);
    expect(error.message).toContain("the system refused another process");
    expect(error).not.toBeInstanceOf(ConfigError);
  });

  it("names a working directory that does not exist", () => {
    const error = cannotStart("sh", "/nonexistent/work", "/usr/bin:/bin");
    expect(error.message).toBe(
      'cannot start "sh" in /nonexistent/work: /nonexistent/work is not a directory; give a working directory that exists',
    );
    expect(error).toHaveProperty("retryable", false);
  });

  it("says the system refused another process when the program is there (EAGAIN at ulimit -u)", () => {
    const dir = tempDir("baton-start-");
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
