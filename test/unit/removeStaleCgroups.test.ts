/**
 * The empty cgroups that deployments which are gone left behind, removed by the reaper that
 * every launch and `baton reap` run: on a simulated process table with cgroups and clock,
 * files in a temp dir. Never a cgroup whose deployment has a lease (a launch that has just
 * made it, before its first rank) or a manifest, never one with a process in it, never one
 * of another state dir.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deploymentCgroupName } from "../../src/rank/deploymentCgroup.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Containment } from "../../src/runtime/ports.ts";
import { type ReapReport, reapDeployments } from "../../src/runtime/reaper.ts";
import { removeStaleCgroups } from "../../src/runtime/removeStaleCgroups.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { whileClockRuns } from "../fixtures/whileClockRuns.ts";

const files = nodeFiles();
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const NOW = 1_000_000;

/**
 * A state dir, a clock, and a process table whose containment lists its cgroups, as the node
 * port lists the `baton` folder.
 */
function world() {
  const stateDir = mkdtempSync(join(tmpdir(), "baton-stale-cgroups-"));
  dirs.push(stateDir);
  const clock = new SimClock();
  clock.fireNext(NOW);
  const procs = new SimProcs({ clock, cgroups: true });
  const base = procs.containment as Containment;
  const made = new Set<string>();
  const containment: Containment = {
    create: (name) => {
      const cgroup = base.create(name);
      made.add(cgroup);
      return cgroup;
    },
    members: (cgroup) => base.members(cgroup),
    kill: (cgroup) => base.kill(cgroup),
    remove: (cgroup) => base.remove(cgroup),
    list: () => [...made].filter((cgroup) => base.members(cgroup) !== undefined),
  };
  Object.defineProperty(procs, "containment", { value: containment });
  const info = vi.fn();
  const logger = { info, warn: vi.fn(), debug: vi.fn() } as unknown as Logger;
  /** The cgroup a launch of `deployment` in this state dir makes. */
  const cgroupOf = (deployment: string, dir = stateDir) =>
    containment.create(deploymentCgroupName({ deployment, stateDir: dir }));
  const exists = (cgroup: string) => containment.members(cgroup) !== undefined;
  return { stateDir, clock, procs, containment, logger, info, cgroupOf, exists };
}

type World = ReturnType<typeof world>;

/** Runs the reaper, advancing the simulated clock whenever it waits on it. */
async function reap(w: World): Promise<ReapReport> {
  return whileClockRuns(
    w.clock,
    reapDeployments({
      stateDir: w.stateDir,
      procs: w.procs,
      files,
      clock: w.clock,
      logger: w.logger,
    }),
  );
}

async function writeLease(w: World, deployment: string, pid: number, renewedAt: number) {
  await files.writeAtomic(
    deploymentPaths(w.stateDir, deployment).lease,
    encodeStateFile(LEASE_FORMAT, { deployment, pid, token: "t", renewedAt, staleAfterMs: 30_000 }),
  );
}

describe("the reaper's removal of stale cgroups", () => {
  it("removes the empty cgroup an ended deployment left (its removal gave up), keeping its logs, and says so", async () => {
    const w = world();
    const cgroup = w.cgroupOf("trained");
    // What a verified teardown leaves when its release gave up: the logs, the outcome, no
    // control file.
    const { dir } = deploymentPaths(w.stateDir, "trained");
    mkdirSync(dir);
    await files.writeAtomic(join(dir, "rank-0.log"), "done\n");
    const report = await reap(w);
    expect(report.cgroups).toEqual([{ deployment: "trained", cgroup }]);
    expect(w.exists(cgroup)).toBe(false);
    // The claim it removed the cgroup under is gone again; the logs stay.
    expect(readdirSync(dir)).toEqual(["rank-0.log"]);
    expect(w.info).toHaveBeenCalledWith(
      { deployment: "trained", cgroup },
      "removed the empty cgroup of deployment trained, left by a launch or reap that is over",
    );
  });

  it("removes one whose deployment's folder is gone too, without making the folder", async () => {
    const w = world();
    const cgroup = w.cgroupOf("pruned");
    expect((await reap(w)).cgroups).toEqual([{ deployment: "pruned", cgroup }]);
    expect(readdirSync(w.stateDir)).toEqual([]);
  });

  it("removes in the same pass the cgroup of a launcher killed before it wrote its manifest, once its lease is reaped", async () => {
    const w = world();
    const cgroup = w.cgroupOf("early");
    await writeLease(w, "early", 4242, NOW - 60_000);
    const report = await reap(w);
    expect(report.reaped.map((entry) => entry.deployment)).toEqual(["early"]);
    expect(report.cgroups).toEqual([{ deployment: "early", cgroup }]);
    expect(w.exists(cgroup)).toBe(false);
  });

  it("keeps the empty cgroup of a launch that holds its lease and has not started a rank yet", async () => {
    const w = world();
    const cgroup = w.cgroupOf("starting");
    await writeLease(w, "starting", w.procs.selfPid, NOW);
    const { lease } = deploymentPaths(w.stateDir, "starting");
    const before = readFileSync(lease, "utf8");
    const report = await reap(w);
    expect(report.waiting.map((entry) => entry.deployment)).toEqual(["starting"]);
    expect(report.cgroups).toEqual([]);
    expect(w.exists(cgroup)).toBe(true);
    expect(readFileSync(lease, "utf8")).toBe(before);
  });

  it("keeps a cgroup whose deployment has a manifest, for the reap of that manifest", async () => {
    const w = world();
    const cgroup = w.cgroupOf("kept");
    const { manifest } = deploymentPaths(w.stateDir, "kept");
    await files.writeAtomic(manifest, "not read: its presence is enough");
    const removed = await removeStaleCgroups({ ...w, files, host: "sim" });
    expect(removed).toEqual([]);
    expect(w.exists(cgroup)).toBe(true);
    // The claim taken to look was given back.
    expect(existsSync(deploymentPaths(w.stateDir, "kept").lease)).toBe(false);
  });

  it("never removes a cgroup with a process in it, nor one of another state dir or an old launcher's", async () => {
    const w = world();
    const busy = w.cgroupOf("busy");
    w.procs.start({ argv: ["sleep", "60"], cgroup: busy });
    const elsewhere = w.cgroupOf("other", "/srv/another-state-dir");
    const old = w.containment.create("legacy");
    const report = await reap(w);
    expect(report.cgroups).toEqual([]);
    for (const cgroup of [busy, elsewhere, old]) expect(w.exists(cgroup)).toBe(true);
    expect(readdirSync(w.stateDir)).toEqual([]);
  });

  it("does nothing where the state dir does not exist: a reap does not make it", async () => {
    const w = world();
    const missing = join(w.stateDir, "missing");
    const cgroup = w.cgroupOf("gone", missing);
    const removed = await removeStaleCgroups({ ...w, stateDir: missing, files, host: "sim" });
    expect(removed).toEqual([]);
    expect(w.exists(cgroup)).toBe(true);
    expect(existsSync(missing)).toBe(false);
  });
});
