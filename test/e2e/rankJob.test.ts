/**
 * A graph job with `ranks` under `baton run`, with worker processes: the worker that leased
 * the job is killed with SIGKILL while its ranks run. Its ranks must not outlive it for
 * long, the job runs again on the replacement worker, and that launch reaps the old
 * deployment. Every process the test starts is stopped by its pid, even on failure.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createEngine, localPool } from "../../src/index.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { MANIFEST_FORMAT, type Manifest } from "../../src/rank/manifestFormat.ts";
import { MARKER_FORMAT } from "../../src/rank/markerFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { endedDeployments } from "../fixtures/endedDeployments.ts";
import { printedJoin } from "../fixtures/printedJoin.ts";
import { alive, cleanUpRanks, procs, stray, tempDir } from "../fixtures/rankStrays.ts";

afterEach(async () => {
  stopBatons();
  await cleanUpRanks();
});

async function until<T>(get: () => Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The manifest of the first deployment in `dir` that has both ranks started. */
async function startedGroup(dir: string, except?: string): Promise<Manifest | undefined> {
  for (const deployment of readdirSync(dir)) {
    if (deployment === except) continue;
    const manifest = await readStateFile(
      nodeFiles(),
      MANIFEST_FORMAT,
      deploymentPaths(dir, deployment).manifest,
    ).catch(() => undefined);
    if (manifest?.ranks.length === 2) return manifest;
  }
  return undefined;
}

/**
 * The group of ranks.graph.ts (BATON_TEST_IGNORE_TERM) in `dir` once both its ranks are ready,
 * when each ignores TERM; its ranks are stopped when the test ends.
 */
async function readyGroup(dir: string): Promise<Manifest> {
  const group = await until(() => startedGroup(dir), "the group");
  for (const rank of group.ranks) stray(rank.pid, group.deployment);
  const paths = deploymentPaths(dir, group.deployment);
  await until(async () => {
    const markers = await Promise.all(
      group.ranks.map((rank) =>
        readStateFile(nodeFiles(), MARKER_FORMAT, paths.marker(rank.rank)).catch(() => undefined),
      ),
    );
    return markers.every((marker) => marker?.phase === "ready") || undefined;
  }, "both ranks ready");
  return group;
}

/** A verified teardown of `group`: its ranks dead, only its outcome and logs left. */
function expectTornDown(dir: string, group: Manifest): void {
  expect(readdirSync(join(dir, group.deployment)).sort()).toEqual([
    "outcome.json",
    "rank-0.log",
    "rank-1.log",
  ]);
  for (const rank of group.ranks) expect(alive(rank.pid)).toBe(false);
}

describe("a rank job in a worker process", () => {
  it("survives the loss of its worker: the ranks go, the job reruns elsewhere, the old group is reaped", async () => {
    const stateDir = tempDir();
    const run = startBaton(
      ["run", "test/fixtures/ranks.graph.ts", "--workers", "1", "--store", tempDir(), "--json"],
      { env: { BATON_TEST_STATE_DIR: stateDir } },
    );
    const first = await until(() => startedGroup(stateDir), "the first group");
    const ranks = first.ranks.map((rank) => rank.pid);
    for (const pid of ranks) stray(pid, first.deployment);
    expect(first.launcher.pid).not.toBe(run.child.pid);
    procs.signal(first.launcher.pid, "SIGKILL");

    const result = await run.exit;
    expect(result.code).toBe(0);
    const value = JSON.parse(result.stdout).jobs[0].value;
    expect(value.deployment).not.toBe(first.deployment);
    expect(value.ranks).toEqual([
      { rank: 0, code: 0 },
      { rank: 1, code: 0 },
    ]);
    for (const pid of ranks) expect(alive(pid)).toBe(false);
    expect(readdirSync(join(stateDir, first.deployment)).sort()).toEqual([
      "outcome.json",
      "rank-0.log",
      "rank-1.log",
    ]);
    // The reap that cleared the old group says so in its outcome record.
    const outcome = JSON.parse(
      readFileSync(join(stateDir, first.deployment, "outcome.json"), "utf8"),
    );
    expect(outcome.ended).toMatchObject({ status: "reaped" });
  }, 90_000);

  it("a worker whose coordinator is killed ends its rank group's teardown before it exits", async () => {
    const stateDir = tempDir();
    const env = { env: { BATON_TEST_STATE_DIR: stateDir, BATON_TEST_IGNORE_TERM: "1" } };
    // A worker joined by hand: a local pool's would be stopped by the next local pool started
    // on this machine (it empties the cgroups of dead coordinators' pools), a test's too.
    const run = startBaton(
      ["run", "test/fixtures/ranks.graph.ts", "--workers", "0", "--store", tempDir()],
      env,
    );
    const { args } = await printedJoin(run);
    // It exits 0.5 s after it leaves the run; the ranks ignore TERM for 3 s.
    const worker = startBaton([...args, "--abort-grace", "500ms"], env);
    const group = await readyGroup(stateDir);
    const paths = deploymentPaths(stateDir, group.deployment);
    procs.signal(run.child.pid as number, "SIGKILL");
    await run.exit;
    expect((await worker.exit).code).toBe(3);
    // It used to exit 0.5 s (--abort-grace) after it lost its coordinator, in the middle of the
    // TERM grace: it never KILLed the ranks and its manifest stayed for a reaper.
    expectTornDown(stateDir, group);
    const outcome = JSON.parse(readFileSync(paths.outcome, "utf8"));
    expect(outcome.ended).toMatchObject({ status: "stopped" });
  }, 90_000);

  it("a cancel whose grace runs out while its rank group is torn down lets the teardown end, verified", async () => {
    const stateDir = tempDir();
    process.env.BATON_TEST_STATE_DIR = stateDir;
    process.env.BATON_TEST_IGNORE_TERM = "1";
    try {
      const { jobs, default: graph } = await import("../fixtures/ranks.graph.ts");
      const run = createEngine({
        jobs,
        workers: localPool({ jobsModule: join(ROOT, "test/fixtures/ranks.graph.ts"), count: 1 }),
        batonDir: tempDir(),
        // Shorter than the ranks' 3 s TERM grace: the worker is tearing down, not stuck.
        cancelGraceMs: 1_000,
      }).run(graph);
      const group = await readyGroup(stateDir);
      run.cancel("the caller went away");
      const result = await run;
      expect(result.counts).toMatchObject({ cancelled: 1 });
      // Killed at the cancel's grace as a worker whose handler ignores its abort, it left the
      // ranks' manifest, and ranks no KILL had reached.
      expectTornDown(stateDir, group);
    } finally {
      delete process.env.BATON_TEST_STATE_DIR;
      delete process.env.BATON_TEST_IGNORE_TERM;
    }
  }, 90_000);

  it("keeps the logs of ended deployments as baton run --keep-ended-logs says, in its worker processes", async () => {
    const stateDir = tempDir();
    endedDeployments(stateDir, 3, 3, Date.now());
    const args = ["run", "test/fixtures/ranks.graph.ts", "--workers", "1", "--json"];
    const env = { env: { BATON_TEST_STATE_DIR: stateDir } };
    const refused = await startBaton([...args, "--keep-ended-logs", "3 days"], env).exit;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^baton run: --keep-ended-logs must be COUNT\[,AGE\]/);

    const result = await startBaton(
      [...args, "--store", tempDir(), "--keep-ended-logs", "1,1d"],
      env,
    ).exit;
    expect(result.code).toBe(0);
    const { deployment } = JSON.parse(result.stdout).jobs[0].value;
    expect(readdirSync(stateDir)).toEqual([deployment]);
  }, 90_000);
});
