/**
 * tearDownRemote's timeouts: probes of a remote host are at most 250 ms apart unless
 * `pollMs` says otherwise, and a `pollMs` given as `undefined` keeps that default, as leaving
 * it out does (it used to replace it, and the machine's own 50 ms applied). And the ranks it
 * reports stopped are those the host answered it signalled.
 */
import { describe, expect, it } from "vitest";
import { pollDelayMs, type TeardownTimeouts } from "../../src/machines/teardown.ts";
import type { Overrides } from "../../src/overrides.ts";
import type { Signal } from "../../src/runtime/ports.ts";
import type { RemoteProc, RemoteProcs } from "../../src/runtime/remoteProcs.ts";
import { tearDownRemote } from "../../src/runtime/remoteTeardown.ts";
import type { SshHost } from "../../src/runtime/sshHost.ts";
import type { TeardownReport } from "../../src/runtime/tearDown.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { onSimClock } from "../property/teardownModel.ts";

const deployment = "dep-0123456789ab";
const stateDir = "/srv/app/.baton/run";
const PID = 4242;

/**
 * A remote table holding one rank of the deployment, which exits on the first TERM, or, with
 * `exitsBeforeSignal`, between the probe that saw it and the signal (the host answers ESRCH).
 */
function oneRank({ exitsBeforeSignal = false } = {}): RemoteProcs {
  let alive = true;
  const rank: RemoteProc = {
    pid: PID,
    ppid: 1,
    pgid: PID,
    state: "sleeping",
    argv: ["python", "train.py"],
    env: { BATON_DEPLOYMENT: deployment, BATON_STATE_DIR: stateDir },
  };
  return {
    host: { target: { spec: "gpu1" } } as SshHost,
    snapshot: async (pids) => (alive && pids.includes(PID) ? [rank] : []),
    signalIfOwned: async (pids, _id, signal: Signal) => {
      const wasAlive = alive && !exitsBeforeSignal;
      if (signal === "SIGTERM" || exitsBeforeSignal) alive = false;
      return new Map(pids.map((pid) => [pid, wasAlive ? ("ok" as const) : ("ESRCH" as const)]));
    },
  };
}

async function torn(
  table: RemoteProcs,
  timeouts?: Overrides<TeardownTimeouts>,
): Promise<TeardownReport> {
  const clock = new SimClock();
  const outcome = await onSimClock(
    clock,
    tearDownRemote(
      { deployment, stateDir, pids: [PID], sweepCandidates: async () => [] },
      { table, clock },
      timeouts,
    ),
  );
  return (outcome as { value: TeardownReport }).value;
}

async function elapsed(timeouts?: Overrides<TeardownTimeouts>): Promise<number> {
  return (await torn(oneRank(), timeouts)).elapsedMs;
}

describe("tearDownRemote", () => {
  it("polls a remote host every 250 ms at most unless told, and keeps that for a pollMs given as undefined", async () => {
    expect(await elapsed()).toBe(pollDelayMs(250, 0));
    expect(await elapsed({ pollMs: undefined, termGraceMs: undefined })).toBe(pollDelayMs(250, 0));
    expect(await elapsed({ pollMs: 800 })).toBe(pollDelayMs(800, 0));
  });

  it("reports a rank stopped only when the host answered that it signalled it, not one that exited after the probe saw it", async () => {
    expect((await torn(oneRank())).stopped).toEqual([PID]);
    // Alive in the probe, gone when the host checked it right before its kill: it ended on its own.
    expect((await torn(oneRank({ exitsBeforeSignal: true }))).stopped).toEqual([]);
  });
});
