/**
 * The invariant checker holds each job's record on the board to the account kept under the
 * job's id, whichever record that is: its scan remembers where each job's account was, and a
 * board that puts another record under an id is still held to that id's account.
 */
import { describe, expect, it } from "vitest";
import type { PlannedJob } from "../../src/graph/job.ts";
import { JobBoard } from "../../src/machines/jobBoard.ts";
import { InvariantChecker } from "../../src/sim/invariants.ts";

const planned = (id: string): PlannedJob => ({
  id,
  kind: "k",
  input: null,
  deps: [],
  requires: {},
  retries: 0,
});

describe("InvariantChecker", () => {
  it("holds a record moved under another id to that id's account", () => {
    const board = new JobBoard([planned("a"), planned("b")], { stored: new Map([["a", 1]]) });
    const checker = new InvariantChecker();
    expect(checker.check(board)).toBeUndefined();
    expect(checker.check(board)).toBeUndefined();
    const a = board.jobs.get("a")!;
    const b = board.jobs.get("b")!;
    board.jobs.set("a", b);
    board.jobs.set("b", a);
    expect(checker.check(board)?.message).toMatch(
      /^invariant 2 .* violated: job a is ready on the board but was reported completed$/,
    );
  });
});
