import { TeardownError } from "../errors.ts";
import type { TeardownReport } from "./tearDown.ts";

/**
 * One deployment's teardown on every host it runs on: the local teardown and each remote
 * host's at once, verified only when every one is. The first failure is thrown (a
 * `TeardownError`, or a `RemoteHostError` for a host that could not be reached: nothing is
 * verified then). One case is retried: when every remote host is verified but the local
 * teardown is not, it runs once more, because a "remote" host may be this very machine (a
 * loopback or a second account), whose ranks carry the deployment and are seen by the local
 * final scan while their own host's teardown is still under way. The reports are merged:
 * the longest time, every step, every swept pid and every other process signalled.
 *
 * @example
 * ```ts
 * const report = await tearDownAcrossHosts(
 *   () => tearDown(localTarget, ports),
 *   sites.map((site) => () => site.tearDown(pidsOn(site))),
 * );
 * ```
 */
export async function tearDownAcrossHosts(
  local: () => Promise<TeardownReport>,
  remotes: readonly (() => Promise<TeardownReport>)[],
): Promise<TeardownReport> {
  const [here, ...there] = await Promise.allSettled([local(), ...remotes.map((run) => run())]);
  const reports: TeardownReport[] = [];
  for (const outcome of there) {
    if (outcome.status === "rejected") throw outcome.reason;
    reports.push(outcome.value);
  }
  if (here?.status === "fulfilled") return merge(here.value, reports);
  const reason = here?.reason;
  if (!(reason instanceof TeardownError) || remotes.length === 0) throw reason;
  return merge(await local(), reports);
}

function merge(local: TeardownReport, remote: TeardownReport[]): TeardownReport {
  return {
    ...local,
    elapsedMs: Math.max(local.elapsedMs, ...remote.map((report) => report.elapsedMs)),
    steps: [...local.steps, ...remote.flatMap((report) => report.steps)],
    swept: [...local.swept, ...remote.flatMap((report) => report.swept)],
    others: [...local.others, ...remote.flatMap((report) => report.others)],
  };
}
