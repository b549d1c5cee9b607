import type { Logger } from "pino";
import { createActor } from "xstate";
import { ConfigError, TeardownError } from "../errors.ts";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import {
  type ProcView,
  type TeardownEffect,
  type TeardownTimeouts,
  teardownMachine,
} from "../machines/teardown.ts";
import type { Clock, Procs } from "./ports.ts";

export {
  DEFAULT_TEARDOWN_TIMEOUTS,
  type TeardownTimeouts,
  teardownDeadlineMs,
} from "../machines/teardown.ts";

/** The rank group to tear down, as its launcher (or the reaper) knows it. */
export interface TeardownTarget {
  deployment: string;
  /** Process group ids of the ranks. */
  groups: number[];
  /** Rank pids the launcher knows. */
  pids: number[];
  /** Pids found in the deployment's markers; read once, when the sweep starts. */
  sweepCandidates(): Promise<number[]>;
  /** Groups that answered EPERM once: never signalled again. Mutated by tearDown. */
  forbiddenGroups: Set<number>;
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
  /** Groups never to signal again, including any that answered EPERM during this call. */
  forbiddenGroups: number[];
}

/** The ports teardown acts through; `plantedBugs` only in tests and the simulation. */
export interface TeardownPorts {
  procs: Procs;
  clock: Clock;
  logger?: Logger;
  plantedBugs?: readonly PlantedBug[];
}

const isPid = (value: number): boolean => Number.isInteger(value) && value > 0;

/** The probe's answer: the requested processes of the table, each with its environment. */
function readTable(procs: Procs, effect: Extract<TeardownEffect, { type: "probe" }>): ProcView[] {
  const withEnv = (info: Omit<ProcView, "env">): ProcView => ({
    ...info,
    env: procs.environ(info.pid),
  });
  if (!effect.scan && effect.groups.length === 0) {
    return effect.pids.flatMap((pid) => {
      const info = procs.inspect(pid);
      return info === undefined ? [] : [withEnv(info)];
    });
  }
  const groups = new Set(effect.groups);
  const pids = new Set(effect.pids);
  return procs
    .list()
    .filter((info) => effect.scan || groups.has(info.pgid) || pids.has(info.pid))
    .map(withEnv);
}

/**
 * Verified teardown of a rank group (DESIGN §4): runs the teardown machine with the Clock port
 * as XState's clock and carries out what it asks through the Procs port — TERM, grace, KILL,
 * KILL again, the marker sweep (each pid signalled only if it still carries the deployment),
 * and a final check of the process table, polling liveness every `pollMs` so that each wait
 * ends as soon as the group is gone. Resolves with a report when nothing of the deployment is
 * alive; otherwise throws {@link TeardownError} naming the survivors and their states. It
 * keeps no state of its own: calling it again with the same target retries from the start,
 * and `target.forbiddenGroups` (groups that answered EPERM) carries over between attempts.
 * Steps are logged at debug.
 *
 * @example
 * ```ts
 * const target = {
 *   deployment: "dep-0123456789ab",
 *   groups: ranks.map((rank) => rank.pid),
 *   pids: ranks.map((rank) => rank.pid),
 *   sweepCandidates: () => markerPids(stateDir, "dep-0123456789ab"),
 *   forbiddenGroups: new Set<number>(),
 * };
 * const report = await tearDown(target, { procs: nodeProcs(), clock: nodeClock() }, { termGraceMs: 5000 });
 * console.log(`verified in ${report.elapsedMs} ms`);
 * ```
 */
export function tearDown(
  target: TeardownTarget,
  ports: TeardownPorts,
  timeouts: Partial<TeardownTimeouts> = {},
): Promise<TeardownReport> {
  const { procs, clock, logger } = ports;
  const { deployment } = target;
  const badGroup = target.groups.find((pgid) => !Number.isInteger(pgid) || pgid <= 1);
  const badPid = target.pids.find((pid) => !isPid(pid));
  if (badGroup !== undefined || badPid !== undefined) {
    return Promise.reject(
      new ConfigError(
        `cannot tear down ${deployment}: ${
          badGroup !== undefined ? `process group ${badGroup}` : `pid ${badPid}`
        } is not a process of a rank (groups are integers above 1, pids positive integers)`,
      ),
    );
  }
  const started = clock.now();
  const steps: string[] = [];
  const step = (text: string) => {
    const elapsedMs = clock.now() - started;
    steps.push(`+${elapsedMs}ms ${text}`);
    logger?.debug({ deployment, elapsedMs }, `teardown: ${text}`);
  };
  step(
    `start: groups ${target.groups.join(", ") || "none"}, pids ${target.pids.join(", ") || "none"}`,
  );

  const actor = createActor(teardownMachine, {
    clock,
    input: {
      deployment,
      groups: target.groups,
      pids: target.pids,
      forbiddenGroups: [...target.forbiddenGroups],
      selfPid: procs.selfPid,
      timeouts,
      plantedBugs: ports.plantedBugs,
    },
  });

  return new Promise<TeardownReport>((resolve, reject) => {
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      actor.stop();
      reject(err);
    };

    const perform = (effect: TeardownEffect): void => {
      switch (effect.type) {
        case "probe":
          actor.send({ type: "TABLE", seq: effect.seq, procs: readTable(procs, effect) });
          return;
        case "signalGroup":
          actor.send({
            type: "SIGNALLED",
            target: "group",
            id: effect.pgid,
            signal: effect.signal,
            outcome: procs.signalGroup(effect.pgid, effect.signal),
          });
          return;
        case "signal":
          actor.send({
            type: "SIGNALLED",
            target: "pid",
            id: effect.pid,
            signal: effect.signal,
            outcome: procs.signal(effect.pid, effect.signal),
          });
          return;
        case "readCandidates":
          target.sweepCandidates().then(
            (pids) => actor.send({ type: "CANDIDATES", pids: pids.filter(isPid) }),
            (err: unknown) =>
              actor.send({
                type: "CANDIDATES",
                pids: [],
                error: err instanceof Error ? err.message : String(err),
              }),
          );
          return;
        case "groupForbidden":
          target.forbiddenGroups.add(effect.pgid);
          return;
        case "step":
          step(effect.text);
          return;
      }
    };

    actor.on("effects", ({ effects }) => {
      for (const effect of effects) {
        if (failed) return;
        try {
          perform(effect);
        } catch (err) {
          fail(err);
        }
      }
    });
    actor.subscribe({
      complete: () => {
        if (failed) return;
        const output = actor.getSnapshot().output!;
        if (!output.verified) {
          reject(new TeardownError(deployment, output.survivors));
          return;
        }
        resolve({
          verified: true,
          deployment,
          elapsedMs: clock.now() - started,
          steps,
          swept: output.swept,
          forbiddenGroups: output.forbiddenGroups,
        });
      },
      error: fail,
    });
    actor.start();
  });
}
