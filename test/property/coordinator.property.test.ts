/**
 * Model-based property of the coordinator (DESIGN §4, invariants 1–6, and 16–18 of
 * SIM_INVARIANTS): random graphs and
 * workers (some jobs with attempt timeouts), random interleavings of leases, results, lost
 * workers, late results, heartbeats, clock ticks, cancel and shutdown, driven against the real
 * actor on a simulated clock, with the invariant checker after every step and a liveness phase
 * at the end; a second property makes cancel and shutdown frequent, so that they race the rest.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 1000). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH (passed to fc.check as
 * `seed` and `path`), and BATON_PROPERTY_REPLAY_PATH (the commands' `replayPath`).
 */
import fc from "fast-check";
import { describe, it } from "vitest";
import { propertyParameters, throwIfFailed } from "../fixtures/propertyRun.ts";
import { coordinatorProperty, propertyRuns, propertyTimeoutMs } from "./coordinatorModel.ts";

/**
 * Cancel and shutdown as often as this (the other steps weigh 1 to 480): about ten times as
 * many of them meet a result being stored, a running job, a blocked answer or a lost holder.
 */
const OPERATOR_WEIGHT = 24;

describe("coordinator under random interleavings", () => {
  const steady = "keeps invariants 1–5 and 16–18 after every step and always finishes";
  it(
    steady,
    () => {
      const details = fc.check(coordinatorProperty(), propertyParameters(propertyRuns));
      throwIfFailed(details, import.meta.url, steady);
    },
    propertyTimeoutMs,
  );

  const racing = "keeps them with cancel and shutdown at any moment, racing the rest";
  it(
    racing,
    () => {
      const details = fc.check(
        coordinatorProperty([], { operatorWeight: OPERATOR_WEIGHT }),
        propertyParameters(propertyRuns),
      );
      throwIfFailed(details, import.meta.url, racing);
    },
    propertyTimeoutMs,
  );
});
