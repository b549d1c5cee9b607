/**
 * Cancel epochs, launcher side (src/runtime/cancelFile.ts) and rank side (createRank's step):
 * epochs increase even when the clock steps back, a rank applies each epoch once, ignores a
 * file of another deployment, and takes a file that exists when it starts as a watermark.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import type { Cancel } from "../../src/rank/cancelFormat.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { createRank, type Rank } from "../../src/rank/rank.ts";
import type { RankEnv } from "../../src/rank/rankEnv.ts";
import { cancelFile, nextEpoch } from "../../src/runtime/cancelFile.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Clock, ProcInfo } from "../../src/runtime/ports.ts";

const DEP = "dep-abc123def456";
const files = nodeFiles();

/** A clock the test sets by hand; its timers never fire (these tests call step directly). */
function handClock(start: number): Clock & { set(now: number): void } {
  let now = start;
  return {
    now: () => now,
    set: (value) => {
      now = value;
    },
    setTimeout: () => undefined,
    clearTimeout: () => {},
  };
}

const launcher: ProcInfo = { pid: 4242, ppid: 1, pgid: 4242, state: "sleeping", argv: [] };

describe("cancel epochs", () => {
  let stateDir: string;
  const ranks: Rank[] = [];

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), "baton-cancel-"));
  });
  afterEach(async () => {
    await Promise.all(ranks.splice(0).map((rank) => rank.close()));
    await rm(stateDir, { recursive: true, force: true });
  });

  const paths = () => deploymentPaths(stateDir, DEP);

  async function startRank(rank: number, clock: Clock, deployment = DEP): Promise<Rank> {
    const env: RankEnv = {
      rank,
      worldSize: 2,
      localRank: rank,
      localWorldSize: 2,
      masterAddr: undefined,
      masterPort: undefined,
      deployment,
      stateDir,
      launcherPid: launcher.pid,
      markerHeartbeatMs: 10_000,
      leaseStaleMs: 30_000,
    };
    const started = await createRank(env, {
      files,
      clock,
      procs: { inspect: () => launcher },
      pid: 5000 + rank,
    });
    ranks.push(started);
    return started;
  }

  /** Steps `rank` and returns the epochs it applied. */
  async function stepAll(rank: Rank, times: number): Promise<number[]> {
    const applied: number[] = [];
    for (let i = 0; i < times; i += 1) {
      await rank.step((cancel) => {
        applied.push(cancel.epoch);
      });
    }
    return applied;
  }

  it("computes max(now, previous + 1)", () => {
    expect(nextEpoch(1_000, 0)).toBe(1_000);
    expect(nextEpoch(1_000, 999)).toBe(1_000);
    expect(nextEpoch(1_000, 1_000)).toBe(1_001);
    expect(nextEpoch(500, 1_000)).toBe(1_001);
  });

  it("increases strictly even when the clock steps back or stands still", async () => {
    const clock = handClock(1_000_000);
    const cancels = cancelFile({ files, clock, stateDir, deployment: DEP });
    const epochs: number[] = [];
    for (const now of [1_000_000, 1_000_000, 400_000, 2_000_000, 1_500_000, 1_500_000]) {
      clock.set(now);
      epochs.push((await cancels.write({ scope: "all", reason: "test" })).epoch);
    }
    expect(epochs).toEqual([1_000_000, 1_000_001, 1_000_002, 2_000_000, 2_000_001, 2_000_002]);
  });

  it("continues from the epoch of an existing file, even one from the future", async () => {
    await files.writeAtomic(
      paths().cancel,
      JSON.stringify({
        format: "baton.cancel/1",
        deployment: DEP,
        epoch: 9_000_000,
        scope: "all",
        ids: [],
        reason: "an earlier launcher",
      }),
    );
    const cancels = cancelFile({ files, clock: handClock(1_000), stateDir, deployment: DEP });
    expect((await cancels.write({ scope: "all", reason: "now" })).epoch).toBe(9_000_001);
    // The writer remembers its epoch even if the file is replaced by an older one.
    await writeFile(paths().cancel, "garbage");
    expect((await cancels.write({ scope: "all", reason: "again" })).epoch).toBe(9_000_002);
  });

  it("serialises concurrent writes into distinct epochs", async () => {
    const cancels = cancelFile({ files, clock: handClock(5_000), stateDir, deployment: DEP });
    const written = await Promise.all(
      ["a", "b", "c", "d"].map((id) => cancels.write({ scope: "requests", ids: [id], reason: id })),
    );
    expect(written.map((cancel) => cancel.epoch)).toEqual([5_000, 5_001, 5_002, 5_003]);
  });

  it("refuses a requests cancel without ids", async () => {
    const cancels = cancelFile({ files, clock: handClock(5_000), stateDir, deployment: DEP });
    await expect(cancels.write({ scope: "requests", ids: [], reason: "x" })).rejects.toThrow(
      ConfigError,
    );
  });

  it("is applied once per epoch, acked with the requests left, and recorded in the marker", async () => {
    const clock = handClock(10_000);
    const rank = await startRank(0, clock);
    rank.begin("req-1");
    rank.begin("req-2");
    expect(await stepAll(rank, 2)).toEqual([]);
    const cancels = cancelFile({ files, clock, stateDir, deployment: DEP });
    clock.set(20_000);
    await cancels.write({ scope: "requests", ids: ["req-1"], reason: "client left" });
    const seen: Cancel[] = [];
    clock.set(20_005);
    for (let i = 0; i < 3; i += 1) {
      await rank.step((cancel) => {
        seen.push(cancel);
        for (const id of rank.inFlight()) if (cancel.ids.includes(id)) rank.end(id);
      });
    }
    expect(seen.map((cancel) => [cancel.epoch, cancel.ids])).toEqual([[20_000, ["req-1"]]]);
    const ack = JSON.parse(await readFile(paths().ack(0), "utf8"));
    expect(ack).toEqual({
      format: "baton.ack/1",
      deployment: DEP,
      rank: 0,
      epoch: 20_000,
      active: 1,
      at: 20_005,
    });
    const marker = JSON.parse(await readFile(paths().marker(0), "utf8"));
    expect(marker).toMatchObject({ epoch: 20_000, active: 1 });
    expect(rank.epoch).toBe(20_000);

    clock.set(30_000);
    await cancels.write({ scope: "all", reason: "shutdown" });
    expect(await stepAll(rank, 3)).toEqual([30_000]);
  });

  it("treats a file that exists when the rank starts as a watermark", async () => {
    const clock = handClock(50_000);
    const cancels = cancelFile({ files, clock, stateDir, deployment: DEP });
    await cancels.write({ scope: "all", reason: "before the rank started" });
    const rank = await startRank(1, clock);
    expect(rank.epoch).toBe(50_000);
    expect(await stepAll(rank, 2)).toEqual([]);
    // The marker carries the watermark, so the launcher counts the rank as up to date…
    const evidence = await cancels.evidence(50_000);
    expect(evidence).toMatchObject([{ rank: 1, applied: true, epoch: 50_000, active: 0 }]);
    // …and the next epoch is applied.
    clock.set(60_000);
    await cancels.write({ scope: "all", reason: "after" });
    expect(await stepAll(rank, 2)).toEqual([60_000]);
  });

  it("ignores a cancel file of another deployment, and a malformed one", async () => {
    const clock = handClock(70_000);
    const warnings: string[] = [];
    const env: RankEnv = {
      rank: 0,
      worldSize: 1,
      localRank: 0,
      localWorldSize: 1,
      masterAddr: undefined,
      masterPort: undefined,
      deployment: DEP,
      stateDir,
      launcherPid: launcher.pid,
      markerHeartbeatMs: 10_000,
      leaseStaleMs: 30_000,
    };
    const rank = await createRank(
      env,
      { files, clock, procs: { inspect: () => launcher }, pid: 5000 },
      { warn: (message) => warnings.push(message) },
    );
    ranks.push(rank);
    const foreign = {
      format: "baton.cancel/1",
      deployment: "dep-other0000000",
      epoch: 80_000,
      scope: "all",
      ids: [],
      reason: "not yours",
    };
    await files.writeAtomic(paths().cancel, JSON.stringify(foreign));
    expect(await stepAll(rank, 3)).toEqual([]);
    await files.writeAtomic(paths().cancel, "{ not json");
    expect(await stepAll(rank, 3)).toEqual([]);
    expect(rank.epoch).toBe(0);
    // Each problem is reported once, not once per step.
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/belongs to deployment dep-other0000000/);
    expect(warnings[1]).toMatch(/not JSON/);
    // A valid file of this deployment is applied afterwards.
    await files.writeAtomic(paths().cancel, JSON.stringify({ ...foreign, deployment: DEP }));
    expect(await stepAll(rank, 2)).toEqual([80_000]);
  });

  it("reports per-rank evidence from acks and markers", async () => {
    const clock = handClock(100_000);
    const rank0 = await startRank(0, clock);
    const rank1 = await startRank(1, clock);
    rank0.begin("a");
    rank1.begin("b");
    rank1.begin("c");
    const cancels = cancelFile({ files, clock, stateDir, deployment: DEP });
    const { epoch } = await cancels.write({ scope: "all", reason: "drain" });
    clock.set(100_010);
    await rank0.step(() => rank0.end("a"));
    const evidence = await cancels.evidence(epoch);
    expect(evidence.map((rank) => [rank.rank, rank.applied, rank.active, rank.phase])).toEqual([
      [0, true, 0, "loading"],
      [1, false, 2, "loading"],
    ]);
    // An explicit rank list includes ranks without any file.
    expect((await cancels.evidence(epoch, [0, 1, 2]))[2]).toMatchObject({
      rank: 2,
      applied: false,
      active: undefined,
    });
    // Another deployment's ack in this directory is not evidence.
    await files.writeAtomic(
      paths().ack(1),
      JSON.stringify({
        format: "baton.ack/1",
        deployment: "dep-other0000000",
        rank: 1,
        epoch,
        active: 0,
        at: 100_020,
      }),
    );
    const [, one] = await cancels.evidence(epoch);
    expect(one).toMatchObject({ applied: false, active: 2 });
    expect(one?.problems[0]).toMatch(/deployment dep-other0000000/);
  });

  it("carries the ids of an epoch some rank has not applied into the next one", async () => {
    const clock = handClock(200_000);
    const rank0 = await startRank(0, clock);
    const rank1 = await startRank(1, clock);
    const cancels = cancelFile({ files, clock, stateDir, deployment: DEP });
    await cancels.write({ scope: "requests", ids: ["a"], reason: "one" });
    clock.set(200_001);
    const second = await cancels.write({ scope: "requests", ids: ["b"], reason: "two" });
    expect(second.ids).toEqual(["a", "b"]);
    // Both ranks apply the merged epoch; afterwards nothing is pending and ids start afresh.
    await rank0.step(() => {});
    await rank1.step(() => {});
    clock.set(200_002);
    expect((await cancels.write({ scope: "requests", ids: ["c"], reason: "three" })).ids).toEqual([
      "c",
    ]);
    // An unapplied "all" keeps the next cancel "all".
    clock.set(200_003);
    await cancels.write({ scope: "all", reason: "four" });
    const fifth = await cancels.write({ scope: "requests", ids: ["d"], reason: "five" });
    expect([fifth.scope, fifth.ids]).toEqual(["all", []]);
  });

  it("refuses, as a JavaScript caller may give them, options and times of the wrong kind", () => {
    expect(() => cancelFile(5 as never)).toThrow(
      "cancelFile: its options must be { files, clock, stateDir, deployment }, not 5",
    );
    expect(() =>
      cancelFile({ files, clock: Date.now, stateDir, deployment: DEP } as never),
    ).toThrow("cancelFile: clock must be a Clock, such as nodeClock(); it has no now()");
    expect(() => nextEpoch(5 as never, undefined as never)).toThrow(
      "nextEpoch: previous must be a whole number of 0 or more, not undefined",
    );
    expect(() => nextEpoch("now" as never, 0)).toThrow(
      'nextEpoch: now must be the time in milliseconds, such as Date.now(), not "now"',
    );
    expect(() => nextEpoch(Number.NaN, 0)).toThrow(ConfigError);
  });
});
