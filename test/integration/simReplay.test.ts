/**
 * A replay's dashboard (`baton sim --replay S --ui`) as the person chasing a race reads it:
 * a worker whose connection was lost and that connected again is one row per connection,
 * each labelled so that its rows are told apart, in the order they connected, and each row
 * names its connection as the trace and a violation do (`connection sim:2`).
 */
import { describe, expect, it } from "vitest";
import { recordSimulation } from "../../src/cli/simDashboard.ts";
import { simulate } from "../../src/sim/simulate.ts";

describe("a replay's dashboard", () => {
  it("labels a reconnected worker's connections apart, each by its worker and its connection", async () => {
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
      "connection:sim:1": "inproc-1 (connection sim:1)",
      "connection:sim:2": "inproc-2 (connection sim:2)",
      "connection:sim:3": "inproc-1 (connection sim:3, reconnect 1)",
      "connection:sim:4": "inproc-1 (connection sim:4, reconnect 2)",
    });
  });

  it("labels the workers a violation names by the connections it names", async () => {
    const { result, trace } = await recordSimulation(20, (hooks) =>
      simulate({ seed: 20, plantedBugs: ["lease-running-job"], ...hooks }),
    );
    const message = result.violation?.message ?? "";
    const named = [...message.matchAll(/connection (sim:\d+)/g)].map((m) => m[1]);
    expect(named).toHaveLength(2);
    const labels = new Set<string>();
    for (const { event } of trace) {
      if (event.type === "actor" && event.machine === "connection") labels.add(event.label);
    }
    for (const conn of named) {
      const rows = [...labels].filter((label) => label.includes(`connection ${conn}`));
      expect(rows, `a row for connection ${conn}`).toHaveLength(1);
      expect(rows[0]).toMatch(/^inproc-\d+ /);
    }
  });
});
