import type { Logger } from "pino";
import type { InspectionEvent } from "xstate";
import { envCarries } from "../machines/carriesDeployment.ts";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import type {
  OtherProcess,
  ProcView,
  TeardownEffect,
  TeardownEvent,
  TeardownTimeouts,
} from "../machines/teardown.ts";
import type { Overrides } from "../overrides.ts";
import { checkTeardownArguments } from "./checkTeardownArguments.ts";
import { driveTeardown, sweepCandidatesEvent } from "./driveTeardown.ts";
import type { Clock, ProcInfo, Procs } from "./ports.ts";
import { withEnviron } from "./withEnviron.ts";

export {
  DEFAULT_TEARDOWN_TIMEOUTS,
  type TeardownTimeouts,
  teardownDeadlineMs,
} from "../machines/teardown.ts";

/** The rank group to tear down, as its launcher (or the reaper) knows it. */
export interface TeardownTarget {
  deployment: string;
  /**
   * The deployment's root state dir, absolute and resolved, as its ranks got it in
   * `BATON_STATE_DIR`: a process of the same name from another state dir is not signalled.
   */
  stateDir: string;
  /** Process group ids of the ranks. */
  groups: number[];
  /** Rank pids the launcher knows. */
  pids: number[];
  /** Pids found in the deployment's markers; read once, when the sweep starts. */
  sweepCandidates(): Promise<number[]>;
  /**
   * Asked when the sweep starts, before the markers: who holds the deployment's name now,
   * when another launcher took it over (a launcher's lease that went stale while it lived);
   * then there is no sweep, and the final check looks at `groups` and `pids` alone.
   */
  heldByAnother?: (() => Promise<string | undefined>) | undefined;
  /**
   * The pid the ranks carry in `BATON_LAUNCHER_PID`, for a launcher's own teardown here: a
   * process naming another launcher there is never signalled, and once the name is another's
   * (`heldByAnother`) the sweep still stops what names this one (a rank's `setsid` child).
   */
  launcherPid?: number | undefined;
  /** Groups that answered EPERM once: never signalled again. Mutated by tearDown. */
  forbiddenGroups: Set<number>;
  /**
   * The deployment's cgroup (see `Containment`), when its ranks were started in one: every
   * live member is the deployment's, and the final check finds each.
   */
  cgroup?: string | undefined;
}

/** What a verified teardown did. */
export interface TeardownReport {
  verified: true;
  deployment: string;
  /** From the call to the verdict, on the Clock port. */
  elapsedMs: number;
  /** What happened, one line per step, each prefixed with the time since the start. */
  steps: string[];
  /** Pids the marker sweep signalled (after checking each still carried the deployment). */
  swept: number[];
  /**
   * The ranks' pids (the target's `pids`) the teardown signalled while they were alive: the
   * ranks it stopped, apart from ranks that had exited on their own. This machine's only: a
   * report merged across ssh hosts keeps the local one's.
   */
  stopped: number[];
  /**
   * The processes other than the ranks that it signalled, each as it was then (its command
   * line, its group, its environment's `RANK`): a rank's children in the rank's process group,
   * and what the sweep found outside (`swept`). A report merged across ssh hosts has every
   * host's, each remote one with its `host`.
   */
  others: ReportedOther[];
  /** Groups never to signal again, including any that answered EPERM during this call. */
  forbiddenGroups: number[];
}

/** A process other than the ranks that a teardown signalled; `host` is its ssh host's spec, if remote. */
export type ReportedOther = OtherProcess & { host?: string };

/** The ports teardown acts through; `plantedBugs` only in tests and the simulation. */
export interface TeardownPorts {
  procs: Procs;
  clock: Clock;
  logger?: Logger | undefined;
  plantedBugs?: readonly PlantedBug[] | undefined;
  /** Sees the teardown machine's inspection events (a launch's `inspect`: its dashboard, its report). */
  inspect?: ((event: InspectionEvent) => void) | undefined;
  /** Once aborted, no more waiting for TERM: KILL at once, still verified (a second Ctrl-C). */
  hurry?: AbortSignal | undefined;
}

/**
 * The probe's answer: the requested processes of the table, each live one with its
 * environment (the machine never looks at the environment of a zombie or a dead entry) and,
 * with a cgroup, whether it is in it: the sweep's scan of the whole table then finds a
 * descendant that left its rank's group and emptied its environment. The cgroup's members
 * are read only when a live process of the answer is not the deployment's by its environment
 * (membership could make it so): a quick look at ranks that still carry their environment,
 * or that are all gone, reads no cgroup. A live entry's state is read again after its
 * environment, as `remoteProcs.snapshot` reads it last: a process that ended while its
 * environment was read (gone, unreadable, or empty as an exiting process shows it) is then
 * gone or a zombie, not alive with an environment that is not its own; one still running its
 * exit then (`exiting`) is alive with its environment unknown (undefined), never empty.
 */
