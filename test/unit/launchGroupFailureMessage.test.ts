/**
 * The error of a group that failed and whose teardown could not be verified either: it says
 * both, and the rank's log is quoted last, so that nothing reads as the log's last line.
 */

import { expect, it } from "vitest";
import { codedMessage } from "../../src/cli/codedMessage.ts";
import type { RankGroupError } from "../../src/errors.ts";
import { simGroup } from "../fixtures/simGroup.ts";

it("a rank failure whose teardown is not verified names both and quotes the rank's log last", async () => {
  // Rank 1 fails at once; rank 0 ignores TERM and survives every KILL.
  const { group, settle } = simGroup(
    2,
    (spawn) =>
      spawn.env?.RANK === "1"
        ? { main: (self) => self.clock.setTimeout(() => self.exit(3), 10) }
        : { onTerm: "ignore", killsToDie: 1_000 },
    {
      teardown: { termGraceMs: 100, killWaitMs: 100, killAgainWaitMs: 100 },
      ports: { logTail: async () => "The last line of the log:\n  | rank 1 gives up" },
    },
  );
  const error = (await settle(group.wait())) as RankGroupError;
  expect(error.code).toBe("RANK_FAILED");
  expect(error.message).toMatch(
    /rank 1 exited with code 3\. The other rank was stopped\. The teardown that followed is not verified either: .* Its log is \/sim\/run\/dep-\w+\/rank-1\.log\.\nThe last line of the log:\n {2}\| rank 1 gives up$/s,
  );
  // As the command prints it: the code ends what the launcher says, before the quoted log,
  // not inside the sentence that announces it ("The last line of the log [RANK_FAILED]:").
  expect(codedMessage(error.message, error.code)).toMatch(
    /Its log is \/sim\/run\/dep-\w+\/rank-1\.log\. \[RANK_FAILED\]\nThe last line of the log:\n {2}\| rank 1 gives up$/,
  );
});

it("a rank that failed at the same moment as the first is named as gone on its own, not as stopped", async () => {
  // Ranks 0 and 1 exit 3 at the same instant; rank 2 runs on until the teardown's TERM.
  const { group, settle } = simGroup(3, (spawn) =>
    spawn.env?.RANK === "2"
      ? {}
      : { main: (self) => self.clock.setTimeout(() => self.exit(3), 10) },
  );
  const error = (await settle(group.wait())) as RankGroupError;
  expect(error.code).toBe("RANK_FAILED");
  expect(error.message).toMatch(
    /rank ([01]) exited with code 3\. Rank (?!\1)[01] exited on its own too \(code 3\); rank 2 was stopped\. Its log/,
  );
});

/** A group whose rank 0 exits with `code` at once, its log quoting `line`. */
async function exitingWith(code: number, line: string) {
  const { group, settle } = simGroup(
    1,
    () => ({ main: (self) => self.clock.setTimeout(() => self.exit(code), 10) }),
    { ports: { logTail: async () => `The last line of the log:\n  | ${line}` } },
  );
  return (await settle(group.wait())) as RankGroupError;
}

it("a rank that exits 127 with env's own line says the command was not found, and is not retried", async () => {
  const error = await exitingWith(127, "env: 'python9': No such file or directory");
  expect(error.code).toBe("RANK_FAILED");
  expect(error.retryable).toBe(false);
  expect(error.message).toMatch(
    /rank 0 exited with code 127\. Exit code 127 is a shell's or env's "command not found": .*give its full path\. The log's last line, below, is the shell's or env's own\. Its log is .*\n {2}\| env: 'python9': No such file or directory$/s,
  );
});

it("a rank that exits 126 with sh's own line says it could not be executed, and is not retried", async () => {
  const error = await exitingWith(126, "sh: 1: ./train.sh: Permission denied");
  expect(error.retryable).toBe(false);
  expect(error.message).toMatch(/Exit code 126 is a shell's or env's "found but cannot execute"/);
});

it("a rank that exits 127 without a shell's line is told as probably not found, but stays retryable", async () => {
  const error = await exitingWith(127, "giving up: checkpoint missing");
  expect(error.retryable).toBeUndefined();
  expect(error.message).toMatch(/"command not found".* A program may also exit with 127 itself/s);
});

it("a rank that exits with another code gets no such advice", async () => {
  const error = await exitingWith(1, "bash: line 1: trainn: command not found");
  expect(error.retryable).toBeUndefined();
  expect(error.message).not.toMatch(/Exit code/);
});

it("a barrier that no rank wrote a marker for says so, and that a plain program needs a load timeout longer than its run", async () => {
  // Ranks that run on and never write a marker, as a plain training script does.
  const { group, settle } = simGroup(2, () => ({}), { timeouts: { loadTimeoutMs: 500 } });
  const error = (await settle(group.wait())) as RankGroupError;
  expect(error.code).toBe("BARRIER_TIMEOUT");
  expect(error.message).toContain(
    "No rank wrote a marker at all: a program that writes none (a plain training script) is never ready, and passes the barrier only by exiting 0 before the load timeout; give it a load timeout longer than its run",
  );
});

it("a load timeout with several ranks not ready names each one's log, not rank 0's, and quotes the first", async () => {
  // Rank 0 exits 0 (it passed the barrier); the others never write a marker.
  const notReady = async (worldSize: number) => {
    const { group, settle } = simGroup(
      worldSize,
      (spawn) =>
        spawn.env?.RANK === "0"
          ? { main: (self) => self.clock.setTimeout(() => self.exit(0), 10) }
          : {},
      {
        timeouts: { loadTimeoutMs: 1_000 },
        ports: { logTail: async (path) => `The last line of the log:\n  | ${path}` },
      },
    );
    return (await settle(group.wait())) as RankGroupError;
  };
  const few = await notReady(3);
  expect(few.code).toBe("BARRIER_TIMEOUT");
  expect(few.details.rank).toBe(1);
  expect(few.message).toMatch(
    /^deployment (dep-\w+): ranks 1, 2 did not write a ready marker .* Their logs are rank-1\.log and rank-2\.log in \/sim\/run\/\1\.\nRank 1's: The last line of the log:\n {2}\| \/sim\/run\/\1\/rank-1\.log$/s,
  );
  const many = await notReady(7);
  expect(many.message).toMatch(
    /ranks 1-6 did not write .* Their logs are rank-R\.log for ranks 1-6 in \/sim\/run\/dep-\w+\.\nRank 1's: /s,
  );
});
