/**
 * The invariant checker holds each job's record on the board to the account kept under the
 * job's id, whichever record that is: its scan remembers where each job's account was, and a
 * board that puts another record under an id is still held to that id's account. A job is
 * ready or granted only once every job it runs after has completed, with their results (16),
 * fails only when it must (17), and, on the coordinator's clock, has its attempt stopped past
 * its timeout and waits out its backoff before a retry (18).
 */
import { describe, expect, it } from "vitest";
import type { Json, PlannedJob } from "../../src/graph/job.ts";
import type { CoordinatorEvent } from "../../src/machines/coordinator.ts";
import { type CoordinatorEffect, JobBoard } from "../../src/machines/jobBoard.ts";
import { InvariantChecker } from "../../src/sim/invariants.ts";

const planned = (id: string, deps: string[] = []): PlannedJob => ({
  id,
  kind: "k",
  input: null,
  deps,
  requires: {},
  retries: 0,
});

/** Sends `event` to the board as the coordinator would, and what it emits to the checker. */
function step(
  checker: InvariantChecker,
  board: JobBoard,
  event: CoordinatorEvent,
  act: () => void,
  forged: CoordinatorEffect[] = [],
): ReturnType<InvariantChecker["check"]> {
  checker.sent(event);
  act();
  checker.observe({ type: "effects", event, effects: [...board.takeEffects(), ...forged] });
  return checker.check(board);
}

const lease = (conn: string): CoordinatorEvent => ({
  type: "LEASE",
  conn,
  worker: conn,
  resources: {},
});

