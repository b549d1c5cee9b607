/** Which last lines of a rank's log are a shell's or env's own "could not run it". */
import { expect, it } from "vitest";
import { commandNotRun } from "../../src/rank/commandNotRun.ts";

const quoted = (line: string) => `Last 2 lines of the log:\n  | starting\n  | ${line}`;

it.each([
  [127, "env: 'python9': No such file or directory"],
  [127, "/usr/bin/env: python9: No such file or directory"],
  [127, "/usr/bin/env: ‘python9’: No such file or directory"],
  [127, "env: can't execute 'python9': No such file or directory"],
  [127, "sh: 1: trainn: not found"],
  [127, "bash: trainn: command not found"],
  [127, "bash: line 1: trainn: command not found"],
  [127, "zsh:1: command not found: trainn"],
  [126, "env: './x.py': Permission denied"],
  [126, "bash: ./data: Is a directory"],
  [126, "bash: ./a.out: cannot execute binary file: Exec format error"],
])("exit %i after %j is not retried", (code, line) => {
  expect(commandNotRun(code, quoted(line))?.retryable).toBe(false);
});

it.each([
  [127, "Traceback (most recent call last):"],
  [127, "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'"],
  [127, "  not found: the checkpoint"],
  [127, "env: 'python9': No such file or directory\n  | and then the program went on"],
  [126, "(Its log is empty.)"],
])("exit %i after %j stays retryable", (code, line) => {
  const notRun = commandNotRun(code, quoted(line));
  expect(notRun?.advice).toMatch(/^ Exit code 12[67] is/);
  expect(notRun?.retryable).toBeUndefined();
});

it("other codes are not told", () => {
  expect(commandNotRun(1, quoted("bash: trainn: command not found"))).toBeUndefined();
});
