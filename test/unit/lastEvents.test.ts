import { describe, expect, it } from "vitest";
import { LAST_EVENTS, lastEvents } from "../../src/cli/lastEvents.ts";

const A = "aaaaaaaaaaaaaaaa";
const B = "bbbbbbbbbbbbbbbb";
const O = "0000000000000000";

/** A trace of your own graph: A lost its worker and ran again, B failed the check; O is another job. */
const TRACE = [
  "0 start coordinator-0",
  "0 net sim:1 open coordinator-0 -> coordinator-0",
  "1 net sim:1 > client challenge",
  `1 grant ${A} (charge 1) to sim:1 attempt 1`,
  `1 job ${A} running`,
  `2 net sim:1 > client job ${A}`,
  `3 grant ${O} (other) to sim:2 attempt 1`,
  "900 fault reset sim:1 by client",
  "900 net sim:1 client closed 1006 connection reset",
  `900 job ${A} ready`,
  `900 grant ${A} (charge 1) to sim:3 attempt 2`,
  "950 fault reset sim:2 by client",
  "1000 net sim:4 open coordinator-0 -> coordinator-0",
  "1001 net sim:4 > client challenge",
  "1002 net sim:4 > server hello",
  "1003 net sim:4 > client welcome",
  `1700 net sim:3 > server result ${A} completed`,
  `1700 store ${A}`,
  `1700 job ${A} storing`,
  `1710 job ${A} completed`,
  `1800 net sim:2 > server result ${O} completed`,
  `1800 job ${O} completed`,
  "1800 net sim:1 client closed 1006 connection reset",
  `1900 grant ${B} (reconcile) to sim:4 attempt 1`,
  `1901 net sim:4 > client job ${B}`,
  `1901 violation 15: invariant 15 (…) violated: job ${B} (reconcile): order 1 charged 2 times`,
];
const VIOLATION = `invariant 15 (…) violated: job ${B} (reconcile): order 1 charged 2 times`;

describe("lastEvents", () => {
  it("shows your own graph's lines of the jobs the report follows, their connections and the faults, and counts the rest", () => {
    expect(lastEvents(TRACE, VIOLATION)).toEqual([
      "last 12 events of your jobs, their connections and the faults (14 other lines since 0 left out: its replay prints them all):",
      "  0 start coordinator-0",
      `  1 grant ${A} (charge 1) to sim:1 attempt 1`,
      "  900 fault reset sim:1 by client",
      "  900 net sim:1 client closed 1006 connection reset",
      `  900 job ${A} ready`,
      `  900 grant ${A} (charge 1) to sim:3 attempt 2`,
      // Every fault, another job's connection's too (but not that job's lines).
      "  950 fault reset sim:2 by client",
      `  1700 net sim:3 > server result ${A} completed`,
      `  1710 job ${A} completed`,
      // A connection a followed job ran on, after it; not another's handshake.
      "  1800 net sim:1 client closed 1006 connection reset",
      `  1900 grant ${B} (reconcile) to sim:4 attempt 1`,
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
