import { teardownDeadlineMs as deadlineOf, type TeardownTimeouts } from "../machines/teardown.ts";
import { checkTeardownTimeouts } from "./checkTeardownTimeouts.ts";

/**
 * The longest a teardown can wait: the sum of its deadlines, the sweep's KILL wait once for
 * each KILL it may send (`MOST_SWEEP_KILLS`). Probes, signals and reading the markers come on
 * top. It takes every timeout, not overrides of the defaults: one left out, or one that is no
 * number of ms of 0 or more, is a `ConfigError` (`teardownDeadlineMs({ termGraceMs: 30_000 })`
 * was `NaN`).
 *
 * @example
 * ```ts
 * teardownDeadlineMs(DEFAULT_TEARDOWN_TIMEOUTS); // 23000
 * teardownDeadlineMs({ ...DEFAULT_TEARDOWN_TIMEOUTS, termGraceMs: 30_000 }); // 43000
 * ```
 */
export function teardownDeadlineMs(timeouts: TeardownTimeouts): number {
  checkTeardownTimeouts("teardownDeadlineMs", "timeouts", timeouts, true);
  return deadlineOf(timeouts);
}
