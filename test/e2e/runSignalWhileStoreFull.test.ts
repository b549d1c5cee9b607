/**
 * `baton run` signalled while its run stops because the result store had no room for
 * `--store-full-wait`, before the run's promise rejects (a job that ignores its abort holds the
 * stop for the pool's grace): the run is said to be stopping already for the
 * full store, naming it, not to be cancelled, and the command exits 1 with the store's
 * error, which says where and how to resume. Until the thirty-fourth session it said
 * `cancelling (SIGINT): waiting for running jobs to stop …`. The full disk is
 * test/fixtures/diskFullWhen.mjs's, loaded into baton: once the graph's job creates its file,
 * writes into the store's results fail with ENOSPC. Real processes, stopped by pid when the
 * test ends.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { within } from "../fixtures/within.ts";

afterEach(stopBatons);

/** Whether the run's log, in the only log folder of `store`, says it stops for the full store. */
function storeGaveUp(store: string): boolean {
  const logs = join(store, "logs");
  const [folder] = existsSync(logs) ? readdirSync(logs) : [];
  const log = join(logs, folder ?? "-", "run.log");
  return (
    existsSync(log) &&
    readFileSync(log, "utf8").includes("the result store had no room for too long")
  );
}

describe("baton run: a signal while a full store stops the run", { timeout: 120_000 }, () => {
  it("says the run is already stopping for the full store, where it said it cancelled it, and exits 1 saying where and how to resume", async () => {
    const markers = tempDir("baton-store-fills-");
    const store = tempDir("baton-cli-store-");
    const run = startBaton(
      [
        "run",
        "test/fixtures/storeFillsUp.graph.ts",
        "--workers",
        "2",
        "--store",
        store,
        "--store-full-wait",
        "1s",
      ],
      {
        env: {
          BATON_TEST_MARKERS: markers,
          BATON_TEST_DISK_FULL: join(markers, "disk-full"),
          NODE_OPTIONS: `--import=${join(ROOT, "test/fixtures/diskFullWhen.mjs")}`,
        },
      },
    );
    const deadline = Date.now() + 60_000;
    while (!storeGaveUp(store)) {
      if (run.child.exitCode !== null) throw new Error(`baton exited early: ${run.stderr()}`);
      if (Date.now() > deadline) throw new Error(`the store was not given up: ${run.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    process.kill(run.child.pid!, "SIGINT");
    const { code, stderr } = await within(run.exit, 30_000, "exiting after SIGINT");

    expect(stderr).toContain(
      `SIGINT: the run is already stopping because the result store ${store} had no room (its disk is full) for 1.0 s (--store-full-wait), so there is nothing to cancel; baton says why and exits once its workers have stopped (Ctrl-C again to stop now)`,
    );
    expect(stderr).not.toContain("cancelling");
    expect(stderr).toContain(
      `baton run: the run failed: the result store ${store} had no room for 1.0 s, so the run stopped`,
    );
    expect(stderr).toContain("Free some space on that disk");
    expect(code).toBe(1);
  });
});
