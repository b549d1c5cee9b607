/**
 * Containment on real processes: a rank's child that leaves its process group and empties its
 * environment (`setsid`, `env -i`) is found through the deployment's cgroup by the group's
 * own teardown and by the reaper after its launcher was killed; without the cgroup it gets
 * away. Needs a cgroup v2 this user can write (root, or a delegated cgroup): CI has one.
 * Every process a test starts is stopped by its pid when the test ends.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Procs } from "../../src/runtime/ports.ts";
import type { LaunchSpec, RankGroup } from "../../src/runtime/rankGroup.ts";
import { reapDeployments } from "../../src/runtime/reaper.ts";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { canContain } from "../fixtures/canContain.ts";
import { FAST_TEARDOWN, launch, stopLaunched } from "../fixtures/launchedGroups.ts";
import { alive, cleanUpRanks, procs, stray, tempDir, until } from "../fixtures/rankStrays.ts";

const ESCAPING_RANK = join(ROOT, "test/fixtures/escapingRank.mjs");
/** Whether this machine lets this user make a cgroup and move a process into it. */

afterEach(async () => {
  await stopLaunched();
  stopBatons();
  await cleanUpRanks();
});

/** The escapee's pid, once the rank wrote it; cleaned up by pid if a test leaves it. */
async function escapee(pidFile: string, deployment: string): Promise<number> {
  await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8") !== "", "the escapee");
  const pid = Number(readFileSync(pidFile, "utf8"));
  stray(pid, deployment);
  return pid;
}

/** A group of one rank that starts an escapee and writes its pid to `pidFile`. */
function launchEscaping(spec: Partial<LaunchSpec>, pidFile: string): RankGroup {
  return launch({ argv: [process.execPath, ESCAPING_RANK, pidFile], worldSize: 1, ...spec });
}

describe("ranks where the machine refuses a cgroup", () => {
  it("start all the same, in their own process groups, and the refusal is logged at info", async () => {
    const stateDir = tempDir();
    const lines: { msg: string; err?: { message: string } }[] = [];
    const logger = pino(
      { level: "info" },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    );
    const refusing: Procs = {
      ...procs,
      containment: {
        create: () => {
          throw new Error("EACCES: permission denied");
        },
        members: () => undefined,
        list: () => [],
        remove: () => true,
        kill: () => true,
      },
    };
    const group = launchEscaping(
      { stateDir, logger, ports: { procs: refusing }, argv: ["/bin/sh", "-c", "exit 0"] },
      join(stateDir, "unused"),
    );
    const exit = await group.wait();
    expect(exit.status).toBe("succeeded");
    expect(lines.find((line) => line.msg === "ranks not contained")?.err?.message).toBe(
      "EACCES: permission denied",
    );
  });
});

describe.skipIf(!canContain(procs, "containment"))("ranks contained in a cgroup", () => {
  it("the group's teardown stops a descendant that left its group and emptied its environment", async () => {
    const stateDir = tempDir();
    const pidFile = join(stateDir, "escapee.pid");
    const group = launchEscaping({ stateDir }, pidFile);
    const pid = await escapee(pidFile, group.deployment);
    const { manifest: manifestPath } = deploymentPaths(stateDir, group.deployment);
    const manifest = await readStateFile(nodeFiles(), MANIFEST_FORMAT, manifestPath);
    const cgroup = manifest?.cgroup as string;
    expect(procs.containment?.members(cgroup)).toContain(pid);
    expect(procs.inspect(pid)?.pgid).toBe(pid);
    expect(procs.environ(pid)).toEqual({});

    const report = await group.stop();
    expect(report.swept).toContain(pid);
    expect(alive(pid)).toBe(false);
    expect(existsSync(cgroup)).toBe(false);
  });

  it("the group's teardown reads the cgroup only for processes their environment does not prove", async () => {
    let reads = 0;
    const counting: Procs = {
      ...procs,
      containment: {
        ...procs.containment!,
        members: (cgroup) => {
          reads++;
          return procs.containment!.members(cgroup);
        },
      },
    };
    const group = launch({ argv: ["sleep", "60"], worldSize: 2, ports: { procs: counting } });
    await until(() => group.pids().length === 2, "the ranks");
    for (const pid of group.pids()) stray(pid, group.deployment);
    reads = 0;
    const report = await group.stop();
    // TERM, the quick looks at the ranks while they die, the look at their groups: none reads
    // it (each rank carries its environment, or is dead); the sweep's scan of the whole table
    // does, once.
    const probes = report.steps.filter((step) => / (TERM to|awaitTerm|sweep)/.test(step));
    expect(probes.length).toBeGreaterThan(2);
    expect(reads).toBe(1);
  });

  it("baton status counts the processes in the cgroup, strays included", async () => {
    const stateDir = tempDir();
    const pidFile = join(stateDir, "escapee.pid");
    const group = launchEscaping({ stateDir }, pidFile);
    await escapee(pidFile, group.deployment);
    const json = await startBaton(["status", "--state-dir", stateDir, "--json"]).exit;
    const [status] = JSON.parse(json.stdout).deployments;
    expect(status.cgroup).toEqual({
      path: expect.stringMatching(new RegExp(`/baton/${group.deployment}-[0-9a-f]{12}$`)),
      processes: 2,
      gone: false,
      error: null,
    });
    const text = await startBaton(["status", "--state-dir", stateDir]).exit;
    expect(text.stdout.split("\n")[0]).toMatch(/ {2}contained: 2 processes$/);
  });

  it("without containment (contain: false) the same descendant gets away", async () => {
    const pidFile = join(tempDir(), "escapee.pid");
    const group = launchEscaping({ contain: false }, pidFile);
    const pid = await escapee(pidFile, group.deployment);
    const report = await group.stop();
    expect(report.verified).toBe(true);
    expect(alive(pid)).toBe(true);
  });

  it("the reaper stops it after its launcher was killed with SIGKILL, and removes the cgroup", async () => {
    const dir = tempDir();
    const pidFile = join(dir, "escapee.pid");
    // Its cgroup is baton/<name>-<hash of the state dir> below this machine's: unique either way.
    const name = `contained-${process.pid}`;
    const launcher = startBaton([
      "launch",
      "--world",
      "1",
      "--state-dir",
      dir,
      "--name",
      name,
      "--",
      process.execPath,
      ESCAPING_RANK,
      pidFile,
    ]);
    const pid = await escapee(pidFile, name);
    const paths = deploymentPaths(dir, name);
    await until(() => existsSync(paths.manifest), "the manifest");
    const manifest = await readStateFile(nodeFiles(), MANIFEST_FORMAT, paths.manifest);
    const cgroup = manifest?.cgroup as string;
    for (const rank of manifest?.ranks ?? []) stray(rank.pid, name);
    launcher.child.kill("SIGKILL");
    await launcher.exit;
    expect(alive(pid)).toBe(true);

    const report = await reapDeployments({ stateDir: dir, teardown: FAST_TEARDOWN });
    expect(report.reaped.map((reaped) => reaped.deployment)).toEqual([name]);
    expect(alive(pid)).toBe(false);
    expect(existsSync(cgroup)).toBe(false);
    expect(existsSync(paths.manifest)).toBe(false);
  }, 30_000);
});