/** `b` runs after `a`; `a` is granted to c1 and `b` was forged ready, or granted to c2 with `deps`. */
function grantedEarly(forged: "ready" | Record<string, Json>) {
  const board = new JobBoard([planned("a"), planned("b", ["a"])]);
  const checker = new InvariantChecker();
  checker.check(board);
  step(checker, board, lease("c1"), () => board.lease("c1", "c1", {}));
  const b = board.jobs.get("b")!;
  const effect: CoordinatorEffect =
    forged === "ready"
      ? { type: "job.changed", job: "b", kind: "k", state: "ready" }
      : { type: "lease.granted", conn: "c2", job: b.job, deps: forged, attempt: 1 };
  return step(checker, board, lease("c2"), () => board.lease("c2", "c2", {}), [effect]);
}

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

  it("fails invariant 16 when a job is ready while a job it runs after is not completed", () => {
    expect(grantedEarly("ready")?.message).toBe(
      "invariant 16 (a job starts only once every job it runs after has completed, and gets their results) violated: job b (k) was ready while job a, which it runs after, is running",
    );
  });

  it("fails invariant 16 when a job is granted while a job it runs after is not completed", () => {
    expect(grantedEarly({ a: null })?.message).toMatch(
      /^invariant 16 .* violated: job b \(k\) was granted to connection c2 while job a, which it runs after, is running$/,
    );
  });

  it("fails invariant 16 when a granted job is given another result than its dependency's", () => {
    const board = new JobBoard([planned("a"), planned("b", ["a"])], {
      stored: new Map([["a", 1]]),
    });
    const checker = new InvariantChecker();
    checker.check(board);
    checker.sent(lease("c1"));
    board.lease("c1", "c1", {});
    // The board gave b a's 1; the effect the checker sees says 2.
    const effects = board
      .takeEffects()
      .map((effect) => (effect.type === "lease.granted" ? { ...effect, deps: { a: 2 } } : effect));
    checker.observe({ type: "effects", event: lease("c1"), effects });
    expect(checker.check(board)?.message).toMatch(
      /^invariant 16 .* violated: job b \(k\) was given 2 as the result of job a, which completed with 1$/,
    );
  });

  it("passes a job granted once the job it runs after has completed, with its result", () => {
    const board = new JobBoard([planned("a"), planned("b", ["a"])]);
    const checker = new InvariantChecker();
    checker.check(board);
    expect(step(checker, board, lease("c1"), () => board.lease("c1", "c1", {}))).toBeUndefined();
    const done: CoordinatorEvent = {
      type: "RESULT",
      conn: "c1",
      job: "a",
      outcome: { status: "completed", value: 1 },
    };
    expect(
      step(checker, board, done, () => board.result("c1", "a", { status: "completed", value: 1 })),
    ).toBeUndefined();
    expect(step(checker, board, lease("c2"), () => board.lease("c2", "c2", {}))).toBeUndefined();
    expect(board.jobs.get("b")!.holder).toBe("c2");
  });

  const failed = (conn: string, job: string): CoordinatorEvent => ({
    type: "RESULT",
    conn,
    job,
    outcome: { status: "failed", error: { message: "boom" } },
  });

  /** `a` is granted to c1, which fails it; `retries` is what the checker finds it was given. */
  function failedOnce(retries: number) {
    const board = new JobBoard([planned("a")]);
    const checker = new InvariantChecker();
    checker.check(board);
    step(checker, board, lease("c1"), () => board.lease("c1", "c1", {}));
    return step(checker, board, failed("c1", "a"), () => {
      board.result("c1", "a", { status: "failed", error: { message: "boom" } });
      (board.jobs.get("a")!.job as { retries: number }).retries = retries;
    });
  }

  it("passes a job failed for its error after its last attempt", () => {
    expect(failedOnce(0)).toBeUndefined();
  });

  it("fails invariant 17 when a job fails for a retryable error before its last attempt", () => {
    expect(failedOnce(2)?.message).toBe(
      "invariant 17 (a job fails only after its last attempt, maxLost lost workers or a failed dependency) violated: job a (k) failed after 1 failed attempt with 2 retries, and its error is retryable",
    );
  });

  it("fails invariant 17 when a job fails as poison before maxLost of its workers were lost", () => {
    const board = new JobBoard([planned("a")], { maxLost: 1 });
    const checker = new InvariantChecker({ maxLost: 3 });
    checker.check(board);
    step(checker, board, lease("c1"), () => board.lease("c1", "c1", {}));
    const lost: CoordinatorEvent = { type: "WORKER_LOST", conn: "c1", code: 1006, reason: "" };
    expect(
      step(checker, board, lost, () => board.workerLost("c1", { code: 1006, reason: "" }))?.message,
    ).toMatch(
      /^invariant 17 .* violated: job a \(k\) failed as poison after 1 lost workers, fewer than maxLost 3$/,
    );
  });

  it("fails invariant 17 when a job is skipped while no job it runs after failed", () => {
    const board = new JobBoard([planned("a"), planned("b", ["a"])]);
    const checker = new InvariantChecker();
    checker.check(board);
    const skipped: CoordinatorEffect = {
      type: "job.changed",
      job: "b",
      kind: "k",
      state: "failed",
      cause: "skipped",
    };
    expect(
      step(checker, board, lease("c1"), () => board.lease("c1", "c1", {}), [skipped])?.message,
    ).toMatch(
      /^invariant 17 .* violated: job b \(k\) was skipped, but no job it runs after failed \(a running\)$/,
    );
  });

  /** A job with a backoff of 100 ms (or a timeout of 100 ms), granted to c1 at 0 ms. */
  function timed(options: Partial<PlannedJob>) {
    let now = 0;
    const board = new JobBoard([{ ...planned("a"), retries: 1, ...options }]);
    const checker = new InvariantChecker({ now: () => now });
    checker.check(board);
    step(checker, board, lease("c1"), () => board.lease("c1", "c1", {}));
    return { board, checker, at: (ms: number) => (now = ms) };
  }

  it("fails invariant 18 when a job is ready again before its backoff is over", () => {
    const { board, checker, at } = timed({ backoff: { initialMs: 100 } });
    at(10);
    expect(
      step(checker, board, failed("c1", "a"), () =>
        board.result("c1", "a", { status: "failed", error: { message: "boom" } }),
      ),
    ).toBeUndefined();
    at(50);
    const ready: CoordinatorEffect = { type: "job.changed", job: "a", kind: "k", state: "ready" };
    expect(step(checker, board, lease("c2"), () => {}, [ready])?.message).toBe(
      "invariant 18 (an attempt is stopped once it runs past its timeoutMs, and a retry waits out its backoff) violated: job a (k) was ready 40 ms after its failed attempt 1, before its backoff of 100 ms",
    );
  });

  it("passes a job ready again once its backoff is over", () => {
    const { board, checker, at } = timed({ backoff: { initialMs: 100 } });
    at(10);
    step(checker, board, failed("c1", "a"), () =>
      board.result("c1", "a", { status: "failed", error: { message: "boom" } }),
    );
    at(110);
    const due: CoordinatorEvent = { type: "RETRY_DUE", job: "a" };
    expect(step(checker, board, due, () => board.retryDue("a"))).toBeUndefined();
    expect(board.jobs.get("a")!.state).toBe("ready");
  });

  it("fails invariant 18 when an attempt runs past its timeout and its holder is not told to stop", () => {
    const { board, checker, at } = timed({ timeoutMs: 100 });
    at(150);
    expect(checker.check(board)?.message).toMatch(
      /^invariant 18 .* violated: job a \(k\) has run for 150 ms of attempt 1, past its timeoutMs of 100, and its holder was not told to stop$/,
    );
  });

  it("passes an attempt past its timeout once its holder was told to stop", () => {
    const { board, checker, at } = timed({ timeoutMs: 100 });
    at(100);
    const timeout: CoordinatorEvent = { type: "ATTEMPT_TIMEOUT", job: "a", attempt: 1 };
    step(checker, board, timeout, () => board.attemptTimedOut("a", 1));
    at(150);
    expect(checker.check(board)).toBeUndefined();
  });

  it("fails invariant 5 when a job is granted after the run was cancelled", () => {
    const board = new JobBoard([planned("a"), planned("b")]);
    const checker = new InvariantChecker();
    checker.check(board);
    step(checker, board, lease("c1"), () => board.lease("c1", "c1", {}));
    const cancel: CoordinatorEvent = { type: "CANCEL", reason: "stop" };
    const b = board.jobs.get("b")!;
    const forged: CoordinatorEffect = {
      type: "lease.granted",
      conn: "c2",
      job: b.job,
      deps: {},
      attempt: 1,
    };
    expect(step(checker, board, cancel, () => board.cancel("stop"), [forged])?.message).toMatch(
      /^invariant 5 .* violated: job b was granted to connection c2 after the run was cancelled$/,
    );
  });
});
