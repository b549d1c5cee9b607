/**
 * Model-based property of verified teardown (DESIGN §4 teardown, issue 4) over simulated
 * processes: for any schedule of exits, ignored TERM, KILL survivors, D-state, zombies, EPERM
 * and pid reuse, with or without a second Ctrl-C (`HURRY`) at any moment, teardown ends verified
 * exactly when no process of the deployment is alive, never signals anything outside the
 * deployment, never signals a group again after EPERM, never runs longer than the sum of its
 * deadlines, and once hurried waits no longer than its KILL waits. The planted bug
 * `teardown-trusts-single-kill` must be caught within the same number of runs.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 300). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyParameters, throwIfFailed } from "../fixtures/propertyRun.ts";
import { propertyRuns, propertyTimeoutMs, teardownProperty } from "./teardownModel.ts";

describe("teardown under random process behaviour", () => {
  it(
    "is verified exactly when nothing of the deployment lives, and touches nothing else",
    async () => {
      const details = await fc.check(teardownProperty(), propertyParameters(propertyRuns));
      throwIfFailed(details, import.meta.url);
    },
    propertyTimeoutMs,
  );

  it(
    "catches the planted bug teardown-trusts-single-kill",
    async () => {
      const details = await fc.check(teardownProperty(["teardown-trusts-single-kill"]), {
        numRuns: propertyRuns,
        endOnFailure: true,
      });
      expect(details.failed).toBe(true);
      expect(String(details.errorInstance)).toMatch(/verified is true while [1-9]\d* processes/);
    },
    propertyTimeoutMs,
  );
});
