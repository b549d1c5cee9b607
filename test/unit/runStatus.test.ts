import { mkdtempSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { describeRuns, type RunStatus, readRunStatuses } from "../../src/cli/runStatus.ts";
import { lockGraph } from "../../src/runtime/graphLock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A running run as `readRunStatuses` gives it. */
const running: RunStatus = {
  state: "running",
  pid: 4242,
  host: "login1",
  graph: "/home/me/pipeline.graph.ts",
  argv: ["node", "baton", "run", "pipeline.graph.ts"],
  startedAt: "2026-12-06T06:00:00.000Z",
  ageMs: 4_000,
  address: "ws://login1:7000",
  secretFile: "/home/me/.baton/run/run-1-4242@login1.secret",
  lock: "/home/me/.baton/run/graph-0123456789abcdef.lock",
  lockRenewedAgoMs: 1_000,
};

describe("describeRuns", () => {
  it("says where workers join, and where a run listening on every interface listens", () => {
    const wildcard = { ...running, listenAddress: "ws://0.0.0.0:7000" };
    expect(describeRuns(".baton/run", [wildcard], [])).toContain(
      "\n  workers join at ws://login1:7000 (listening on ws://0.0.0.0:7000) with --secret-file /home/me/.baton/run/run-1-4242@login1.secret\n",
    );
    expect(describeRuns(".baton/run", [running], [])).toContain(
      "\n  workers join at ws://login1:7000 with --secret-file",
    );
  });
});

describe("readRunStatuses", () => {
  it("gives how long ago a lock was written in whole ms, as the other times of baton status --json", async () => {
    const store = mkdtempSync(join(tmpdir(), "baton-run-status-"));
    dirs.push(store);
    const lock = await lockGraph(store, join(store, "g.graph.ts"));
    try {
      await lock.note(
        { progress: { total: 4, completed: 1, failed: 0, running: 2 } },
        { now: true },
      );
      // A modification time with a fraction of a millisecond, as file systems keep them.
      const at = (Date.now() - 1_500.25) / 1000;
      utimesSync(lock.path, at, at);
      const [run] = (await readRunStatuses(join(store, "run"), nodeFiles())).runs;
      expect(Number.isInteger(run?.lockRenewedAgoMs), String(run?.lockRenewedAgoMs)).toBe(true);
      expect(run?.progress?.agoMs).toBe(run?.lockRenewedAgoMs);
      expect(run?.lockRenewedAgoMs).toBeGreaterThanOrEqual(1_500);
    } finally {
      await lock.release();
    }
  });
});
