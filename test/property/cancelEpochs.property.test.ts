/**
 * Cancel epochs under any interleaving of launcher writes (with a clock that jumps forward
 * and back) and rank steps, on in-memory files: epochs strictly increase, each rank applies
 * each epoch at most once and in increasing order, and no cancelled id is lost for a rank
 * even when several cancels land between two of its steps.
 *
 * Knobs: BATON_PROPERTY_RUNS (default 300). To replay a failure, set the variables the
 * failure message prints: BATON_PROPERTY_SEED and BATON_PROPERTY_PATH.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Cancel, cancelCovers } from "../../src/rank/cancelFormat.ts";
import { createRank, type Rank } from "../../src/rank/rank.ts";
import type { RankEnv } from "../../src/rank/rankEnv.ts";
import { cancelFile } from "../../src/runtime/cancelFile.ts";
import type { Clock, Files } from "../../src/runtime/ports.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

const DEP = "dep-prop00000000";
const STATE_DIR = "/state";

/** Files in a Map: enough of the port for the cancel file, markers and acks. */
function memoryFiles(): Files {
  const tree = new Map<string, string>();
  return {
    writeAtomic: async (path, data) => {
      tree.set(path, typeof data === "string" ? data : new TextDecoder().decode(data));
    },
    createExclusive: async (path, data) => {
      if (tree.has(path)) return false;
      tree.set(path, data);
      return true;
    },
    read: async (path) => tree.get(path),
    readMany: async (paths) => paths.map((path) => tree.get(path)),
    list: async (dir) =>
      [...tree.keys()]
        .filter((path) => path.startsWith(`${dir}/`) && !path.slice(dir.length + 1).includes("/"))
        .map((path) => path.slice(dir.length + 1))
        .sort(),
    modifiedAt: async (path) => (tree.has(path) ? 0 : undefined),
    remove: async (path) => {
      tree.delete(path);
    },
    removeDir: async () => false,
    owner: async (path) => (tree.has(path) ? { uid: 0, self: true } : undefined),
    sameFile: async (a, b) => a === b && tree.has(a),
    mkdirp: async () => undefined,
  };
}

type Op =
  | { kind: "write"; now: number; all: boolean; ids: string[] }
  | { kind: "step"; rank: number };

const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("write" as const),
    now: fc.integer({ min: 1, max: 1_000 }),
    all: fc.boolean(),
    ids: fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e"), { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant("step" as const), rank: fc.integer({ min: 0, max: 2 }) }),
);

const property = fc.asyncProperty(fc.array(opArbitrary, { maxLength: 40 }), async (ops) => {
  const files = memoryFiles();
  let now = 500;
  const clock: Clock = { now: () => now, setTimeout: () => undefined, clearTimeout: () => {} };
  const env = (rank: number): RankEnv => ({
    rank,
    worldSize: 3,
    localRank: rank,
    localWorldSize: 3,
    masterAddr: undefined,
    masterPort: undefined,
    deployment: DEP,
    stateDir: STATE_DIR,
    launcherPid: 1,
    markerHeartbeatMs: 10_000,
    leaseStaleMs: 30_000,
  });
  const procs = {
    inspect: () => ({ pid: 1, ppid: 0, pgid: 1, state: "running" as const, argv: [] }),
  };
  const ranks: Rank[] = [];
  for (const rank of [0, 1, 2]) {
    ranks.push(await createRank(env(rank), { files, clock, procs, pid: 100 + rank }));
  }
  const applied: Cancel[][] = [[], [], []];
  const step = (rank: number) =>
    ranks[rank]!.step((cancel) => {
      applied[rank]!.push(cancel);
    });
  const cancels = cancelFile({ files, clock, stateDir: STATE_DIR, deployment: DEP });
  const written: Cancel[] = [];
  for (const op of ops) {
    if (op.kind === "step") {
      await step(op.rank);
      continue;
    }
    now = op.now;
    written.push(
      await cancels.write(
        op.all ? { scope: "all", reason: "p" } : { scope: "requests", ids: op.ids, reason: "p" },
      ),
    );
  }
  for (const rank of [0, 1, 2]) await step(rank);

  const epochs = written.map((cancel) => cancel.epoch);
  for (let i = 1; i < epochs.length; i += 1) expect(epochs[i]).toBeGreaterThan(epochs[i - 1]!);
  for (const [rank, seen] of applied.entries()) {
    const seenEpochs = seen.map((cancel) => cancel.epoch);
    expect(new Set(seenEpochs).size).toBe(seenEpochs.length);
    expect([...seenEpochs].sort((a, b) => a - b)).toEqual(seenEpochs);
    // Every id cancelled is covered for this rank by some epoch it applied at or after it.
    for (const [index, op] of ops.filter((o) => o.kind === "write").entries()) {
      const epoch = written[index]!.epoch;
      const later = seen.filter((cancel) => cancel.epoch >= epoch);
      for (const id of op.all ? ["a", "b", "c", "d", "e"] : op.ids) {
        expect(
          later.some((cancel) => cancelCovers(cancel, id)),
          `rank ${rank} missed ${id}`,
        ).toBe(true);
      }
    }
    expect(ranks[rank]!.epoch).toBe(epochs.at(-1) ?? 0);
  }
  await Promise.all(ranks.map((rank) => rank.close()));
});

describe("cancel epochs under any interleaving of writes and steps", () => {
  it("increase strictly, are applied once each, and lose no id", async () => {
    const details = await fc.check(property, propertyParameters(propertyRuns(300)));
    throwIfFailed(details, import.meta.url);
  });
});
