/**
 * The reaper's judgement, on a simulated process table and clock (files in a temp dir): which
 * launchers count as dead (pid gone, lease stale, lease of another instance), which as alive
 * or foreign, and what it may signal — never a group a stranger has joined, never a rank pid
 * that now belongs to another program.
 */
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MANIFEST_FORMAT, type Manifest } from "../../src/rank/manifestFormat.ts";
import { MARKER_FORMAT } from "../../src/rank/markerFormat.ts";
import { OUTCOME_FORMAT, type Outcome } from "../../src/rank/outcomeFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Files, Procs } from "../../src/runtime/ports.ts";
import { type ReapReport, reapDeployments } from "../../src/runtime/reaper.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { filesDenying } from "../fixtures/filesDenying.ts";
import { whileClockRuns } from "../fixtures/whileClockRuns.ts";

const files = nodeFiles();
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const HOST = "this-host";
const NOW = 1_000_000;

function world() {
  const stateDir = mkdtempSync(join(tmpdir(), "baton-reaper-"));
  dirs.push(stateDir);
  const clock = new SimClock();
  clock.fireNext(NOW);
  const procs = new SimProcs({ clock });
  return { stateDir, clock, procs };
}

type World = ReturnType<typeof world>;

/**
 * A rank of `deployment`: a process leading its own group with BATON_DEPLOYMENT set, dying
 * at its `killsToDie`-th KILL.
 */
function rank(w: World, deployment: string, onTerm: "exit" | "ignore" = "exit", killsToDie = 1) {
  return w.procs.start({
    argv: ["python3", "rank.py"],
    env: { BATON_DEPLOYMENT: deployment, BATON_STATE_DIR: w.stateDir },
    newGroup: true,
    onTerm,
    termExitMs: 5,
    killsToDie,
  });
}

async function writeDeployment(
  w: World,
  deployment: string,
  launcher: { pid: number; token: string; host?: string },
  ranks: { pid: number; pgid: number }[],
  lease?: { pid: number; token: string; renewedAt: number },
  fields: Partial<Manifest> = {},
): Promise<void> {
  const paths = deploymentPaths(w.stateDir, deployment);
  if (lease !== undefined) {
    await files.writeAtomic(
      paths.lease,
      encodeStateFile(LEASE_FORMAT, { deployment, staleAfterMs: 30_000, ...lease }),
    );
  }
  const manifest: Manifest = {
    deployment,
    launcher: { host: HOST, ...launcher },
    ranks: ranks.map(({ pid, pgid }, r) => ({ rank: r, localRank: r, host: "local", pid, pgid })),
    worldSize: Math.max(1, ranks.length),
    argv: ["python3", "rank.py"],
    startedAt: NOW,
    ...fields,
  };
  await files.writeAtomic(paths.manifest, encodeStateFile(MANIFEST_FORMAT, manifest));
}

/** Runs the reaper, advancing the simulated clock whenever it waits on it. */
async function reap(w: World, through: Files = files, procs: Procs = w.procs): Promise<ReapReport> {
  return whileClockRuns(
    w.clock,
    reapDeployments({
      stateDir: w.stateDir,
      procs,
      files: through,
      clock: w.clock,
      host: HOST,
      teardown: {
        termGraceMs: 100,
        killWaitMs: 50,
        killAgainWaitMs: 50,
        sweepTermWaitMs: 50,
        sweepKillWaitMs: 50,
        pollMs: 10,
      },
    }),
  );
}

const signalled = (w: World, target: "pid" | "group", id: number) =>
  w.procs.signals.filter((s) => s.target === target && s.id === id && s.signal !== 0);

