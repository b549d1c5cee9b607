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
 * every rank group's phases, folded into dashboard events and stamped with the virtual time
 * of the latest trace line, and last the broken invariant, if one broke.
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
  // The simulation stops at the step that broke an invariant; its last trace line says so.
  if (result.violation) record({ type: "violation", ...result.violation });
  return { result, trace };
}

/**
 * `baton sim --replay S --ui`: opens the dashboard's port first (a port that is taken is an
 * error before the simulation, not after it), simulates seed S, hands the result to `report`
 * (the CLI prints the same verdict and failure report as without `--ui`), then serves the
 * dashboard on the recorded trace (a time slider and step buttons) until Ctrl-C. Returns the
 * exit code: 0 when the seed passed, 1 when it failed.
 *
 * @example
 * ```ts
 * return simDashboard(7, (hooks) => simulate({ seed: 7, ...hooks }), {
 *   port: 0,
 *   report: async (result) => console.log(result.ok ? "pass" : result.violation!.message),
 * });
 * ```
 */
export async function simDashboard(
  seed: number,
  simulateWith: (hooks: ReplayHooks) => Promise<SimulationResult>,
  options: { port?: number; report: (result: SimulationResult) => Promise<void> },
): Promise<number> {
  const server = await DashboardServer.start({ port: options.port ?? 0 });
  try {
    const { result, trace } = await recordSimulation(seed, simulateWith);
    await options.report(result);
    server.showReplay(trace);
    process.stderr.write(
      `seed ${seed}: ${trace.length} steps over ${result.virtualMs} virtual ms\ndashboard: ${server.url} (Ctrl-C to exit)\n`,
    );
    await new Promise((resolve) => process.once("SIGINT", resolve));
    return result.ok ? 0 : 1;
  } finally {
    await server.close();
  }
}
