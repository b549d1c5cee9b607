/**
 * One deployment name in two state dirs at once, on real processes: a deployment is its state
 * dir and its name, so stopping (or reaping) one never touches the other's ranks, contained
 * or not. Every process a test starts is stopped by its pid when the test ends, even on
 * failure.
 */
import { existsSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { readDeploymentStatuses } from "../../src/rank/deploymentStatus.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import { reapDeployments } from "../../src/runtime/reaper.ts";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { FAST_TEARDOWN, launch, stopLaunched } from "../fixtures/launchedGroups.ts";
import { alive, cleanUpRanks, stray, tempDir, until } from "../fixtures/rankStrays.ts";

afterEach(async () => {
  await stopLaunched();
  stopBatons();
  await cleanUpRanks();
});

/** A name no other run of this file on this machine uses. */
const nameFor = (what: string) => `${what}-${process.pid}`;

/** Two ranks that sleep, launched under `name` in `stateDir`; their pids noted as strays. */
async function sleepers(name: string, stateDir: string, contain: boolean) {
  const group = launch({ argv: ["sleep", "60"], worldSize: 2, name, stateDir, contain });
  await until(() => group.pids().length === 2, `the ranks of ${name} in ${stateDir}`);
  for (const pid of group.pids()) stray(pid, name);
  return group;
}

describe.each([
  ["contained where the machine allows it", true],
  ["not contained", false],
])("one name in two state dirs, %s", (_, contain) => {
  it("stopping one leaves the other's ranks running, and stopping that one stops them", async () => {
    const name = nameFor(contain ? "twin-c" : "twin");
    const dirs = [tempDir(), tempDir()] as const;
    const first = await sleepers(name, dirs[0], contain);
    const second = await sleepers(name, dirs[1], contain);
    const secondPids = second.pids();
    const cgroups = await Promise.all(
      dirs.map(
        async (dir) =>
          (await readStateFile(nodeFiles(), MANIFEST_FORMAT, deploymentPaths(dir, name).manifest))
            ?.cgroup,
      ),
    );
    // Contained (where this machine allows it), each in a cgroup of its own.
    if (cgroups[0] !== undefined) expect(cgroups[1]).not.toBe(cgroups[0]);

    await first.stop("test");
    expect(secondPids.filter(alive)).toEqual(secondPids);

    await second.stop("test");
    expect(secondPids.filter(alive)).toEqual([]);
  });
});

/** `baton launch` of one rank that sleeps, killed with SIGKILL once its rank runs: an orphan. */
async function orphan(name: string, stateDir: string): Promise<number[]> {
  const launcher = startBaton([
    "launch",
    "--world",
    "1",
    "--state-dir",
    stateDir,
    "--name",
    name,
    "--",
    "sleep",
    "60",
  ]);
  let pids: number[] = [];
  await until(async () => {
    const manifest = await readStateFile(
      nodeFiles(),
      MANIFEST_FORMAT,
      deploymentPaths(stateDir, name).manifest,
    ).catch(() => undefined);
    pids = manifest?.ranks.map((rank) => rank.pid) ?? [];
    return pids.length === 1;
  }, "the orphan's manifest");
  for (const pid of pids) stray(pid, name);
  launcher.child.kill("SIGKILL");
  await launcher.exit;
  return pids;
}

it("an orphan launched through a symlinked state dir is seen and reaped through the real path, and through the link", async () => {
  for (const [through, reapedThrough] of [
    ["link", "real path"],
    ["real path", "link"],
  ] as const) {
    const name = nameFor(`linked-${through === "link" ? "l" : "r"}`);
    const real = tempDir();
    const link = join(tempDir(), "state");
    symlinkSync(real, link);
    const [launchDir, reapDir] = through === "link" ? [link, real] : [real, link];
    const pids = await orphan(name, launchDir);
    const ports = { files: nodeFiles(), procs: nodeProcs(), clock: nodeClock() };
    const [status] = await readDeploymentStatuses(ports, reapDir);
    expect(status).toMatchObject({ deployment: name, state: "orphaned" });
    // Its ranks carry the path it was launched through: still its own, not a reused pid.
    expect(status?.ranks.map(({ pid, alive }) => ({ pid, alive }))).toEqual(
      pids.map((pid) => ({ pid, alive: true })),
    );
    const report = await reapDeployments({ stateDir: reapDir, teardown: FAST_TEARDOWN });
    expect({ reapedThrough, reaped: report.reaped.map((r) => r.deployment) }).toEqual({
      reapedThrough,
      reaped: [name],
    });
    await until(() => pids.filter(alive).length === 0, `the ranks of ${name} stopped`);
  }
}, 60_000);

it("baton reap in one state dir leaves a same-name deployment of another state dir running", async () => {
  const name = nameFor("reaped-twin");
  const orphanDir = tempDir();
  const orphanPids = await orphan(name, orphanDir);
  const paths = deploymentPaths(orphanDir, name);

  const live = await sleepers(name, tempDir(), true);
  const livePids = live.pids();

  const report = await reapDeployments({ stateDir: orphanDir, teardown: FAST_TEARDOWN });
  expect(report.reaped.map((reaped) => reaped.deployment)).toEqual([name]);
  expect(orphanPids.filter(alive)).toEqual([]);
  expect(livePids.filter(alive)).toEqual(livePids);
  expect(existsSync(paths.manifest)).toBe(false);
}, 30_000);