describe("reapDeployments", () => {
  it("reaps a deployment whose launcher pid is gone, and removes its manifest and lease", async () => {
    const w = world();
    const r = rank(w, "dep-a");
    await writeDeployment(w, "dep-a", { pid: 4242, token: "t" }, [{ pid: r.pid, pgid: r.pid }], {
      pid: 4242,
      token: "t",
      renewedAt: NOW,
    });
    const report = await reap(w);
    expect(report.reaped.map((e) => [e.deployment, e.why])).toEqual([
      ["dep-a", "launcher pid 4242 is gone"],
    ]);
    expect(w.procs.inspect(r.pid)).toBeUndefined();
    expect(await files.read(deploymentPaths(w.stateDir, "dep-a").manifest)).toBeUndefined();
    expect(await files.read(deploymentPaths(w.stateDir, "dep-a").lease)).toBeUndefined();
  });

  it("records that it reaped the deployment and why, keeping the exits its launcher recorded", async () => {
    const w = world();
    const running = rank(w, "dep-a");
    const paths = deploymentPaths(w.stateDir, "dep-a");
    // Rank 0 exited (pid 4300 is gone); so did rank 2, after its launcher died.
    await writeDeployment(w, "dep-a", { pid: 4242, token: "t" }, [
      { pid: 4300, pgid: 4300 },
      { pid: running.pid, pgid: running.pid },
      { pid: 4302, pgid: 4302 },
    ]);
    // The launcher recorded rank 0's exit, then died.
    const outcome: Outcome = {
      deployment: "dep-a",
      launcher: { pid: 4242, token: "t" },
      worldSize: 3,
      argv: ["python3", "rank.py"],
      startedAt: NOW,
      ranks: [
        { rank: 0, host: "local", pid: 4300, exit: { at: NOW + 5, code: 3 } },
        { rank: 1, host: "local", pid: running.pid },
        { rank: 2, host: "local", pid: 4302 },
      ],
    };
    await files.writeAtomic(paths.outcome, encodeStateFile(OUTCOME_FORMAT, outcome));
    // Another deployment's launcher recorded nothing: the manifest says what ran.
    const other = rank(w, "dep-b");
    await writeDeployment(w, "dep-b", { pid: 4243, token: "u" }, [
      { pid: other.pid, pgid: other.pid },
    ]);
    await reap(w);
    const reapedAt = w.clock.now();
    // Rank 1 still ran, and the reap stopped it.
    expect(await readStateFile(files, OUTCOME_FORMAT, paths.outcome)).toEqual({
      ...outcome,
      ranks: [outcome.ranks[0], { ...outcome.ranks[1], reaped: true }, outcome.ranks[2]],
      ended: {
        at: expect.any(Number),
        status: "reaped",
        reason: "launcher pid 4242 is gone",
        leftRunning: [],
      },
    });
    expect(
      await readStateFile(files, OUTCOME_FORMAT, deploymentPaths(w.stateDir, "dep-b").outcome),
    ).toEqual({
      deployment: "dep-b",
      launcher: { pid: 4243, token: "u" },
      worldSize: 1,
      argv: ["python3", "rank.py"],
      startedAt: NOW,
      ranks: [{ rank: 0, host: "local", pid: other.pid, reaped: true }],
      ended: {
        at: expect.any(Number),
        status: "reaped",
        reason: expect.any(String),
        leftRunning: [],
      },
    });
    const ended = (await readStateFile(files, OUTCOME_FORMAT, paths.outcome))?.ended;
    expect(ended?.at).toBeGreaterThanOrEqual(NOW);
    expect(ended?.at).toBeLessThanOrEqual(reapedAt);
  });

  it("names what the ranks left running that it stopped, by pid, program and rank, in its report and the outcome record", async () => {
    const w = world();
    const carries = (rank: string) => ({
      BATON_DEPLOYMENT: "dep-a",
      BATON_STATE_DIR: w.stateDir,
      RANK: rank,
    });
    // Rank 0 (pid 4300) exited on its own, leaving a helper in its group; rank 1 still runs,
    // with a child in its group and one that left it. Their arguments hold a secret.
    const running = rank(w, "dep-a");
    const forgotten = w.procs.start({
      argv: ["sleep", "30", "--token=s3cret"],
      env: carries("0"),
      pgid: 4300,
    });
    const child = w.procs.start({
      argv: ["python3", "serve.py"],
      env: carries("1"),
      ppid: running.pid,
    });
    const escaped = w.procs.start({
      argv: ["/usr/bin/ssh-agent", "-a", "s3cret"],
      env: carries("1"),
      newGroup: true,
    });
    await writeDeployment(w, "dep-a", { pid: 4242, token: "t" }, [
      { pid: 4300, pgid: 4300 },
      { pid: running.pid, pgid: running.pid },
    ]);
    const report = await reap(w);
    const left = [
      { pid: forgotten.pid, rank: 0, program: "sleep", outsideGroup: false },
      { pid: escaped.pid, rank: 1, program: "/usr/bin/ssh-agent", outsideGroup: true },
    ];
    expect(report.reaped.map(({ stopped, leftRunning }) => ({ stopped, leftRunning }))).toEqual([
      { stopped: [1], leftRunning: left },
    ]);
    // The child of the rank it stopped went with its rank; all are gone.
    for (const pid of [running.pid, forgotten.pid, child.pid, escaped.pid]) {
      expect(w.procs.inspect(pid)).toBeUndefined();
    }
    const paths = deploymentPaths(w.stateDir, "dep-a");
    expect((await readStateFile(files, OUTCOME_FORMAT, paths.outcome))?.ended?.leftRunning).toEqual(
      left,
    );
    expect(await files.read(paths.outcome)).not.toContain("s3cret");
  });

  it("names a stray as the process table read it, not as a second read of it finds it", async () => {
    const w = world();
    const running = rank(w, "dep-a");
    const helper = w.procs.start({
      argv: ["/usr/bin/ssh-agent"],
      env: { BATON_DEPLOYMENT: "dep-a", BATON_STATE_DIR: w.stateDir, RANK: "0" },
      newGroup: true,
    });
    await writeDeployment(w, "dep-a", { pid: 4242, token: "t" }, [
      { pid: running.pid, pgid: running.pid },
    ]);
    // Once the table is read, a read of the helper's own entry finds another program: the
    // report is of what the reap targeted, read once.
    let listed = false;
    const procs: Procs = Object.assign(Object.create(w.procs), {
      list: () => {
        const table = w.procs.list();
        listed = true;
        return table;
      },
      inspect: (pid: number) => {
        const info = w.procs.inspect(pid);
        return listed && pid === helper.pid && info !== undefined
          ? { ...info, argv: ["read-again"] }
          : info;
      },
    });
    const report = await reap(w, files, procs);
    expect(report.reaped.map(({ leftRunning }) => leftRunning)).toEqual([
      [{ pid: helper.pid, rank: 0, program: "/usr/bin/ssh-agent", outsideGroup: true }],
    ]);
  });

  it("names a process left running that is already exiting as it reads it by the kernel's name for it, not `?`", async () => {
    const w = world();
    // Rank 0 (pid 4300) exited on its own, leaving a helper in its group that is running its
    // exit when the reaper reads the process table: its arguments are gone, its stat names it.
    const helper = w.procs.start({
      argv: ["sleep", "30"],
      env: { BATON_DEPLOYMENT: "dep-a", BATON_STATE_DIR: w.stateDir, RANK: "0" },
      pgid: 4300,
    });
    await writeDeployment(w, "dep-a", { pid: 4242, token: "t" }, [{ pid: 4300, pgid: 4300 }]);
    let looked = false;
    const procs: Procs = {
      selfPid: w.procs.selfPid,
      spawn: (options) => w.procs.spawn(options),
      signal: (pid, signal) => w.procs.signal(pid, signal),
      signalGroup: (pgid, signal) => w.procs.signalGroup(pgid, signal),
      list: () => {
        const table = w.procs.list();
        if (looked) return table;
        looked = true;
        return table.map((info) =>
          info.pid === helper.pid ? { ...info, argv: [], exiting: true, name: "sleep" } : info,
        );
      },
      environ: (pid) => w.procs.environ(pid),
      inspect: (pid) => w.procs.inspect(pid),
    };
    const report = await reap(w, files, procs);
    expect(report.reaped.map(({ leftRunning }) => leftRunning)).toEqual([
      [{ pid: helper.pid, rank: 0, program: "sleep, exiting", outsideGroup: false }],
    ]);
  });

  it("reaps a deployment whose folder, left empty, cannot be removed, naming the folder and why", async () => {
    const w = world();
    // The deployment's folder is a symbolic link (rmdir fails with ENOTDIR, as root too) to a
    // folder holding the stale lease of a launcher that died before its manifest.
    const target = mkdtempSync(join(tmpdir(), "baton-reaper-elsewhere-"));
    dirs.push(target);
    const paths = deploymentPaths(w.stateDir, "dep-linked");
    symlinkSync(target, paths.dir);
    await files.writeAtomic(
      paths.lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment: "dep-linked",
        pid: 4242,
        token: "t",
        renewedAt: NOW - 31_000,
        staleAfterMs: 30_000,
      }),
    );
    const report = await reap(w);
    expect(report.failed).toEqual([]);
    expect(
      report.reaped.map(({ deployment, foldersNotRemoved }) => ({ deployment, foldersNotRemoved })),
    ).toEqual([
      {
        deployment: "dep-linked",
        foldersNotRemoved: [{ dir: paths.dir, reason: "not a directory (ENOTDIR)" }],
      },
    ]);
    expect(readdirSync(target)).toEqual([]);
  });

  it("leaves a live launcher with a fresh lease alone, and judges a stale or foreign lease dead", async () => {
    const w = world();
    const launcher = w.procs.start({ argv: ["node", "baton", "launch"], onTerm: "ignore" });
    const live = rank(w, "live");
    const stale = rank(w, "stale");
    const other = rank(w, "other-token");
    const common = { pid: launcher.pid, token: "mine" };
    await writeDeployment(w, "live", common, [{ pid: live.pid, pgid: live.pid }], {
      ...common,
      renewedAt: NOW,
    });
    await writeDeployment(w, "stale", common, [{ pid: stale.pid, pgid: stale.pid }], {
      ...common,
      renewedAt: NOW - 31_000,
    });
    await writeDeployment(w, "other-token", common, [{ pid: other.pid, pgid: other.pid }], {
      pid: launcher.pid,
      token: "someone-else",
      renewedAt: NOW,
    });
    await writeDeployment(w, "no-lease", common, []);
    const report = await reap(w);
    expect(report.live).toEqual([{ deployment: "live", pid: launcher.pid }]);
    expect(Object.fromEntries(report.reaped.map((e) => [e.deployment, e.why]))).toEqual({
      "no-lease": `launcher pid ${launcher.pid} holds no lease (it was removed, or pid ${launcher.pid} is another program now)`,
      "other-token": `the lease belongs to another launcher instance (pid ${launcher.pid}), not pid ${launcher.pid} of the manifest`,
      stale: expect.stringMatching(
        /lease was last renewed 310\d\d ms ago \(stale after 30000 ms\)/,
      ),
    });
    expect(w.procs.inspect(live.pid)).toBeDefined();
    expect(signalled(w, "group", live.pid)).toEqual([]);
  });

  it("does not judge a deployment launched on another host", async () => {
    const w = world();
    const r = rank(w, "elsewhere");
    await writeDeployment(w, "elsewhere", { pid: 4242, token: "t", host: "other-host" }, [
      { pid: r.pid, pgid: r.pid },
    ]);
    const report = await reap(w);
    expect(report.foreign).toEqual([{ deployment: "elsewhere", host: "other-host" }]);
    expect(w.procs.signals.filter((s) => s.signal !== 0)).toEqual([]);
  });

  it("leaves another user's deployment in a shared state dir alone, naming its owner", async () => {
    const w = world();
    const r = rank(w, "dep-theirs");
    await writeDeployment(w, "dep-theirs", { pid: 4242, token: "t" }, [
      { pid: r.pid, pgid: r.pid },
    ]);
    const { manifest } = deploymentPaths(w.stateDir, "dep-theirs");
    const report = await reap(
      w,
      filesDenying((path) => path === manifest),
    );
    const owner = process.getuid?.() === 0 ? "root" : expect.any(String);
    expect(report.otherUsers).toEqual([{ deployment: "dep-theirs", owner }]);
    expect(report.failed).toEqual([]);
    expect(w.procs.signals.filter((s) => s.signal !== 0)).toEqual([]);
    expect(await files.read(manifest)).toBeDefined();
  });

  it("names the owner of another user's 0700 deployment by its directory, whose files cannot even be looked at", async () => {
    const w = world();
    const r = rank(w, "dep-closed");
    await writeDeployment(w, "dep-closed", { pid: 4242, token: "t" }, [
      { pid: r.pid, pgid: r.pid },
    ]);
    const { manifest } = deploymentPaths(w.stateDir, "dep-closed");
    const denying = filesDenying((path) => path === manifest);
    const report = await reap(w, {
      ...denying,
      owner: async (path) => {
        if (path === manifest) throw Object.assign(new Error("EACCES"), { code: "EACCES" });
        return denying.owner(path);
      },
    });
    const owner = process.getuid?.() === 0 ? "root" : expect.any(String);
    expect(report.otherUsers).toEqual([{ deployment: "dep-closed", owner }]);
  });

  it("never signals a group a stranger joined; the members that carry the deployment go by pid", async () => {
    const w = world();
    const leader = rank(w, "mixed");
    const stranger = w.procs.start({ argv: ["vim"], pgid: leader.pid, onTerm: "ignore" });
    await writeDeployment(w, "mixed", { pid: 4242, token: "t" }, [
      { pid: leader.pid, pgid: leader.pid },
    ]);
    const report = await reap(w);
    expect(report.reaped.map((e) => e.deployment)).toEqual(["mixed"]);
    expect(signalled(w, "group", leader.pid)).toEqual([]);
    expect(signalled(w, "pid", leader.pid).length).toBeGreaterThan(0);
    expect(signalled(w, "pid", stranger.pid)).toEqual([]);
    expect(w.procs.inspect(stranger.pid)?.state).toBe("sleeping");
  });

  it("never signals a process outside the deployment whose arguments merely name it", async () => {
    const w = world();
    const leader = rank(w, "dep-watched");
    // A user following a rank's log, and the wrapper that started the launcher.
    const tail = w.procs.start({
      argv: ["tail", "-f", "/state/dep-watched/rank-0.log"],
      newGroup: true,
      onTerm: "ignore",
    });
    const wrapper = w.procs.start({
      argv: ["timeout", "150", "baton", "launch", "--name", "dep-watched"],
      newGroup: true,
      onTerm: "ignore",
    });
    await writeDeployment(w, "dep-watched", { pid: 4242, token: "t" }, [
      { pid: leader.pid, pgid: leader.pid },
    ]);
    const report = await reap(w);
    expect(report.reaped.map((e) => e.deployment)).toEqual(["dep-watched"]);
    expect(w.procs.inspect(leader.pid)).toBeUndefined();
    for (const bystander of [tail, wrapper]) {
      expect(signalled(w, "pid", bystander.pid)).toEqual([]);
      expect(w.procs.inspect(bystander.pid)?.state).toBe("sleeping");
    }
  });

  it("never signals a rank of the same name launched from another state dir", async () => {
    const w = world();
    const ours = rank(w, "dep-twin");
    // The twin's arguments name the deployment too, and it leads a group of its own.
    const twin = w.procs.start({
      argv: ["python3", "rank.py", "--deployment=dep-twin"],
      env: { BATON_DEPLOYMENT: "dep-twin", BATON_STATE_DIR: "/home/other/.baton/run" },
      newGroup: true,
      onTerm: "exit",
    });
    await writeDeployment(
      w,
      "dep-twin",
      { pid: 4242, token: "t" },
      [{ pid: ours.pid, pgid: ours.pid }],
      undefined,
      { stateDir: w.stateDir },
    );
    const report = await reap(w);
    expect(report.reaped.map((e) => e.deployment)).toEqual(["dep-twin"]);
    expect(w.procs.inspect(ours.pid)).toBeUndefined();
    expect(signalled(w, "pid", twin.pid)).toEqual([]);
    expect(signalled(w, "group", twin.pid)).toEqual([]);
    expect(w.procs.inspect(twin.pid)?.state).toBe("sleeping");
  });

  it("refuses a manifest whose launch gave its ranks another state dir, saying where to reap it", async () => {
    const w = world();
    const r = w.procs.start({
      argv: ["python3", "rank.py"],
      env: { BATON_DEPLOYMENT: "dep-moved", BATON_STATE_DIR: "/srv/old/.baton/run" },
      newGroup: true,
    });
    await writeDeployment(
      w,
      "dep-moved",
      { pid: 4242, token: "t" },
      [{ pid: r.pid, pgid: r.pid }],
      undefined,
      { stateDir: "/srv/old/.baton/run" },
    );
    const report = await reap(w);
    expect(report.reaped).toEqual([]);
    expect(report.failed.map((e) => [e.deployment, e.error.message])).toEqual([
      [
        "dep-moved",
        `${deploymentPaths(w.stateDir, "dep-moved").manifest} was written by a launch in the state dir /srv/old/.baton/run, which its ranks carry (BATON_STATE_DIR): reap it from there (\`baton reap --state-dir /srv/old/.baton/run\`), or, once none of its processes runs, remove its directory`,
      ],
    ]);
    expect(w.procs.signals.filter((s) => s.signal !== 0)).toEqual([]);
    expect(await files.read(deploymentPaths(w.stateDir, "dep-moved").manifest)).toBeDefined();
  });

  it("leaves a live launcher that recorded another path to its state dir alone, as live", async () => {
    const w = world();
    const launcher = w.procs.start({ argv: ["node", "baton", "launch"], onTerm: "ignore" });
    const r = rank(w, "dep-linked");
    const common = { pid: launcher.pid, token: "mine" };
    await writeDeployment(
      w,
      "dep-linked",
      common,
      [{ pid: r.pid, pgid: r.pid }],
      { ...common, renewedAt: NOW },
      { stateDir: "/srv/link/.baton/run" },
    );
    const report = await reap(w);
    expect(report.live).toEqual([{ deployment: "dep-linked", pid: launcher.pid }]);
    expect(report.failed).toEqual([]);
  });

  it("never signals a rank pid that now belongs to another program", async () => {
    const w = world();
    const unrelated = w.procs.start({ argv: ["postgres"], newGroup: true, onTerm: "ignore" });
    await writeDeployment(w, "reused", { pid: 4242, token: "t" }, [
      { pid: unrelated.pid, pgid: unrelated.pid },
    ]);
    const report = await reap(w);
    expect(report.reaped.map((e) => e.deployment)).toEqual(["reused"]);
    expect(signalled(w, "pid", unrelated.pid)).toEqual([]);
    expect(signalled(w, "group", unrelated.pid)).toEqual([]);
    expect(w.procs.inspect(unrelated.pid)?.state).toBe("sleeping");
  });

  it("clears a lease with no manifest once it is stale, or at once when it names this machine and its launcher is gone here: it died before any rank", async () => {
    const w = world();
    const write = (deployment: string, name: string, value: object) =>
      files.writeAtomic(`${w.stateDir}/${deployment}/${name}`, JSON.stringify(value));
    const lease = (deployment: string, renewedAt: number, host?: string) =>
      files.writeAtomic(
        deploymentPaths(w.stateDir, deployment).lease,
        encodeStateFile(LEASE_FORMAT, {
          deployment,
          pid: 4242,
          ...(host !== undefined && { host }),
          token: "t",
          renewedAt,
          staleAfterMs: 30_000,
        }),
      );
    await lease("died-early", NOW - 31_000);
    await write("died-early", ".lease.json.4242.0a1b2c3d4e5f.tmp", {});
    await write("died-early", "rank-0.log", {});
    await lease("starting", NOW - 1_000);
    await lease("starting-here", NOW - 1_000, HOST);
    await lease("starting-there", NOW - 1_000, "gpu-7");
    const report = await reap(w);
    expect(report.reaped.map((e) => [e.deployment, e.why])).toEqual([
      [
        "died-early",
        expect.stringMatching(
          /^no manifest, and the lease of launcher pid 4242 was last renewed 310\d\d ms ago \(stale after 30000 ms\)$/,
        ),
      ],
      // This machine's, and no pid 4242 runs in this world: it died before its manifest, and
      // nothing is gained by waiting 29 s for its lease to go stale.
      [
        "starting-here",
        "no manifest, and launcher pid 4242 is gone: it died before it wrote its manifest, or as it removed its files",
      ],
    ]);
    expect(report.live).toEqual([]);
    // Another machine's launcher is named, as `baton reap` says it: "pid 4242 on gpu-7".
    expect(report.waiting.sort((a, b) => a.deployment.localeCompare(b.deployment))).toEqual([
      { deployment: "starting", pid: 4242, host: undefined, staleInMs: 29_000 },
      { deployment: "starting-there", pid: 4242, host: "gpu-7", staleInMs: 29_000 },
    ]);
    expect(await files.read(deploymentPaths(w.stateDir, "starting-here").lease)).toBeUndefined();
    expect(readdirSync(join(w.stateDir, "died-early"))).toEqual(["rank-0.log"]);
    expect(await files.read(deploymentPaths(w.stateDir, "starting").lease)).toBeDefined();
    expect(w.procs.signals.filter((s) => s.signal !== 0)).toEqual([]);
  });

  it("with neither manifest nor lease, stops a rank still running and clears files untouched for 30 s", async () => {
    const w = world();
    /** A file dated `ageMs` before NOW on the simulated clock (mtime in seconds). */
    const write = async (deployment: string, name: string, ageMs: number) => {
      const path = `${w.stateDir}/${deployment}/${name}`;
      await files.writeAtomic(path, "{");
      await utimes(path, (NOW - ageMs) / 1000, (NOW - ageMs) / 1000);
    };
    // A launcher killed while writing its first lease, long ago; one writing it now.
    await write("died-writing", ".lease.json.4242.0a1b2c3d4e5f.tmp", 31_000);
    await write("died-writing", "rank-0.log", 31_000);
    await write("writing", ".lease.json.4243.0a1b2c3d4e5f.tmp", 1_000);
    // A launcher killed while clearing its files after a verified teardown.
    await write("died-clearing", "rank-1.marker.json", 45_000);
    await write("died-clearing", "rank-1.ack.json", 40_000);
    // A deployment that ended cleanly: only its logs.
    await write("ended", "rank-0.log", 90_000);
    // A rank still heartbeating its marker with no launcher: an orphan, reaped at once.
    const orphan = rank(w, "orphan");
    const marker = deploymentPaths(w.stateDir, "orphan").marker(0);
    await files.writeAtomic(
      marker,
      encodeStateFile(MARKER_FORMAT, {
        deployment: "orphan",
        rank: 0,
        pid: orphan.pid,
        phase: "ready",
        startedAt: NOW - 60_000,
        heartbeatAt: NOW,
        active: 0,
        epoch: 0,
      }),
    );
    await utimes(marker, NOW / 1000, NOW / 1000);
    const report = await reap(w);
    expect(report.reaped.map((e) => [e.deployment, e.why])).toEqual([
      [
        "died-clearing",
        "no manifest and no lease, and its control files (rank-1.ack.json, rank-1.marker.json) untouched for 40000 ms: its launcher died writing its first lease or clearing its files",
      ],
      [
        "died-writing",
        "no manifest and no lease, and its control files (.lease.json.4242.0a1b2c3d4e5f.tmp) untouched for 31000 ms: its launcher died writing its first lease or clearing its files",
      ],
      ["orphan", `no manifest and no lease, but rank pid ${orphan.pid} still runs`],
    ]);
    expect(w.procs.inspect(orphan.pid)).toBeUndefined();
    expect(readdirSync(w.stateDir)).not.toContain("orphan");
    expect([report.live, report.failed, report.foreign]).toEqual([[], [], []]);
    expect(readdirSync(join(w.stateDir, "died-writing"))).toEqual(["rank-0.log"]);
    expect(readdirSync(w.stateDir)).not.toContain("died-clearing");
    expect(readdirSync(join(w.stateDir, "writing"))).toEqual([".lease.json.4243.0a1b2c3d4e5f.tmp"]);
    expect(readdirSync(join(w.stateDir, "ended"))).toEqual(["rank-0.log"]);
    expect(w.procs.signals.filter((s) => s.signal !== 0 && s.id !== orphan.pid)).toEqual([]);
  });

  it("gives a rank its launcher died before writing into the manifest the whole escalation", async () => {
    const w = world();
    // Started, then the launcher died before recording it: the manifest lists no rank. It
    // ignores TERM and survives its first KILL.
    const unlisted = rank(w, "unlisted", "ignore", 2);
    await writeDeployment(w, "unlisted", { pid: 4242, token: "t" }, [], {
      pid: 4242,
      token: "t",
      renewedAt: NOW,
    });
    const report = await reap(w);
    expect(report.reaped.map((e) => e.deployment)).toEqual(["unlisted"]);
    expect(report.failed).toEqual([]);
    expect(signalled(w, "pid", unlisted.pid).map((s) => s.signal)).toEqual([
      "SIGTERM",
      "SIGKILL",
      "SIGKILL",
    ]);
    expect(w.procs.inspect(unlisted.pid)).toBeUndefined();
  });

  it("keeps the manifest of a deployment it could not tear down, and reports it", async () => {
    const w = world();
    const stuck = w.procs.start({
      argv: ["python3", "rank.py"],
      env: { BATON_DEPLOYMENT: "stuck", BATON_STATE_DIR: w.stateDir },
      newGroup: true,
      killsToDie: 10,
      onTerm: "ignore",
    });
    await writeDeployment(w, "stuck", { pid: 4242, token: "t" }, [
      { pid: stuck.pid, pgid: stuck.pid },
    ]);
    const report = await reap(w);
    expect(report.failed.map((e) => [e.deployment, e.error.name])).toEqual([
      ["stuck", "TeardownError"],
    ]);
    expect(await files.read(deploymentPaths(w.stateDir, "stuck").manifest)).toBeDefined();
  });
});
