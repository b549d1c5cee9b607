import { DashboardServer, type TraceStep } from "../runtime/dashboardServer.ts";
import type { SimulateOptions, SimulationResult } from "../sim/simulate.ts";
import type { DashboardEvent } from "../viz/dashboardModel.ts";
import { groupFeed } from "../viz/groupProgress.ts";
import { inspectionFeed } from "../viz/inspectionFeed.ts";

/** What `recordSimulation` hands the simulation: its inspection observer and trace hook. */
export type ReplayHooks = Required<
  Pick<SimulateOptions, "inspect" | "onEvent" | "onGroupProgress">
>;

/**
 * Runs one simulation while recording what the dashboard needs: every inspection event and
 * every rank group's phases, folded into dashboard events and stamped with the virtual time of the latest trace line.
 *
 * @example
 * ```ts
 * const { result, trace } = await recordSimulation(42, (hooks) => simulate({ seed: 42, ...hooks }));
 * ```
 */
export async function recordSimulation(
  seed: number,
  simulateWith: (hooks: ReplayHooks) => Promise<SimulationResult>,
): Promise<{ result: SimulationResult; trace: TraceStep[] }> {
  let now = 0;
  const trace: TraceStep[] = [{ at: 0, event: { type: "run.started", run: `seed ${seed}` } }];
  const record = (event: DashboardEvent) => trace.push({ at: now, event });
  const groups = groupFeed(record);
  const result = await simulateWith({
    inspect: inspectionFeed(record),
    onGroupProgress: (progress) => groups.report(progress),
    onEvent: ({ at }) => {
      now = at;
    },
  });
  return { result, trace };
}

/**
 * `baton sim --replay S --ui`: simulates seed S, then serves the dashboard on its recorded
 * trace (a time slider and step buttons) until Ctrl-C. Returns the exit code: 0 when the
 * seed passed, 1 when it failed.
 *
 * @example
 * ```ts
 * return simDashboard(7, (hooks) => simulate({ seed: 7, ...hooks }), { port: 0 });
 * ```
 */
export async function simDashboard(
  seed: number,
  simulateWith: (hooks: ReplayHooks) => Promise<SimulationResult>,
  options: { port?: number } = {},
): Promise<number> {
  const { result, trace } = await recordSimulation(seed, simulateWith);
  const server = await DashboardServer.start({ replay: trace, ...options });
  const verdict = result.ok ? "pass" : `FAIL invariant ${result.violation!.invariant}`;
  process.stderr.write(
    `seed ${seed}: ${verdict}; ${trace.length} steps over ${result.virtualMs} virtual ms\ndashboard: ${server.url} (Ctrl-C to exit)\n`,
  );
  await new Promise((resolve) => process.once("SIGINT", resolve));
  await server.close();
  return result.ok ? 0 : 1;
}
