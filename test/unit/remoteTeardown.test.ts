/**
 * tearDownRemote's timeouts: probes of a remote host are at most 250 ms apart unless
 * `pollMs` says otherwise, and a `pollMs` given as `undefined` keeps that default, as leaving
 * it out does (it used to replace it, and the machine's own 50 ms applied).
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

/** A remote table holding one rank of the deployment, which exits on the first TERM. */
function oneRank(): RemoteProcs {
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
      if (signal === "SIGTERM") alive = false;
      return new Map(pids.map((pid) => [pid, "ok" as const]));
    },
  };
}

async function elapsed(timeouts?: Overrides<TeardownTimeouts>): Promise<number> {
  const clock = new SimClock();
  const outcome = await onSimClock(
    clock,
    tearDownRemote(
      { deployment, stateDir, pids: [PID], sweepCandidates: async () => [] },
      { table: oneRank(), clock },
      timeouts,
    ),
  );
  return (outcome as { value: TeardownReport }).value.elapsedMs;
}

describe("tearDownRemote", () => {
  it("polls a remote host every 250 ms at most unless told, and keeps that for a pollMs given as undefined", async () => {
    expect(await elapsed()).toBe(pollDelayMs(250, 0));
    expect(await elapsed({ pollMs: undefined, termGraceMs: undefined })).toBe(pollDelayMs(250, 0));
    expect(await elapsed({ pollMs: 800 })).toBe(pollDelayMs(800, 0));
  });
});
