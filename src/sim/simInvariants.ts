/**
 * Every invariant the simulation checks, by number, as what holds: 0 determinism; 1–5 DESIGN
 * §4's, 7 (the throttle), 16 (a job starts only after the jobs it runs after, with their
 * results), 17 (a job fails only when it must) and 18 (an attempt past its timeout is stopped,
 * a retry waits out its backoff), which the `InvariantChecker` holds each coordinator to after
 * every event (the runner adds 2 across crashes); 6 liveness; 8–14 the rank groups drawn
 * beside the graph (`RankGroupScenario`); 15 what your own handlers check (`SimTools.invariant`).
 *
 * @example
 * ```ts
 * SIM_INVARIANTS[1]; // "a job has at most one lease; a connection holds at most one job"
 * ```
 */
export const SIM_INVARIANTS = {
  0: "a seed gives the same trace on every run",
  1: "a job has at most one lease; a connection holds at most one job",
  2: "a job reaches completed or failed exactly once, and its result is stored once, before it counts",
  3: "failed attempts ≤ retries + 1 and lost attempts ≤ maxLost; a lost worker never consumes a failed attempt",
  4: "no connection waits while a job it can take is ready",
  5: "after the run is cancelled or done no lease is granted; once it is done no connection is left waiting",
  6: "the run and the rank groups end in time, every job completed or failed with a message",
  7: "no kind has more jobs running than its throttle",
  8: "verified teardown leaves nothing of the deployment alive",
  9: "no signal reaches a process outside the deployment",
  10: "the manifest exists until a verified teardown, which removes it with every control file",
  11: "a failing rank fails its group with its exit code",
  12: "the next launch's reaper kills a crashed launcher's orphans before launching",
  13: "stop() settles within the teardown's deadlines",
  14: "a live launcher gives its ranks up before they take it for dead",
  15: "your handlers' own checks hold (the tools' invariant)",
  16: "a job starts only once every job it runs after has completed, and gets their results",
  17: "a job fails only after its last attempt, maxLost lost workers or a failed dependency",
  18: "an attempt is stopped once it runs past its timeoutMs, and a retry waits out its backoff",
} as const;

/**
 * An invariant's number, as a violation names it (`SimViolation.invariant`).
 *
 * @example
 * ```ts
 * const report = await simulate({ seed: 7 });
 * if (report.violation) console.log(SIM_INVARIANTS[report.violation.invariant]); // what should have held
 * ```
 */
export type SimInvariant = keyof typeof SIM_INVARIANTS;

/** The rank groups' invariants: `baton sim` says so beside their number (`--world 0` draws none). */
export const RANK_GROUP_INVARIANTS: readonly SimInvariant[] = [8, 9, 10, 11, 12, 13, 14];

/**
 * The message of a broken invariant, one shape for every one of them: its number, what holds,
 * and what happened. Invariant 6 and those the runner checked itself used to give only what
 * happened ("the run is not over at …"), 8–13 what holds without the number.
 *
 * @example
 * ```ts
 * violationMessage(6, "the run is not over at 3000000 virtual ms");
 * // "invariant 6 (the run and the rank groups end in time, …) violated: the run is not over at 3000000 virtual ms"
 * ```
 */
export function violationMessage(invariant: SimInvariant, detail: string): string {
  return `invariant ${invariant} (${SIM_INVARIANTS[invariant]}) violated: ${detail}`;
}