export function readTable(
  procs: Procs,
  effect: Extract<TeardownEffect, { type: "probe" }>,
  target: TeardownTarget,
): ProcView[] {
  const { cgroup } = target;
  // `argv` stays a getter (no spread): nodeProcs reads a process's arguments when used.
  const view = (info: ProcInfo, env: Record<string, string> | undefined): ProcView => ({
    pid: info.pid,
    ppid: info.ppid,
    pgid: info.pgid,
    state: info.state,
    ...(info.exiting === true && { exiting: true }),
    ...(info.name !== undefined && { name: info.name }),
    get argv() {
      return info.argv;
    },
    env,
  });
  const read = (listed: ProcInfo): ProcView[] => {
    const seen = withEnviron(procs, listed);
    return seen === undefined ? [] : [view(seen.info, seen.env)];
  };
  const groups = new Set(effect.groups);
  const pids = new Set(effect.pids);
  const table =
    !effect.scan && effect.groups.length === 0
      ? effect.pids.flatMap((pid) => {
          const info = procs.inspect(pid);
          return info === undefined ? [] : read(info);
        })
      : procs
          .list()
          .filter((info) => effect.scan || groups.has(info.pgid) || pids.has(info.pid))
          .flatMap(read);
  const undecided = table.filter(
    (proc) => proc.state !== "zombie" && proc.state !== "dead" && !envCarries(proc.env, target),
  );
  if (cgroup === undefined || undecided.length === 0) return table;
  const contained = new Set(procs.containment?.members(cgroup) ?? []);
  for (const proc of undecided) if (contained.has(proc.pid)) proc.contained = true;
  return table;
}

/**
 * Verified teardown of a rank group (DESIGN §4): runs the teardown machine with the Clock port
 * as XState's clock and carries out what it asks through the Procs port — TERM, grace, KILL,
 * KILL again, the marker sweep (each pid signalled only if it still carries the deployment),
 * and a final check of the process table, probing liveness a few milliseconds after each
 * signal and then at most `pollMs` apart, so that each wait ends as soon as the group is gone. Resolves with a report when nothing of the deployment is
 * alive; otherwise throws {@link TeardownError} naming the survivors and their states. It
 * keeps no state of its own: calling it again with the same target retries from the start,
 * and `target.forbiddenGroups` (groups that answered EPERM) carries over between attempts.
 * Steps are logged at debug. A target, ports or timeouts it cannot take (a relative state dir,
 * a pid of 0, a Procs without `signalGroup`, a timeout it does not know) reject with a
 * `ConfigError` before anything is signalled (`checkTeardownArguments`).
 *
 * @example
 * ```ts
 * const deployment = "dep-0123456789ab";
 * const stateDir = "/srv/app/.baton/run";
 * const pids = [4711, 4712]; // its ranks, each the leader of its own process group
 * const target = {
 *   deployment,
 *   stateDir,
 *   groups: pids,
 *   pids,
 *   sweepCandidates: () =>
 *     markerPids(nodeFiles(), deploymentPaths(stateDir, deployment), { deployment, stateDir }),
 *   forbiddenGroups: new Set<number>(),
 * };
 * const report = await tearDown(target, { procs: nodeProcs(), clock: nodeClock() }, { termGraceMs: 5000 });
 * console.log(`verified in ${report.elapsedMs} ms`);
 * ```
 */
export function tearDown(
  target: TeardownTarget,
  ports: TeardownPorts,
  timeouts: Overrides<TeardownTimeouts> = {},
): Promise<TeardownReport> {
  try {
    checkTeardownArguments(target, ports, timeouts);
  } catch (error) {
    return Promise.reject(error);
  }
  const { procs, clock, logger } = ports;
  const { deployment } = target;
  return driveTeardown({
    input: {
      deployment,
      stateDir: target.stateDir,
      groups: target.groups,
      pids: target.pids,
      forbiddenGroups: [...target.forbiddenGroups],
      selfPid: procs.selfPid,
      launcherPid: target.launcherPid,
      timeouts,
      plantedBugs: ports.plantedBugs,
    },
    clock,
    logger,
    ...(ports.inspect !== undefined && { inspect: ports.inspect }),
    hurry: ports.hurry,
    start: `groups ${target.groups.join(", ") || "none"}, pids ${target.pids.join(", ") || "none"}`,
    perform(effects, send, step) {
      for (const effect of effects) perform(effect, send, step);
      return undefined;
    },
  });

  /** One effect, carried out at once: a probe's answer reaches the machine before any signal. */
  function perform(
    effect: TeardownEffect,
    send: (event: TeardownEvent) => void,
    step: (text: string) => void,
  ): void {
    switch (effect.type) {
      case "probe":
        send({ type: "TABLE", seq: effect.seq, procs: readTable(procs, effect, target) });
        return;
      case "signalGroup":
        send({
          type: "SIGNALLED",
          target: "group",
          id: effect.pgid,
          signal: effect.signal,
          outcome: procs.signalGroup(effect.pgid, effect.signal),
        });
        return;
      case "signal":
        send({
          type: "SIGNALLED",
          target: "pid",
          id: effect.pid,
          signal: effect.signal,
          outcome: procs.signal(effect.pid, effect.signal),
        });
        return;
      case "readCandidates":
        void sweepCandidatesEvent(() => target.sweepCandidates(), target.heldByAnother).then(send);
        return;
      case "groupForbidden":
        target.forbiddenGroups.add(effect.pgid);
        return;
      case "step":
        step(effect.text);
        return;
    }
  }
}
