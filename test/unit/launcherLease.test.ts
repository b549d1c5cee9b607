import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import { holdLease } from "../../src/runtime/launcherLease.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { SimClock } from "../../src/sim/simClock.ts";

const files = nodeFiles();
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Waits (real time, for real file I/O) until `check` holds; the simulated clock stays put. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; !(await check()); tries++) {
    if (tries > 500) throw new Error("the lease was not renewed");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("holdLease", () => {
  it("writes the lease, renews it every staleAfterMs / 3, and stops renewing on release", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-lease-"));
    dirs.push(dir);
    const path = join(dir, "lease.json");
    const clock = new SimClock();
    clock.fireNext(5_000);
    const lease = await holdLease({
      files,
      clock,
      path,
      deployment: "dep-lease",
      pid: 77,
      token: "tok",
      staleAfterMs: 3_000,
    });
    const read = () => readStateFile(files, LEASE_FORMAT, path);
    expect(await read()).toEqual({
      deployment: "dep-lease",
      pid: 77,
      token: "tok",
      renewedAt: 5_000,
      staleAfterMs: 3_000,
    });
    expect(clock.nextDue()).toBe(6_000);
    clock.fireNext();
    await until(async () => (await read())?.renewedAt === 6_000);
    await until(async () => clock.nextDue() === 7_000);
    await lease.release();
    expect(clock.nextDue()).toBeUndefined();
    expect((await read())?.renewedAt).toBe(6_000);
  });
});
