/**
 * Model-based property of the coordinator (DESIGN §4, invariants 1–6): random graphs and
 * workers (some jobs with attempt timeouts), random interleavings of leases, results, lost
 * workers, late results, heartbeats, clock ticks, cancel and shutdown, driven against the real
 * actor on a simulated clock, with the invariant checker after every step and a liveness phase
 * at the end.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 1000). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH (passed to fc.check as
 * `seed` and `path`), and BATON_PROPERTY_REPLAY_PATH (the commands' `replayPath`).
 */
import fc from "fast-check";
import { describe, it } from "vitest";
import {
  coordinatorProperty,
  propertyParameters,
  propertyTimeoutMs,
  replayReport,
} from "./coordinatorModel.ts";

describe("coordinator under random interleavings", () => {
  it(
    "keeps invariants 1–5 after every step and always finishes",
    () => {
      const details = fc.check(coordinatorProperty(), propertyParameters());
      if (details.failed) throw new Error(replayReport(details));
    },
    propertyTimeoutMs,
  );
});
