/**
 * CI's simulation run: 2,000 seeds of the default fault profile and 400 of the heavy one
 * (which alone draws `disk-full`), each a drawn graph of 8 jobs on 3 workers, must all keep
 * the invariants and finish. `npm run sim:long` runs 20,000 of the full size. A failure names
 * the seed and the command that replays it. About 30 ms of CPU per seed here (a minute for
 * the 2,000); the timeout leaves room for a machine shared with other work.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type FaultProfile, formatFaults } from "../../src/sim/faultPlan.ts";
import { simulate } from "../../src/sim/simulate.ts";
import { ROOT } from "../fixtures/batonCli.ts";

const SEEDS = Number(process.env.BATON_SIM_SEEDS ?? 2000);
const JOBS = 8;
const WORKERS = 3;
/** The command's path in a failure's replay command: absolute, to paste from any folder. */
const BATON = join(ROOT, "bin", "baton.js");
const RUNS: [FaultProfile, number][] = [
  ["default", SEEDS],
  ["heavy", Math.ceil(SEEDS / 5)],
];

describe("the whole system under faults", () => {
  it.each(RUNS)(
    "keeps every invariant and finishes under %s faults for %i seeds",
    async (faults, seeds) => {
      const started = performance.now();
      const failures: string[] = [];
      for (let seed = 1; seed <= seeds; seed++) {
        const r = await simulate({ seed, jobs: JOBS, workers: WORKERS, faults });
        if (!r.ok) {
          failures.push(
            `seed ${seed}: ${r.violation!.message}\n  faults: ${formatFaults(r.faults)}\n  replay: node ${BATON} sim --replay ${seed} --jobs ${JOBS} --workers ${WORKERS} --faults ${faults} --trace`,
          );
        }
      }
      const seconds = (performance.now() - started) / 1000;
      console.log(
        `${seeds} ${faults} seeds in ${seconds.toFixed(1)} s (${(seeds / seconds).toFixed(1)} seeds/s)`,
      );
      expect(failures).toEqual([]);
    },
    600_000,
  );
});
