/**
 * Rank groups in the simulation: the real launchGroup and reaper on simulated processes,
 * files and clock. Many seeds keep every rank-group invariant and end; the seeds do reach the
 * faults the scenario draws (failing ranks, unverified teardowns, launcher crashes and the
 * reaper's work); and one seed gives one trace.
 */
import { describe, expect, it } from "vitest";
import { simulate } from "../../src/sim/simulate.ts";

const SEEDS = Number(process.env.BATON_SIM_GROUP_SEEDS ?? 300);
/** A small engine beside the groups: the groups are what this test is about. */
const SMALL = { jobs: 2, workers: 1, faults: "none" as const };

describe("rank groups in the simulation", () => {
  it(`keep every invariant and end for ${SEEDS} seeds, through the faults they draw`, async () => {
    const failures: string[] = [];
    const seen = {
      ready: 0,
      rankFailed: 0,
      unverified: 0,
      stranger: 0,
      crashed: 0,
      relaunched: 0,
      contained: 0,
      helperClearedItsEnv: 0,
    };
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = await simulate({ seed, ...SMALL });
      if (!r.ok) {
        failures.push(
          `seed ${seed}: invariant ${r.violation!.invariant}: ${r.violation!.message}\n  replay: node bin/baton.js sim --replay ${seed} --jobs 2 --workers 1 --faults none --trace`,
        );
        continue;
      }
      const lines = r.trace.filter((line) => line.includes(" ranks "));
      expect(lines.filter((line) => / ranks over$/.test(line))).toHaveLength(1);
      const has = (pattern: RegExp) => (lines.some((line) => pattern.test(line)) ? 1 : 0);
      seen.crashed += has(/ crashed/);
      seen.relaunched += has(/ launch 2 /);
      seen.rankFailed += has(/ RANK_FAILED rank /);
      seen.unverified += has(/ teardown unverified/);
      seen.stranger += has(/ a stranger/);
      seen.ready += has(/ ready$/);
      seen.contained += has(/ contained: /);
      seen.helperClearedItsEnv += has(/"clearEnv":true/);
    }
    expect(failures).toEqual([]);
    for (const [what, count] of Object.entries(seen)) {
      expect(count, `seeds where the scenario saw: ${what}`).toBeGreaterThan(0);
    }
  }, 600_000);

  it("gives the same trace for the same seed, and another for another", async () => {
    const a = await simulate({ seed: 61, ...SMALL });
    const b = await simulate({ seed: 61, ...SMALL });
    const c = await simulate({ seed: 62, ...SMALL });
    expect(a.trace.filter((line) => line.includes(" ranks launch ")).length).toBeGreaterThan(0);
    expect(b.trace).toEqual(a.trace);
    expect(b.traceHash).toBe(a.traceHash);
    expect(c.traceHash).not.toBe(a.traceHash);
  });

  it("leaves rank groups out with ranks: false", async () => {
    const r = await simulate({ seed: 61, ...SMALL, ranks: false });
    expect(r.ok).toBe(true);
    expect(r.trace.some((line) => line.includes(" ranks "))).toBe(false);
  });
});
