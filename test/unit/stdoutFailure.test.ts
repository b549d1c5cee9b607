import { expect, it } from "vitest";
import { exitAfterStdoutFailure, stdoutFailure } from "../../src/cli/stdoutFailure.ts";

const failed = (code: string, message = `${code}: write`) =>
  Object.assign(new Error(message), { code }) as NodeJS.ErrnoException;

it("ends a command at once, saying nothing and keeping its exit code, when its stdout's reader closed the pipe", () => {
  expect(stdoutFailure("run", failed("EPIPE"))).toEqual({ say: undefined, endNow: true });
  expect(exitAfterStdoutFailure("run", failed("EPIPE"), 1)).toBe(1);
  expect(exitAfterStdoutFailure("run", failed("EPIPE"), 0)).toBe(0);
});

it("says a full disk under stdout in one line and goes on, the command then exiting 2 where it would have exited 0", () => {
  expect(stdoutFailure("run", failed("ENOSPC"))).toEqual({
    say: "baton run: cannot write stdout: no space left on the disk, so what it printed there is cut short; free some space, or send stdout elsewhere [ENOSPC]\n",
    endNow: false,
  });
  expect(stdoutFailure("status", failed("EIO", "EIO: i/o error, write")).say).toBe(
    "baton status: cannot write stdout: EIO: i/o error, write, so what it printed there is cut short [EIO]\n",
  );
  expect(exitAfterStdoutFailure("run", failed("ENOSPC"), 0)).toBe(2);
  // A failed or interrupted run keeps its own code, which says more.
  expect(exitAfterStdoutFailure("run", failed("ENOSPC"), 1)).toBe(1);
  expect(exitAfterStdoutFailure("run", failed("EDQUOT"), 130)).toBe(130);
});

it("lets a worker go on running jobs, whatever its stdout's failure, with its exit code as it was", () => {
  for (const code of ["ENOSPC", "EPIPE"]) {
    expect(stdoutFailure("worker", failed(code)).endNow).toBe(false);
    expect(exitAfterStdoutFailure("worker", failed(code), 0)).toBe(0);
  }
  expect(stdoutFailure("worker", failed("ENOSPC")).say).toBe(
    "baton worker: cannot write stdout: no space left on the disk; what its job handlers print there is dropped from now on, and its jobs go on [ENOSPC]\n",
  );
});
