import type { Logger } from "pino";
import type { TeardownEffect, TeardownTimeouts } from "../machines/teardown.ts";
import { givenOverrides, type Overrides } from "../overrides.ts";
import { checkRemoteTeardownArguments } from "./checkTeardownArguments.ts";
import { driveTeardown, sweepCandidatesEvent } from "./driveTeardown.ts";
import type { Clock } from "./ports.ts";
import type { RemoteProcs } from "./remoteProcs.ts";
import type { TeardownReport } from "./tearDown.ts";

/** The ranks of one deployment on one remote host. */
export interface RemoteTeardownTarget {
  deployment: string;
  /** The root state dir on that host, as its ranks got it in `BATON_STATE_DIR`. */
  stateDir: string;
  /** The remote pids of the ranks, as their launcher learnt them. */
  pids: number[];
  /** Pids named by the deployment's markers on that host (`markerPids(remoteFiles(host), …)`). */
  sweepCandidates(): Promise<number[]>;
  /** Who holds the name there now, if another launcher took it over: no sweep then (see `TeardownTarget`). */
  heldByAnother?: (() => Promise<string | undefined>) | undefined;
}

/** What `tearDownRemote` acts through: the remote process table, a clock, and where it logs. */
export interface RemoteTeardownPorts {
  table: RemoteProcs;
  clock: Clock;
  logger?: Logger | undefined;
  /** Once aborted, no more waiting for TERM: KILL at once, still verified. */
  hurry?: AbortSignal | undefined;
}

/** Remote probes cost an ssh round trip: poll less often than locally unless told. */
const REMOTE_POLL_MS = 250;

/**
 * Verified teardown of the ranks of one deployment on one remote host: the same teardown
 * machine as local ranks (DESIGN §4: TERM, grace, KILL, KILL again, the marker sweep with TERM,
 * wait, KILL, wait, then the final check), acting through the remote process table. Remote
 * ranks are signalled by pid, each only after the host itself checked, right before the
 * `kill`, that the pid still carries the deployment (a pid that no longer does is reported as
 * gone and never signalled); the sweep and the final check also find every process whose
 * environment carries the deployment (the ranks' children). Each probe is one ssh round
 * trip; probes are at most 250 ms apart unless `timeouts.pollMs` says otherwise. Resolves
 * with the report when nothing of the deployment is alive there, its `stopped` the ranks the
 * host answered it signalled (alive and theirs when the `kill` ran, in one step); throws `TeardownError`
 * naming the survivors, or `RemoteHostError` when the host cannot be reached (nothing is
 * verified then: keep the manifest and retry). A target, ports or timeouts it cannot take (a
 * relative state dir, a pid of 0, a table that is no `RemoteProcs`) reject with a
 * `ConfigError` before the host is asked anything (`checkRemoteTeardownArguments`).
 *
 * @example
 * ```ts
 * const host = sshHost(target);
 * const report = await tearDownRemote(
 *   { deployment, stateDir, pids: [rank.pid],
 *     sweepCandidates: () => markerPids(remoteFiles(host), paths, { deployment, stateDir }) },
 *   { table: remoteProcs(host), clock: nodeClock() },
 * );
 * ```
 */
export function tearDownRemote(
  target: RemoteTeardownTarget,
  ports: RemoteTeardownPorts,
  timeouts: Overrides<TeardownTimeouts> = {},
): Promise<TeardownReport> {
  try {
    checkRemoteTeardownArguments(target, ports, timeouts);
  } catch (error) {
    return Promise.reject(error);
  }
  const { table, clock, logger } = ports;
  const { deployment } = target;
  const id = { deployment, stateDir: target.stateDir };
  /** Pids the host itself signalled: each checked alive and carrying the deployment in the same step. */
  const signalled = new Set<number>();
  const report = driveTeardown({
    input: {
      ...id,
      groups: [],
      pids: target.pids,
      // No process on the remote host is the caller.
      selfPid: 0,
      timeouts: { pollMs: REMOTE_POLL_MS, ...givenOverrides(timeouts) },
    },
    clock,
    logger,
    host: table.host.target.spec,
    hurry: ports.hurry,
    start: `pids ${target.pids.join(", ") || "none"}`,
    perform: async (effects, send, step) => {
      for (let at = 0; at < effects.length; at++) {
        const effect = effects[at] as TeardownEffect;
        switch (effect.type) {
          case "probe": {
            // An entry carries the variables of its environment that ownership reads.
            const procs = await table.snapshot(effect.pids, id, { scan: effect.scan });
            send({ type: "TABLE", seq: effect.seq, procs });
            break;
          }
          case "signal": {
            // Consecutive signals of a batch share one round trip.
            const batch: number[] = [];
            while (at < effects.length) {
              const next = effects[at] as TeardownEffect;
              if (next.type !== "signal" || next.signal !== effect.signal) break;
              batch.push(next.pid);
              at++;
            }
            at--;
            const outcomes = await table.signalIfOwned(batch, id, effect.signal);
            for (const pid of batch) {
              const outcome = outcomes.get(pid) ?? "ESRCH";
              if (outcome === "ok") signalled.add(pid);
              if (outcome === "not-owned") {
                step(`pid ${pid} no longer carries ${deployment}: not signalled`);
              }
              send({
                type: "SIGNALLED",
                target: "pid",
                id: pid,
                signal: effect.signal,
                outcome: outcome === "not-owned" ? "ESRCH" : outcome,
              });
            }
            break;
          }
          case "signalGroup":
            throw new Error(`remote teardown never signals a group (asked for ${effect.pgid})`);
          case "readCandidates":
            send(await sweepCandidatesEvent(() => target.sweepCandidates(), target.heldByAnother));
            break;
          case "groupForbidden":
            break;
          case "step":
            step(effect.text);
            break;
        }
      }
    },
  });
  // The machine counts a rank stopped when its probe saw it alive, a round trip before the
  // signal; a rank that exited in between was answered ESRCH, and stopped only itself.
  return report.then((done) => ({
    ...done,
    stopped: done.stopped.filter((pid) => signalled.has(pid)),
  }));
}
