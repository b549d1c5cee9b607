import { argumentError } from "../argumentError.ts";
import { ConfigError } from "../errors.ts";
import { requireDeploymentIdentity } from "../rank/requireDeploymentIdentity.ts";
import { requireObject } from "../requireObject.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import { requireOptionalSignal } from "../requireOptionalSignal.ts";
import { checkTeardownTimeouts } from "./checkTeardownTimeouts.ts";
import type { RemoteTeardownPorts, RemoteTeardownTarget } from "./remoteTeardown.ts";
import { requireMethods } from "./requireMethods.ts";
import { requireSshHost } from "./requireSshHost.ts";
import { requireTimerClock } from "./requireTimerClock.ts";
import { requireWhole } from "./requireWhole.ts";
import type { TeardownPorts, TeardownTarget } from "./tearDown.ts";

const isPid = (value: unknown): boolean => Number.isInteger(value) && (value as number) > 0;

/** The methods of a Procs a teardown calls, which `tearDown` and `reapDeployments` check. */
export const TEARDOWN_PROCS_METHODS = ["list", "inspect", "environ", "signal", "signalGroup"];

/** What a teardown's process table is: its name among the ports, its methods, and an example. */
interface TableShape {
  name: "procs" | "table";
  methods: readonly string[];
  what: string;
}

/**
 * What `tearDown` and `tearDownRemote` both refuse of a target: no object, no deployment and
 * absolute state dir, `lists` that are no lists, no `sweepCandidates()`, a `heldByAnother`
 * that is no function.
 */
function requireTarget(
  where: string,
  target: unknown,
  shape: string,
  lists: readonly ("groups" | "pids")[],
): void {
  requireObject(where, "target", shape, target);
  const fields = target as Record<string, unknown>;
  requireDeploymentIdentity(where, "target", target);
  for (const name of lists) {
    const list = fields[name];
    if (!Array.isArray(list)) {
      throw argumentError(where, `target.${name}`, "a list of process ids ([] for none)", list);
    }
  }
  requireMethods(
    where,
    "target",
    target,
    ["sweepCandidates"],
    "a TeardownTarget, whose sweepCandidates() gives the pids in the deployment's markers (markerPids)",
  );
  requireOptionalFunction(where, "target.heldByAnother", "async () => …", fields.heldByAnother);
}

/**
 * What `tearDown` and `tearDownRemote` both refuse of their ports and timeouts: ports that are
 * no object, a process table without the methods the teardown calls, no Clock, a logger
 * without `debug`, a `hurry` that is no `AbortSignal`, timeouts it does not know.
 */
function requirePortsAndTimeouts(
  where: string,
  ports: unknown,
  shape: string,
  table: TableShape,
  timeouts: unknown,
): void {
  requireObject(where, "ports", shape, ports);
  const { clock, logger, hurry } = ports as Partial<TeardownPorts>;
  const given = (ports as Record<string, unknown>)[table.name];
  requireMethods(where, `ports.${table.name}`, given, table.methods, table.what);
  requireTimerClock(where, "ports.clock", clock);
  if (logger !== undefined)
    requireMethods(where, "ports.logger", logger, ["debug"], "a pino logger");
  requireOptionalSignal(where, "ports.hurry", hurry);
  checkTeardownTimeouts(where, "timeouts", timeouts);
}

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
  requireTarget(
    where,
    target,
    "the rank group to tear down, { deployment, stateDir, groups, pids, sweepCandidates, forbiddenGroups }",
    ["groups", "pids"],
  );
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
  if (!(target.forbiddenGroups instanceof Set)) {
    throw argumentError(
      where,
      "target.forbiddenGroups",
      "a Set of the groups never to signal (new Set<number>())",
      target.forbiddenGroups,
    );
  }
  if (target.launcherPid !== undefined && !isPid(target.launcherPid)) {
    throw argumentError(where, "target.launcherPid", "a pid, or undefined", target.launcherPid);
  }
  requirePortsAndTimeouts(
    where,
    ports,
    "{ procs, clock }, such as { procs: nodeProcs(), clock: nodeClock() }",
    { name: "procs", methods: TEARDOWN_PROCS_METHODS, what: "a Procs, such as nodeProcs()" },
    timeouts,
  );
}

/**
 * Refuses, with a `ConfigError`, what `tearDownRemote` cannot take as a JavaScript caller may
 * give it, before the host is asked anything: what `tearDown` refuses of its target (but
 * `groups` and `forbiddenGroups`, which a remote teardown has not), `pids` that are no
 * positive whole numbers (refused by the host's script only once the teardown had begun), a
 * `table` that is no `RemoteProcs` of a host, and ports and timeouts as `tearDown`'s.
 *
 * @example
 * ```ts
 * checkRemoteTeardownArguments(target, { table: remoteProcs, clock: nodeClock() }, {});
 * // ConfigError: tearDownRemote: ports.table must be a RemoteProcs, such as remoteProcs(host); it has no snapshot()
 * ```
 */
export function checkRemoteTeardownArguments(
  target: RemoteTeardownTarget,
  ports: RemoteTeardownPorts,
  timeouts: unknown,
): void {
  const where = "tearDownRemote";
  requireTarget(
    where,
    target,
    "the ranks to tear down on one host, { deployment, stateDir, pids, sweepCandidates }",
    ["pids"],
  );
  for (const [i, pid] of target.pids.entries()) requireWhole(where, `target.pids[${i}]`, pid);
  requirePortsAndTimeouts(
    where,
    ports,
    "{ table, clock }, such as { table: remoteProcs(host), clock: nodeClock() }",
    {
      name: "table",
      methods: ["snapshot", "signalIfOwned"],
      what: "a RemoteProcs, such as remoteProcs(host)",
    },
    timeouts,
  );
  requireSshHost(where, "ports.table.host", ports.table.host, []);
}
