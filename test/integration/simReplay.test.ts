/**
 * A replay's dashboard (`baton sim --replay S --ui`) as the person chasing a race reads it:
 * a worker whose connection was lost and that connected again is one row per connection,
 * each labelled so that its rows are told apart, in the order they connected.
 */
import { describe, expect, it } from "vitest";
import { recordSimulation } from "../../src/cli/simDashboard.ts";
import { simulate } from "../../src/sim/simulate.ts";

describe("a replay's dashboard", () => {
  it("labels a reconnected worker's connections apart: inproc-1, inproc-1 (connection 2), …", async () => {
    // Seed 3 resets inproc-1's connection at 4721 ms and cuts its next one at 11366 ms.
    const { trace } = await recordSimulation(3, (hooks) =>
      simulate({ seed: 3, jobs: 10, workers: 2, ranks: false, ...hooks }),
    );
    const labels = new Map<string, string>();
    for (const { event } of trace) {
      if (event.type === "actor" && event.machine === "connection" && event.label !== event.id)
        labels.set(event.id, event.label);
    }
    expect(Object.fromEntries(labels)).toEqual({
      "connection:sim:1": "inproc-1",
      "connection:sim:2": "inproc-2",
      "connection:sim:3": "inproc-1 (connection 2)",
      "connection:sim:4": "inproc-1 (connection 3)",
    });
  });
});
