/**
 * The rank library's core (createRank) on real files and a simulated clock: marker phases,
 * heartbeat, the active count, and the launcher watch (pid gone, lease stale).
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SimulatedClock } from "xstate";
import { ConfigError } from "../../src/errors.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { createRank, type Rank, type RankOptions } from "../../src/rank/rank.ts";
import type { RankEnv } from "../../src/rank/rankEnv.ts";
import { startRank } from "../../src/rank/startRank.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { ProcInfo } from "../../src/runtime/ports.ts";

const DEP = "dep-rank00000000";
/** The rank writes its marker on a real disk: a loaded machine needs more than `waitFor`'s default second. */
const SETTLED = { timeout: 10_000 };
const files = nodeFiles();

describe("createRank", () => {
  let stateDir: string;
  let launcher: ProcInfo | undefined;
  const ranks: Rank[] = [];

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), "baton-rank-"));
    launcher = { pid: 4242, ppid: 1, pgid: 4242, state: "sleeping", argv: [] };
  });
  afterEach(async () => {
    await Promise.all(ranks.splice(0).map((rank) => rank.close()));
    await rm(stateDir, { recursive: true, force: true });
  });

  const paths = () => deploymentPaths(stateDir, DEP);
  const marker = async () => JSON.parse(await readFile(paths().marker(3), "utf8"));

  async function start(clock: SimulatedClock, options: RankOptions = {}) {
    const env: RankEnv = {
      rank: 3,
      worldSize: 4,
      localRank: 3,
      localWorldSize: 4,
      masterAddr: "127.0.0.1",
      masterPort: 29_500,
      deployment: DEP,
      stateDir,
      launcherPid: 4242,
      markerHeartbeatMs: 1_000,
      leaseStaleMs: 3_000,
    };
    const rank = await createRank(
      env,
      { files, clock, procs: { inspect: () => launcher }, pid: 777 },
      { watchEveryMs: 200, ...options },
    );
    ranks.push(rank);
    return rank;
  }

  async function writeLease(renewedAt: number, staleAfterMs = 3_000) {
    await files.writeAtomic(
      paths().lease,
      JSON.stringify({
        format: "baton.lease/1",
        deployment: DEP,
        pid: 4242,
        token: "t",
        renewedAt,
        staleAfterMs,
      }),
    );
  }

  it("writes its marker while loading, then ready, then exiting on close", async () => {
    const clock = new SimulatedClock();
    clock.set(1_000);
    const rank = await start(clock);
    expect(await marker()).toEqual({
      format: "baton.marker/1",
      deployment: DEP,
      rank: 3,
      pid: 777,
      phase: "loading",
      startedAt: 1_000,
      heartbeatAt: 1_000,
      active: 0,
      epoch: 0,
    });
    await rank.ready();
    expect((await marker()).phase).toBe("ready");
    await rank.drain();
    expect((await marker()).phase).toBe("draining");
    await rank.close();
    expect((await marker()).phase).toBe("exiting");
    expect(rank.phase).toBe("exiting");
  });

  it("heartbeats the marker and follows its active count", async () => {
    const clock = new SimulatedClock();
    clock.set(1_000);
    await writeLease(1_000, 60_000);
    const rank = await start(clock);
    clock.increment(1_000);
    await vi.waitFor(async () => expect((await marker()).heartbeatAt).toBe(2_000), SETTLED);
    clock.increment(1_000);
    await vi.waitFor(async () => expect((await marker()).heartbeatAt).toBe(3_000), SETTLED);
    rank.begin("a");
    rank.begin("b");
    rank.begin("b");
    expect(rank.active).toBe(2);
    await vi.waitFor(async () => expect((await marker()).active).toBe(2), SETTLED);
    rank.end("a");
    rank.end("unknown");
    await vi.waitFor(async () => expect((await marker()).active).toBe(1), SETTLED);
    expect(rank.inFlight()).toEqual(["b"]);
  });

  it("calls onOrphaned once, marked exiting, when the launcher pid is gone", async () => {
    const clock = new SimulatedClock();
    await writeLease(0, 60_000);
    const orphaned: string[] = [];
    await start(clock, { onOrphaned: (reason) => void orphaned.push(reason) });
    clock.increment(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(orphaned).toEqual([]);
    launcher = { ...(launcher as ProcInfo), state: "zombie" };
    clock.increment(200);
    await vi.waitFor(
      () => expect(orphaned).toEqual(["launcher pid 4242 is a zombie process"]),
      SETTLED,
    );
    expect((await marker()).phase).toBe("exiting");
    clock.increment(5_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(orphaned).toHaveLength(1);
  });

  it("calls onOrphaned when the lease goes stale, or never appears", async () => {
    const clock = new SimulatedClock();
    clock.set(10_000);
    await writeLease(10_000, 1_000);
    const orphaned: string[] = [];
    await start(clock, { onOrphaned: (reason) => void orphaned.push(reason) });
    clock.increment(800);
    await writeLease(10_800, 1_000);
    clock.increment(800);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(orphaned).toEqual([]);
    clock.increment(400);
    await vi.waitFor(() => expect(orphaned).toHaveLength(1), SETTLED);
    expect(orphaned[0]).toMatch(/lease was last renewed 1200 ms ago \(stale after 1000 ms\)/);

    await rm(paths().lease);
    const noLease: string[] = [];
    const later = new SimulatedClock();
    later.set(50_000);
    await start(later, { onOrphaned: (reason) => void noLease.push(reason) });
    later.increment(2_800);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(noLease).toEqual([]);
    later.increment(400);
    await vi.waitFor(
      () => expect(noLease).toEqual(["no readable lease for 3200 ms (stale after 3000 ms)"]),
      SETTLED,
    );
  });

  it("refuses, as a JavaScript rank program may give them, what is no environment, ports or options", async () => {
    const clock = new SimulatedClock();
    const ports = { files, clock, procs: { inspect: () => launcher }, pid: 777 };
    const env = { deployment: DEP, stateDir } as RankEnv;
    const refused = (args: unknown[]) => createRank(...(args as Parameters<typeof createRank>));
    await expect(refused([{ SECRET_TOKEN: "hunter2" }, ports])).rejects.toThrow(
      "createRank: env must be the rank's environment as readRankEnv(process.env) reads it, not an object with no deployment",
    );
    await expect(refused([{ SECRET_TOKEN: "hunter2" }, ports])).rejects.not.toThrow("hunter2");
    await expect(refused([undefined, ports])).rejects.toThrow(ConfigError);
    await expect(refused([env])).rejects.toThrow(
      "createRank: ports must be { files, clock, procs, pid }, not undefined",
    );
    await expect(refused([env, { ...ports, clock: Date }])).rejects.toThrow(
      "createRank: ports.clock must be a Clock, such as nodeClock(); it has no setTimeout()",
    );
    await expect(refused([env, ports, null])).rejects.toThrow(
      "createRank: the options must be an object, { watchEveryMs, onOrphaned, warn }, not null",
    );
    // A typo of an option was ignored: the watch ran every 1000 ms.
    await expect(refused([env, ports, { watchEvery: 200 }])).rejects.toThrow(
      "createRank: unknown option watchEvery; it takes watchEveryMs, onOrphaned, warn; did you mean watchEveryMs?",
    );
    // A watch every 0 ms (or "1000", or NaN) ran its timer at once, over and over; a warn or
    // onOrphaned that is no function failed only when the rank first warned or was orphaned.
    await expect(refused([env, ports, { watchEveryMs: 0 }])).rejects.toThrow(
      "createRank: watchEveryMs must be a positive number of ms, not 0",
    );
    await expect(refused([env, ports, { warn: "stderr" }])).rejects.toThrow(
      'createRank: warn must be a function, (message) => …, not "stderr"',
    );
    await expect(refused([env, ports, { onOrphaned: true }])).rejects.toThrow(
      "createRank: onOrphaned must be a function, (reason) => …, not true",
    );
  });
});

describe("startRank", () => {
  // Refused before the environment is read: startRank(null) was a TypeError (reading 'env'),
  // a typo of an option was ignored, and an onOrphaned that is no function failed only as the
  // process was leaving.
  it.each([
    [
      null,
      "startRank: the options must be an object, { env, watchEveryMs, onOrphaned }, or nothing, not null",
    ],
    [
      { watchEvery: 500 },
      "startRank: unknown option watchEvery; it takes env, watchEveryMs, onOrphaned; did you mean watchEveryMs?",
    ],
    [{ watchEveryMs: "1s" }, 'startRank: watchEveryMs must be a positive number of ms, not "1s"'],
    [{ onOrphaned: "exit" }, 'startRank: onOrphaned must be a function, (reason) => …, not "exit"'],
  ])(
    "refuses options it cannot take with a ConfigError naming them (%#)",
    async (options, message) => {
      const started = startRank(options as never);
      await expect(started).rejects.toThrow(ConfigError);
      await expect(startRank(options as never)).rejects.toThrow(message);
    },
  );
});
