import { describe, expect, it } from "vitest";
import type { Manifest } from "../../src/rank/manifestFormat.ts";
import type { ProcInfo, Procs } from "../../src/runtime/ports.ts";
import { unrecordedRanks } from "../../src/runtime/unrecordedRanks.ts";

const id = { deployment: "web", stateDir: "/srv/run" };
const LAUNCHER = 300;

/** A process table: each entry with its environment. */
function table(entries: (ProcInfo & { env?: Record<string, string> })[]): Procs {
  const byPid = new Map(entries.map((entry) => [entry.pid, entry]));
  return {
    selfPid: 1,
    spawn: () => {
      throw new Error("not in this test");
    },
    signal: () => "ok",
    signalGroup: () => "ok",
    inspect: (pid) => byPid.get(pid),
    list: () => entries,
    environ: (pid) => byPid.get(pid)?.env,
  };
}

/** A rank's environment: the deployment's, its launcher's pid and its rank number. */
const rankEnv = (rank: number, launcher = LAUNCHER) => ({
  BATON_DEPLOYMENT: id.deployment,
  BATON_STATE_DIR: id.stateDir,
  BATON_LAUNCHER_PID: String(launcher),
  RANK: String(rank),
  LOCAL_RANK: String(rank),
});

const proc = (pid: number, ppid: number, pgid: number, env?: Record<string, string>) => ({
  pid,
  ppid,
  pgid,
  state: "sleeping" as const,
  argv: ["/bin/sleep", "300"],
  ...(env !== undefined && { env }),
});

const manifest: Manifest = {
  deployment: id.deployment,
  launcher: { pid: LAUNCHER, token: "t", host: "h" },
  ranks: [{ rank: 0, localRank: 0, host: "local", pid: 401, pgid: 401 }],
  worldSize: 3,
  argv: ["/bin/sleep", "300"],
  startedAt: 0,
  stateDir: id.stateDir,
};

describe("unrecordedRanks", () => {
  it("finds the ranks the manifest does not record, each the leader of its own group", () => {
    const procs = table([
      proc(401, 1, 401, rankEnv(0)),
      proc(402, 1, 402, rankEnv(1)),
      proc(403, 1, 403, rankEnv(2)),
      // Rank 1's child in its group, and one that left it with setsid keeping its environment.
      proc(404, 402, 402, rankEnv(1)),
      proc(405, 402, 405, rankEnv(1)),
    ]);
    expect(unrecordedRanks(id, manifest, procs)).toEqual([
      { rank: 1, localRank: 1, host: "local", pid: 402, pgid: 402 },
      { rank: 2, localRank: 2, host: "local", pid: 403, pgid: 403 },
    ]);
  });

  it("never takes another launcher's ranks of the name, another state dir's, or a dead process", () => {
    const procs = table([
      // A launcher that took the name over started its own rank 1.
      proc(402, 1, 402, rankEnv(1, 777)),
      proc(403, 1, 403, { ...rankEnv(2), BATON_STATE_DIR: "/elsewhere" }),
      { ...proc(406, 1, 406, rankEnv(2)), state: "zombie" },
      // A rank number the world does not have.
      proc(407, 1, 407, rankEnv(3)),
    ]);
    expect(unrecordedRanks(id, manifest, procs)).toEqual([]);
  });

  it("never names a rank's setsid child a rank while the rank runs its exit, and still names the launcher's ranks while it runs its", () => {
    // Running its exit, a process's environment reads empty whatever it was.
    const exiting = (pid: number, ppid: number, pgid: number) => ({
      ...proc(pid, ppid, pgid, {}),
      exiting: true,
    });
    const procs = table([
      exiting(LAUNCHER, 1, LAUNCHER),
      // Rank 1 ends; the child that left its group with setsid still has it as parent.
      exiting(402, LAUNCHER, 402),
      proc(405, 402, 405, rankEnv(1)),
      proc(403, LAUNCHER, 403, rankEnv(2)),
    ]);
    expect(unrecordedRanks(id, manifest, procs)).toEqual([
      { rank: 2, localRank: 2, host: "local", pid: 403, pgid: 403 },
    ]);
  });
});
