/**
 * One deployment name in two state dirs at once, on real processes: a deployment is its state
 * dir and its name, so stopping (or reaping) one never touches the other's ranks, contained
 * or not. Every process a test starts is stopped by its pid when the test ends, even on
 * failure.
 */
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { reapDeployments } from "../../src/runtime/reaper.ts";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { FAST_TEARDOWN, launch, stopLaunched } from "../fixtures/launchedGroups.ts";
import { alive, cleanUpRanks, stray, tempDir, until } from "../fixtures/rankStrays.ts";

afterEach(async () => {
  await stopLaunched();
  stopBatons();
  cleanUpRanks();
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

it("baton reap in one state dir leaves a same-name deployment of another state dir running", async () => {
  const name = nameFor("reaped-twin");
  const orphanDir = tempDir();
  const launcher = startBaton([
    "launch",
    "--world",
    "1",
    "--state-dir",
    orphanDir,
    "--name",
    name,
    "--",
    "sleep",
    "60",
  ]);
  const paths = deploymentPaths(orphanDir, name);
  let orphanPids: number[] = [];
  await until(async () => {
    const manifest = await readStateFile(nodeFiles(), MANIFEST_FORMAT, paths.manifest).catch(
      () => undefined,
    );
    orphanPids = manifest?.ranks.map((rank) => rank.pid) ?? [];
    return orphanPids.length === 1;
  }, "the orphan's manifest");
  for (const pid of orphanPids) stray(pid, name);
  launcher.child.kill("SIGKILL");
  await launcher.exit;

  const live = await sleepers(name, tempDir(), true);
  const livePids = live.pids();

  const report = await reapDeployments({ stateDir: orphanDir, teardown: FAST_TEARDOWN });
  expect(report.reaped.map((reaped) => reaped.deployment)).toEqual([name]);
  expect(orphanPids.filter(alive)).toEqual([]);
  expect(livePids.filter(alive)).toEqual(livePids);
  expect(existsSync(paths.manifest)).toBe(false);
}, 30_000);
