/**
 * What a run's progress says `localPool` waits for (`RunningPool.waitingFor`): its worker
 * processes that run and have not joined yet. The workers here are `sleep` processes, which
 * never join; the pool's `stop()` ends them by pid, and the test stops the pool even when it
 * fails.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { localPool } from "../../src/runtime/localPool.ts";
import type { RunningPool } from "../../src/runtime/workerPool.ts";
import { poolStart } from "../fixtures/poolStart.ts";

const dirs: string[] = [];
const pools: RunningPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.stop()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("localPool's waitingFor", () => {
  it("counts the workers that run and have not joined, for the progress bar", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-local-starting-"));
    dirs.push(dir);
    const joined = new Set<string>();
    const running = localPool({
      jobsModule: "jobs.ts",
      count: 2,
      command: () => ["sleep", "60"],
    }).start(poolStart(dir, { joined: (name) => joined.has(name) }));
    pools.push(running);
    expect(running.waitingFor?.()).toBe("2 workers starting");
    joined.add("local-1");
    expect(running.waitingFor?.()).toBe("1 worker starting");
    joined.add("local-2");
    expect(running.waitingFor?.()).toBeUndefined();
  });
});
