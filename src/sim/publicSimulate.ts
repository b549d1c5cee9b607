import type { SimulateOptions, SimulationResult } from "./simulate.ts";

/**
 * Runs the whole system — coordinator, workers, store — on simulated ports in virtual time,
 * from one seed: a graph (yours or one drawn from the seed), a fault plan (drawn from a
 * profile or given), DESIGN §4's invariants checked after every coordinator event and every
 * step, and a liveness bound once the faults are over. The same options give the same trace.
 * Beside the drawn graph, each seed also launches rank groups of up to `world` ranks (default
 * 4) with the real launcher and reaper on simulated processes (`ranks: false` leaves them
 * out); beside a graph of your own, only when you give `world` (or `ranks: true`).
 * Options no simulation can use (an unknown planted bug, a bad `until`, too many jobs) are a
 * `ConfigError` before anything runs. The simulator loads on the first call: a program that
 * imports baton and never simulates does not load it.
 *
 * @example
 * ```ts
 * const report = await simulate({ seed: 42, jobs: 50, workers: 4, faults: "heavy" });
 * if (!report.ok) console.log(report.violation, report.trace.slice(-20));
 *
 * // Your own graph and handlers:
 * const a = job("fetch", 1);
 * await simulate({
 *   seed: 1,
 *   graph: [job("parse", null, { after: [a] })],
 *   handlers: ({ sleep }) => ({ fetch: async (n) => { await sleep(50); return n; }, parse: () => 2 }),
 *   world: 8, // drawn rank groups of up to 8 ranks beside it (none without)
 * });
 * ```
 */
export async function simulate(options: SimulateOptions): Promise<SimulationResult> {
  return (await import("./simulate.ts")).simulate(options);
}
