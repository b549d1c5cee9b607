/**
 * `baton run` signalled while its run stops because its worker pool failed, before the run's
 * promise rejects (a worker whose handler ignores its abort holds the stop for the pool's
 * grace): the run is said to be stopping already, not to be cancelled, and the command exits 1
 * with the pool's error as the failed run would have. Until 7 December it said `cancelling
 * (SIGINT): waiting for running jobs to stop …` and then that the run failed. Real processes,
 * stopped by pid when the test ends.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { within } from "../fixtures/within.ts";

afterEach(stopBatons);

/** Whether the run's log, in the only log folder of `store`, says its pool failed. */
function poolFailed(store: string): boolean {
  const logs = join(store, "logs");
  const [folder] = existsSync(logs) ? readdirSync(logs) : [];
  const log = join(logs, folder ?? "-", "run.log");
  return existsSync(log) && readFileSync(log, "utf8").includes("the worker pool failed");
}

describe("baton run: a signal while its failed pool stops the run", { timeout: 120_000 }, () => {
  it("says the run is already stopping, where it said it cancelled it, and exits 1", async () => {
    const markers = tempDir("baton-pool-fails-");
    const store = tempDir("baton-cli-store-");
    const run = startBaton(
      ["run", "test/fixtures/poolFailsMidRun.graph.ts", "--workers", "2", "--store", store],
      { env: { BATON_TEST_MARKERS: markers } },
    );
    // Starting tsx and two worker processes takes seconds on a loaded machine.
    const deadline = Date.now() + 60_000;
    while (!poolFailed(store)) {
      if (run.child.exitCode !== null) throw new Error(`baton exited early: ${run.stderr()}`);
      if (Date.now() > deadline) throw new Error(`the pool did not fail: ${run.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    process.kill(run.child.pid!, "SIGINT");
    const { code, stderr } = await within(run.exit, 30_000, "exiting after SIGINT");

    expect(stderr).toContain(
      "SIGINT: the run is already stopping because its worker pool failed, so there is nothing to cancel; baton says why and exits once its workers have stopped (Ctrl-C again to stop now)",
    );
    expect(stderr).not.toContain("cancelling");
    expect(stderr).toMatch(
      /baton run: the run failed: worker local-\d \(pid \d+\) exited with code 4/,
    );
    expect(code).toBe(1);
  });
});
