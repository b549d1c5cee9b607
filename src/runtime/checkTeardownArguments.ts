import { argumentError } from "../argumentError.ts";
import { ConfigError } from "../errors.ts";
import { requireDeploymentIdentity } from "../rank/requireDeploymentIdentity.ts";
import { requireObject } from "../requireObject.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import { requireOptionalSignal } from "../requireOptionalSignal.ts";
import { checkTeardownTimeouts } from "./checkTeardownTimeouts.ts";
import { requireMethods } from "./requireMethods.ts";
import { requireTimerClock } from "./requireTimerClock.ts";
import type { TeardownPorts, TeardownTarget } from "./tearDown.ts";

const isPid = (value: unknown): boolean => Number.isInteger(value) && (value as number) > 0;

/** The methods of a Procs a teardown calls, which `tearDown` and `reapDeployments` check. */
export const TEARDOWN_PROCS_METHODS = ["list", "inspect", "environ", "signal", "signalGroup"];

/**
 * Refuses, with a `ConfigError`, what `tearDown` cannot take as a JavaScript caller may give it,
 * before anything is signalled: a target that is no object, no deployment and absolute state
 * dir (`requireDeploymentIdentity`: a relative one made the deployment's own processes
 * strangers), `groups` or `pids` that are no lists of process ids, no `sweepCandidates()`,
 * `forbiddenGroups` that is no `Set`; ports without the methods it calls; timeouts it does not
 * know (`checkTeardownTimeouts`). Each was a TypeError from inside (`target.groups.find is not a
 * function`), or a rejection from the machine after it had started.
 *
 * @example
 * ```ts
 * checkTeardownArguments({ ...target, pids: [0] }, ports, {});
 * // ConfigError: cannot tear down dep-1: pid 0 is not a process of a rank (groups are integers above 1, pids positive integers)
 * ```
 */
export function checkTeardownArguments(
  target: TeardownTarget,
  ports: TeardownPorts,
  timeouts: unknown,
): void {
  const where = "tearDown";
  requireObject(
    where,
    "target",
    "the rank group to tear down, { deployment, stateDir, groups, pids, sweepCandidates, forbiddenGroups }",
    target,
  );
  requireDeploymentIdentity(where, "target", target);
  for (const name of ["groups", "pids"] as const) {
    if (!Array.isArray(target[name])) {
      throw argumentError(
        where,
        `target.${name}`,
        "a list of process ids ([] for none)",
        target[name],
      );
    }
  }
  const { deployment } = target;
  const badGroup = target.groups.find((pgid) => !Number.isInteger(pgid) || pgid <= 1);
  const badPid = target.pids.find((pid) => !isPid(pid));
  if (badGroup !== undefined || badPid !== undefined) {
    throw new ConfigError(
      `cannot tear down ${deployment}: ${
        badGroup !== undefined ? `process group ${badGroup}` : `pid ${badPid}`
      } is not a process of a rank (groups are integers above 1, pids positive integers)`,
    );
  }
  requireMethods(
    where,
    "target",
    target,
    ["sweepCandidates"],
    "a TeardownTarget, whose sweepCandidates() gives the pids in the deployment's markers (markerPids)",
  );
  if (!(target.forbiddenGroups instanceof Set)) {
    throw argumentError(
      where,
      "target.forbiddenGroups",
      "a Set of the groups never to signal (new Set<number>())",
      target.forbiddenGroups,
    );
  }
  requireOptionalFunction(where, "target.heldByAnother", "async () => …", target.heldByAnother);
  if (target.launcherPid !== undefined && !isPid(target.launcherPid)) {
    throw argumentError(where, "target.launcherPid", "a pid, or undefined", target.launcherPid);
  }
  requireObject(
    where,
    "ports",
    "{ procs, clock }, such as { procs: nodeProcs(), clock: nodeClock() }",
    ports,
  );
  requireMethods(
    where,
    "ports.procs",
    ports.procs,
    TEARDOWN_PROCS_METHODS,
    "a Procs, such as nodeProcs()",
  );
  requireTimerClock(where, "ports.clock", ports.clock);
  requireOptionalSignal(where, "ports.hurry", ports.hurry);
  checkTeardownTimeouts(where, "timeouts", timeouts);
}
