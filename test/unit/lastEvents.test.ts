import { describe, expect, it } from "vitest";
import { LAST_EVENTS, lastEvents } from "../../src/cli/lastEvents.ts";
import { A, B, TRACE, VIOLATION } from "../fixtures/yourJobsTrace.ts";

describe("lastEvents", () => {
  it("shows your own graph's lines of the jobs the report follows, their connections and the faults, and counts the rest", () => {
    expect(lastEvents(TRACE, VIOLATION)).toEqual([
      "last 17 events of your jobs, their connections and the faults (8 other lines since 0 left out: its replay prints them all):",
      "  0 start coordinator-0",
      `  1 grant ${A} (charge 1) to sim:1 attempt 1`,
      "  500 fault slow +100 ms for 2000 ms",
      "  900 fault reset sim:1 by client",
      "  900 net sim:1 client closed 1006 connection reset",
      // Not a frame on a connection a followed job ran on.
      `  900 job ${A} ready`,
      `  900 grant ${A} (charge 1) to sim:2 attempt 2`,
      "  950 fault half-open sim:1: server gone, peer unaware",
      `  1200 # ${A} (charge) attempt 1: its handler ended 300 ms after its abort (connection closed)`,
      "  1500 fault coordinator-crash coordinator-0, back in 100 ms",
      "  1600 start coordinator-1",
      `  1700 net sim:3 > server result ${A} completed`,
      `  1710 job ${A} completed`,
      "  1800 fault reset sim:2 by server",
      "  1800 net sim:2 server closed 1006 connection reset",
      // Not another job's lines (C's ready).
      `  1900 grant ${B} (reconcile) to sim:3 attempt 1`,
      `  1901 violation 15: invariant 15 (…) violated: job ${B} (reconcile): order 1 charged 2 times`,
    ]);
  });

  it(`shows the last ${LAST_EVENTS} of them, counting the lines left out since the first shown`, () => {
    const frames = Array.from({ length: 40 }, (_, n) => [
      `${n + 10} fault slow +1 ms for 1 ms`,
      `${n + 10} net sim:9 > client ping`,
    ]).flat();
    const events = lastEvents([...TRACE.slice(0, -1), ...frames, TRACE.at(-1)!], VIOLATION);
    expect(events[0]).toBe(
      `last ${LAST_EVENTS} events of your jobs, their connections and the faults (29 other lines since 21 left out: its replay prints them all):`,
    );
    expect(events.slice(1)).toEqual([
      ...frames
        .filter((line) => line.includes("fault"))
        .slice(-29)
        .map((line) => `  ${line}`),
      `  ${TRACE.at(-1)}`,
    ]);
  });

  it("shows a drawn graph's last lines, all of them (no violation given), as it does your graph's with no job followed", () => {
    const heading = `last ${LAST_EVENTS} events:`;
    expect(lastEvents(TRACE)).toEqual([heading, ...TRACE.slice(-LAST_EVENTS).map((l) => `  ${l}`)]);
    const ungranted = TRACE.filter((line) => !line.includes(" grant "));
    expect(lastEvents(ungranted, VIOLATION)).toEqual([heading, ...ungranted.map((l) => `  ${l}`)]);
  });
});
