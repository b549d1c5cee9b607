/**
 * `baton status` as a user runs it (`node bin/baton.js status …`) on a state dir the test
 * fills with files, whose pids are processes the test starts (live) or started and let exit
 * (dead). Every process still running when a test ends is SIGKILLed by pid, and the test's
 * state dir removed, even when it fails or runs out of time.
 */
import { chmod, mkdir, utimes, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import type { DeploymentStatus } from "../../src/rank/deploymentStatus.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { MARKER_FORMAT, type Marker } from "../../src/rank/markerFormat.ts";
import { OUTCOME_FORMAT } from "../../src/rank/outcomeFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcHandle } from "../../src/runtime/ports.ts";
import { userName } from "../../src/runtime/userName.ts";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const procs = nodeProcs();
const files = nodeFiles();
const started = new Set<ProcHandle>();

afterEach(async () => {
  stopBatons();
  const left = [...started];
  started.clear();
  for (const handle of left) procs.signal(handle.pid, "SIGKILL");
  await Promise.all(left.map((handle) => handle.exited));
});

/** A process that runs until the test ends, carrying `deployment` in its environment. */
function livePid(deployment = "none"): number {
  const handle = procs.spawn({
    argv: ["sleep", "120"],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", BATON_DEPLOYMENT: deployment },
  });
  started.add(handle);
  return handle.pid;
}

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const handle = procs.spawn({ argv: ["true"] });
  await handle.exited;
  return handle.pid;
}

const baton = (args: string[]) => startBaton(args).exit;

/** The commands given a state dir, each with the arguments it needs besides `--state-dir`. */
const EVERY_STATE_DIR_COMMAND: [string, ...string[]][] = [
  ["status"],
  ["reap"],
  ["launch", "--world", "1", "--", "true"],
];

/**
 * A state dir of the running test's own, removed once that test has ended, passed, failed or
 * out of time, whatever the other tests' hooks do. Made at the test's start, before its first
 * `await`, when the running test is its own.
 */
const stateDir = () => tempDir("baton-status-");

/**
 * Writes the lease of `deployment` in `dir`: launcher `pid` (token "tok") on machine `host`
 * (none: a lease of a baton from before leases named one), renewed `ageMs` ago.
 */
async function writeLease(
  dir: string,
  deployment: string,
  pid: number,
  host: string | undefined,
  ageMs: number,
): Promise<void> {
  await files.writeAtomic(
    deploymentPaths(dir, deployment).lease,
    encodeStateFile(LEASE_FORMAT, {
      deployment,
      pid,
      token: "tok",
      ...(host !== undefined && { host }),
      renewedAt: Date.now() - ageMs,
      staleAfterMs: 30_000,
    }),
  );
}

async function writeDeployment(
  dir: string,
  deployment: string,
  launcherPid: number,
  ranks: { pid: number; phase: Marker["phase"] | undefined }[],
  leaseRenewedAgoMs: number | undefined,
  launchedAgoMs = 65_000,
): Promise<void> {
  const now = Date.now();
  const paths = deploymentPaths(dir, deployment);
  await files.writeAtomic(
    paths.manifest,
    encodeStateFile(MANIFEST_FORMAT, {
      deployment,
      launcher: { pid: launcherPid, token: "tok", host: hostname() },
      ranks: ranks.map(({ pid }, rank) => ({
        rank,
        localRank: rank,
        host: "local",
        pid,
        pgid: pid,
      })),
      // A manifest of no rank still has a world of one: 0 is no manifest its readers take.
      worldSize: Math.max(1, ranks.length),
      argv: ["python3", "train.py"],
      startedAt: now - launchedAgoMs,
    }),
  );
  if (leaseRenewedAgoMs !== undefined) {
    await files.writeAtomic(
      paths.lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment,
        pid: launcherPid,
        token: "tok",
        renewedAt: now - leaseRenewedAgoMs,
        staleAfterMs: 30_000,
      }),
    );
  }
  for (const [rank, { pid, phase }] of ranks.entries()) {
    if (phase === undefined) continue;
    await files.writeAtomic(
      paths.marker(rank),
      encodeStateFile(MARKER_FORMAT, {
        deployment,
        rank,
        pid,
        phase,
        startedAt: now - 60_000,
        heartbeatAt: now - 3_000,
        active: rank,
        epoch: 0,
      }),
    );
  }
}

describe("baton status", () => {
  it("lists live and orphaned deployments with their ranks, as JSON", async () => {
    const dir = stateDir();
    const rankPid = livePid("dep-live00000000");
    const stranger = livePid("dep-someoneelse0");
    const dead = await deadPid();
    await writeDeployment(
      dir,
      "dep-live00000000",
      livePid(),
      [
        { pid: rankPid, phase: "ready" },
        { pid: dead, phase: "ready" },
        { pid: livePid("dep-live00000000"), phase: undefined },
        { pid: stranger, phase: "ready" },
      ],
      2_000,
    );
    await writeDeployment(
      dir,
      "dep-nolauncher00",
      dead,
      [{ pid: livePid("dep-nolauncher00"), phase: "ready" }],
      1_000,
      67_000,
    );
    await writeDeployment(
      dir,
      "dep-stalelease00",
      livePid(),
      [{ pid: dead, phase: "loading" }],
      40_000,
      66_000,
    );
    // A manifest without a lease has no launcher, whatever its pid runs now (the reaper agrees).
    const reused = livePid();
    await writeDeployment(
      dir,
      "dep-noleases0000",
      reused,
      [{ pid: dead, phase: "ready" }],
      undefined,
    );
    await writeFile(join(dir, "not-a-deployment.txt"), "x");
    // Only markers left: debris when their pids are dead, orphans when one still runs.
    const marker = (deployment: string, pid: number) =>
      files.writeAtomic(
        deploymentPaths(dir, deployment).marker(0),
        encodeStateFile(MARKER_FORMAT, {
          deployment,
          rank: 0,
          pid,
          phase: "ready",
          startedAt: Date.now(),
          heartbeatAt: Date.now(),
          active: 0,
          epoch: 0,
        }),
      );
    await marker("dep-debris000000", dead);
    // The temp file of a first lease, untouched for two minutes: `baton reap` clears it now.
    const firstLease = join(dir, "dep-firstlease00", ".lease.json.4242.0a1b2c3d4e5f.tmp");
    await files.writeAtomic(firstLease, "{");
    await utimes(firstLease, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
    // A lease and no manifest: a launcher that died before it wrote its manifest.
    await files.writeAtomic(
      deploymentPaths(dir, "dep-leaseonly000").lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment: "dep-leaseonly000",
        pid: dead,
        token: "tok",
        host: hostname(),
        renewedAt: Date.now() - 5_000,
        staleAfterMs: 30_000,
      }),
    );
    const leftover = livePid("dep-leftover0000");
    await marker("dep-leftover0000", leftover);

    const { code, stdout, stderr } = await baton(["status", "--state-dir", dir, "--json"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { stateDir: string; deployments: DeploymentStatus[] };
    expect(report.stateDir).toBe(dir);
    const byId = new Map(report.deployments.map((dep) => [dep.deployment, dep]));
    // What needs attention first: the orphans, newest launched first (no manifest: unknown,
    // last), then the live one, then the ended ones (no outcome record: by id).
    expect([...byId.keys()]).toEqual([
      "dep-noleases0000",
      "dep-stalelease00",
      "dep-nolauncher00",
      "dep-leaseonly000",
      "dep-leftover0000",
      "dep-live00000000",
      "dep-debris000000",
      "dep-firstlease00",
    ]);
    expect(byId.get("dep-debris000000")).toMatchObject({ state: "ended", launcher: null });
    expect(byId.get("dep-debris000000")?.reason).toMatch(
      /^no manifest, no lease and no live rank; `baton reap` removes the 1 control file left \(rank-0\.marker\.json\) once none has been touched for 30 s, in \d+ s$/,
    );
    expect(byId.get("dep-firstlease00")).toMatchObject({
      state: "ended",
      reason:
        "no manifest, no lease and no live rank; `baton reap` removes the 1 control file left (.lease.json.4242.0a1b2c3d4e5f.tmp)",
    });
    expect(byId.get("dep-leaseonly000")).toMatchObject({ state: "orphaned", worldSize: null });
    expect(byId.get("dep-leaseonly000")?.reason).toMatch(
      new RegExp(
        `^launcher pid ${dead} is gone; with no manifest it started no rank, and \`baton reap\` removes its lease$`,
      ),
    );
    expect(byId.get("dep-leftover0000")).toMatchObject({
      state: "orphaned",
      reason: `no manifest or lease, but rank pid ${leftover} still runs; \`baton reap\` stops it and removes the 1 control file left (rank-0.marker.json)`,
    });

    const live = byId.get("dep-live00000000");
    expect(live).toMatchObject({ state: "live", worldSize: 4, problems: [] });
    expect(live?.ranks.map((rank) => [rank.rank, rank.pid, rank.phase, rank.alive])).toEqual([
      [0, rankPid, "ready", true],
      [1, dead, "gone", false],
      [2, expect.any(Number), "no marker", true],
      [3, stranger, "reused", false],
    ]);
    expect(live?.ranks[0]?.ageMs).toBeGreaterThanOrEqual(60_000);
    expect(live?.ranks[0]?.heartbeatAgeMs).toBeGreaterThanOrEqual(3_000);
    expect(live?.lease).toMatchObject({ stale: false, staleAfterMs: 30_000 });

    expect(byId.get("dep-nolauncher00")).toMatchObject({
      state: "orphaned",
      reason: `launcher pid ${dead} is gone`,
      launcher: { pid: dead, alive: false },
    });
    // An orphan's launcher was last seen at its lease's last renewal (later than its launch),
    // or, with no lease of its own, at its launch; a live one's is not asked.
    const lastSeen = (deployment: string) => byId.get(deployment)?.launcherLastSeen?.agoMs;
    expect(lastSeen("dep-nolauncher00")).toBeGreaterThanOrEqual(1_000);
    expect(lastSeen("dep-nolauncher00")).toBeLessThan(40_000);
    expect(lastSeen("dep-stalelease00")).toBeGreaterThanOrEqual(40_000);
    expect(lastSeen("dep-stalelease00")).toBeLessThan(65_000);
    expect(lastSeen("dep-noleases0000")).toBeGreaterThanOrEqual(65_000);
    expect(lastSeen("dep-leaseonly000")).toBeGreaterThanOrEqual(5_000);
    expect(lastSeen("dep-leaseonly000")).toBeLessThan(40_000);
    expect(byId.get("dep-live00000000")?.launcherLastSeen).toBeNull();
    expect(byId.get("dep-leftover0000")?.launcherLastSeen).toBeNull();
    expect(byId.get("dep-noleases0000")).toMatchObject({
      state: "orphaned",
      reason: `launcher pid ${reused} holds no lease (it was removed, or pid ${reused} is another program now)`,
    });
    expect(byId.get("dep-stalelease00")?.state).toBe("orphaned");
    expect(byId.get("dep-stalelease00")?.reason).toMatch(/lease was last renewed 4\d{4} ms ago/);
  });

  it("prints a table a person reads, and reports malformed files without failing", async () => {
    const dir = stateDir();
    const rankPid = livePid("dep-live00000000");
    await writeDeployment(
      dir,
      "dep-live00000000",
      livePid(),
      [{ pid: rankPid, phase: "ready" }],
      0,
    );
    await writeFile(join(dir, "dep-live00000000", "rank-1.marker.json"), "{ broken");
    // Orphaned, one rank still running: the reap to run stops it.
    const orphan = "dep-orphan000000";
    await writeDeployment(
      dir,
      orphan,
      await deadPid(),
      [{ pid: livePid(orphan), phase: "ready" }],
      5_000,
    );

    // Ended, and first by id: listed last, after what needs attention.
    await mkdir(join(dir, "dep-aended000000"));
    await writeFile(
      deploymentPaths(dir, "dep-aended000000").outcome,
      encodeStateFile(OUTCOME_FORMAT, {
        deployment: "dep-aended000000",
        launcher: { pid: 4242, token: "t" },
        worldSize: 1,
        argv: ["python3", "train.py"],
        startedAt: Date.now() - 120_000,
        ranks: [{ rank: 0, host: "local", pid: 4243, exit: { at: Date.now() - 60_000, code: 0 } }],
        ended: { at: Date.now() - 60_000, status: "succeeded", reason: undefined },
      }),
    );

    const { code, stdout } = await baton(["status", "--state-dir", dir]);
    expect(code).toBe(0);
    const blocks = stdout.split("\n\n");
    expect(blocks.map((block) => block.split("  ")[0])).toEqual([
      orphan,
      "dep-live00000000",
      "dep-aended000000",
      `1 orphaned (run: baton reap --state-dir ${dir}), 1 live, 1 ended\n`,
    ]);
    const lines = blocks[1]!.split("\n");
    expect(lines[0]).toMatch(
      /^dep-live00000000 {2}live {2}launcher \d+ {2}world 1 {2}up 1 min \d\d s/,
    );
    expect(lines[1]).toMatch(/^ {2}RANK +PID +PHASE +AGE +HEARTBEAT +ACTIVE +EPOCH$/);
    expect(lines[2]).toMatch(
      new RegExp(`^  0 +${rankPid} +ready +1 min \\d\\d s +\\d+(\\.\\d)? (ms|s) ago +0 +0$`),
    );
    // A rank whose process is gone has no age to count.
    expect(lines[3]).toMatch(/^ {2}1 +- +gone +- +- +- +-$/);
    expect(stdout).toMatch(
      /! .*rank-1\.marker\.json is not a valid baton\.marker\/1 file: not JSON/,
    );
    expect(stdout).toContain(
      `\n  \`baton reap --state-dir ${dir}\` stops its ranks (verified) and clears its control files\n`,
    );
  });

  it("says how long a reaped deployment ran: at least to its last exit seen, when its ranks ended unseen", async () => {
    const dir = stateDir();
    const now = Date.now();
    await mkdir(join(dir, "dep-reaped000000"));
    await writeFile(
      deploymentPaths(dir, "dep-reaped000000").outcome,
      encodeStateFile(OUTCOME_FORMAT, {
        deployment: "dep-reaped000000",
        launcher: { pid: 4242, token: "t" },
        worldSize: 2,
        argv: ["python3", "train.py"],
        startedAt: now - 3 * 3_600_000,
        ranks: [
          { rank: 0, host: "local", pid: 4243, exit: { at: now - 2 * 3_600_000, code: 0 } },
          { rank: 1, host: "local", pid: 4244 },
        ],
        ended: { at: now - 60_000, status: "reaped", reason: "launcher pid 4242 is gone" },
      }),
    );
    const { code, stdout } = await baton(["status", "--state-dir", dir]);
    expect(code).toBe(0);
    // Not "ran 2 h 59 min": the reap came long after rank 0 exited, and rank 1's end is unknown.
    expect(stdout.split("\n")[0]).toMatch(
      /^dep-reaped000000 {2}ended \(reaped: launcher pid 4242 is gone\) {2}world 2 {2}ran at least 1 h 0\d min, reaped 1 min 0\d s ago$/,
    );
  });

  it("says how long a short run ran to a tenth of a second, not rounded down to whole seconds", async () => {
    const dir = stateDir();
    // Half an hour short of three days ago, so a slow start of `baton status` still reads 2 d 23 h.
    const started = Date.now() - 3 * 86_400_000 + 1_800_000;
    await mkdir(join(dir, "dep-short0000000"));
    await writeFile(
      deploymentPaths(dir, "dep-short0000000").outcome,
      encodeStateFile(OUTCOME_FORMAT, {
        deployment: "dep-short0000000",
        launcher: { pid: 4242, token: "t" },
        worldSize: 1,
        argv: ["python3", "train.py"],
        startedAt: started,
        ranks: [
          {
            rank: 0,
            host: "local",
            pid: 4243,
            exit: { at: started + 2_794, code: 0 },
          },
        ],
        ended: {
          at: started + 2_794,
          status: "succeeded",
          reason: "every rank exited 0",
        },
      }),
    );
    const { code, stdout } = await baton(["status", "--state-dir", dir]);
    expect(code).toBe(0);
    const lines = stdout.split("\n");
    // It said "ran 2s, ended 2d23h ago".
    expect(lines[0]).toMatch(/ {2}ran 2\.8 s, ended 2 d 23 h ago$/);
    expect(lines[2]).toMatch(/^ {2}0 +4243 +exited +code 0 +2 d 23 h ago$/);
  });

  it("does not judge a rank on an ssh host by this machine's process table", async () => {
    const dir = stateDir();
    const deployment = "dep-remote000000";
    await writeDeployment(
      dir,
      deployment,
      livePid(),
      [{ pid: livePid(deployment), phase: "ready" }],
      0,
    );
    const paths = deploymentPaths(dir, deployment);
    const manifest = JSON.parse((await files.read(paths.manifest)) ?? "");
    // Rank 1 runs on gpu-2 under a pid that here is this test's own process: no evidence.
    manifest.ranks.push({
      rank: 1,
      localRank: 0,
      host: "ssh://alice@gpu-2",
      pid: process.pid,
      pgid: process.pid,
      stateDir: "/home/alice/.baton/run",
    });
    manifest.worldSize = 2;
    await files.writeAtomic(paths.manifest, `${JSON.stringify(manifest)}\n`);

    const json = await baton(["status", "--state-dir", dir, "--json"]);
    const [dep] = JSON.parse(json.stdout).deployments;
    expect(
      dep.ranks.map((rank: Record<string, unknown>) => [rank.host, rank.phase, rank.alive]),
    ).toEqual([
      ["local", "ready", true],
      ["ssh://alice@gpu-2", "remote", null],
    ]);
    const table = await baton(["status", "--state-dir", dir]);
    expect(table.stdout).toMatch(
      new RegExp(
        `\\n  1 +${process.pid} +remote \\(ssh://alice@gpu-2\\) +1 min \\d\\d s +- +- +-\\n`,
      ),
    );
  });

  it("says what baton reap does with a deployment whose manifest is malformed: nothing", async () => {
    const dir = stateDir();
    const deployment = "dep-broken000000";
    await mkdir(join(dir, deployment));
    await writeFile(join(dir, deployment, "manifest.json"), '{"format":"baton.manifest/1", broken');
    const status = await baton(["status", "--state-dir", dir]);
    expect(status.stdout).toContain(
      `${deployment}  ended (its manifest is invalid (below), so \`baton reap\` leaves it alone and a launch of this name is refused: once no process with BATON_DEPLOYMENT=${deployment} and BATON_STATE_DIR=${dir} runs, remove ${join(dir, deployment)})`,
    );
    const reap = await baton(["reap", "--state-dir", dir]);
    expect(reap.code).toBe(1);
    expect(reap.stdout).toContain(
      `${deployment}: NOT reaped: ${join(dir, deployment, "manifest.json")} is not a valid baton.manifest/1 file`,
    );
  });

  it("says baton reap leaves a fresh lease with no manifest until it is stale, and when, unless its launcher is gone from this machine", async () => {
    const dir = stateDir();
    const deployment = "dep-leaseonly000";
    const dead = await deadPid();
    await files.writeAtomic(
      deploymentPaths(dir, deployment).lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment,
        pid: dead,
        token: "tok",
        renewedAt: Date.now() - 5_000,
        staleAfterMs: 30_000,
      }),
    );
    const reap = await baton(["reap", "--state-dir", dir]);
    expect(reap.code).toBe(0);
    expect(reap.stdout).toMatch(
      new RegExp(
        `^${deployment}: a lease and no manifest: launcher pid ${dead} is starting, or died before it wrote its manifest; left alone until its lease is stale, in (2[0-9]|1[0-9]) s \\(reap again then\\)\n$`,
      ),
    );
    const json = JSON.parse((await baton(["reap", "--state-dir", dir, "--json"])).stdout);
    expect(json.waiting).toEqual([
      { deployment, pid: dead, host: null, staleInMs: expect.any(Number) },
    ]);
    expect(await files.read(deploymentPaths(dir, deployment).lease)).toBeDefined();
    // Another machine's launcher, claiming a name in a state dir the machines share, is named.
    await writeLease(dir, "dep-leasethere00", dead, "gpu-7", 5_000);
    expect((await baton(["reap", "--state-dir", dir])).stdout).toContain(
      `dep-leasethere00: a lease and no manifest: launcher pid ${dead} on gpu-7 is starting, or died before it wrote its manifest;`,
    );
    // This machine's launcher, whose pid is gone: it died before its manifest, as status says,
    // and its lease is reaped at once, not when it goes stale.
    await writeLease(dir, "dep-leasehere000", dead, hostname(), 5_000);
    expect((await baton(["reap", "--state-dir", dir])).stdout).toMatch(
      new RegExp(
        `^dep-leasehere000: reaped \\(no manifest, and launcher pid ${dead} is gone: it died before it wrote its manifest, or as it removed its files\\); verified in \\d+ ms$`,
        "m",
      ),
    );
    expect(await files.read(deploymentPaths(dir, "dep-leasehere000").lease)).toBeUndefined();
    // Its pid taken by a program started 5 s after the lease's last renewal: not the launcher,
    // which ran then; reaped at once too, the program left alone.
    const reused = livePid();
    await writeLease(dir, "dep-leasereused0", reused, hostname(), 5_000);
    expect((await baton(["reap", "--state-dir", dir])).stdout).toMatch(
      new RegExp(
        `^dep-leasereused0: reaped \\(no manifest, and launcher pid ${reused} is another program now \\(it started \\d+\\.\\d s after the lease was last renewed\\): it died before it wrote its manifest, or as it removed its files\\); verified in \\d+ ms$`,
        "m",
      ),
    );
    expect(procs.inspect(reused)?.state).toBe("sleeping");
  });

  it("judges a lease with no manifest by its pid only on the machine that wrote it, elsewhere by its age, as a claim does", async () => {
    const dir = stateDir();
    const dead = await deadPid();
    const lease = (deployment: string, host: string | undefined, ageMs: number) =>
      writeLease(dir, deployment, dead, host, ageMs);
    // A state dir on a shared file system: another machine's launcher is claiming these names,
    // its pid no process here (or another program's); one lease from an older baton names none.
    await lease("dep-elsewhere000", "login-elsewhere", 5_000);
    await lease("dep-nohost000000", undefined, 5_000);
    await lease("dep-elsestale000", "login-elsewhere", 60_000);
    await lease("dep-herelease000", hostname(), 5_000);

    const json = JSON.parse((await baton(["status", "--state-dir", dir, "--json"])).stdout) as {
      deployments: DeploymentStatus[];
    };
    const byId = new Map(json.deployments.map((dep) => [dep.deployment, dep]));
    expect(byId.get("dep-elsewhere000")).toMatchObject({
      state: "live",
      reason: null,
      launcher: { pid: dead, host: "login-elsewhere", alive: null },
    });
    expect(byId.get("dep-nohost000000")).toMatchObject({
      state: "live",
      launcher: { pid: dead, host: null, alive: null },
    });
    expect(byId.get("dep-elsestale000")).toMatchObject({
      state: "orphaned",
      launcher: { pid: dead, host: "login-elsewhere", alive: null },
    });
    expect(byId.get("dep-elsestale000")?.reason).toMatch(
      new RegExp(
        `^the lease of launcher pid ${dead} \\(on login-elsewhere\\) was last renewed 6\\d{4} ms ago \\(stale after 30000 ms\\)$`,
      ),
    );
    expect(byId.get("dep-herelease000")).toMatchObject({
      state: "orphaned",
      reason: expect.stringMatching(new RegExp(`^launcher pid ${dead} is gone; with no manifest`)),
      launcher: { pid: dead, host: hostname(), alive: false },
    });

    const { stdout } = await baton(["status", "--state-dir", dir]);
    const head = (deployment: string) =>
      stdout.split("\n").find((line) => line.startsWith(`${deployment}  `));
    expect(head("dep-elsewhere000")).toMatch(
      new RegExp(
        `^dep-elsewhere000 {2}live {2}launcher ${dead} \\(on login-elsewhere: its pid is not looked up here\\) {2}lease renewed \\d`,
      ),
    );
    expect(head("dep-nohost000000")).toContain(
      `launcher ${dead} (on a machine its lease does not name: its pid is not looked up here)`,
    );
  });

  it("judges a deployment another machine launched by its lease alone, and its ranks as that machine's", async () => {
    const dir = stateDir();
    const dead = await deadPid();
    const launched = async (deployment: string, leaseAgeMs: number) => {
      const paths = deploymentPaths(dir, deployment);
      await files.writeAtomic(
        paths.manifest,
        encodeStateFile(MANIFEST_FORMAT, {
          deployment,
          launcher: { pid: dead, token: "tok", host: "login-elsewhere" },
          ranks: [{ rank: 0, localRank: 0, host: "local", pid: dead, pgid: dead }],
          worldSize: 1,
          argv: ["python3", "train.py"],
          startedAt: Date.now() - 65_000,
          cgroup: `/sys/fs/cgroup/user.slice/baton/${deployment}`,
        }),
      );
      await writeLease(dir, deployment, dead, "login-elsewhere", leaseAgeMs);
    };
    await launched("dep-elsewhere000", 5_000);
    await launched("dep-elsestale000", 60_000);
    const json = JSON.parse((await baton(["status", "--state-dir", dir, "--json"])).stdout) as {
      deployments: DeploymentStatus[];
    };
    const byId = new Map(json.deployments.map((dep) => [dep.deployment, dep]));
    expect(byId.get("dep-elsewhere000")).toMatchObject({
      state: "live",
      launcher: { pid: dead, host: "login-elsewhere", alive: null },
      ranks: [{ rank: 0, host: "login-elsewhere", phase: "remote", alive: null }],
      cgroup: {
        processes: null,
        gone: false,
        error: "it is on login-elsewhere, not read from here",
      },
    });
    expect(byId.get("dep-elsestale000")).toMatchObject({ state: "orphaned" });
    expect(byId.get("dep-elsestale000")?.reason).toMatch(
      new RegExp(
        `^the lease of launcher pid ${dead} \\(on login-elsewhere\\) was last renewed 6\\d{4} ms ago \\(stale after 30000 ms\\); it was launched on login-elsewhere, where \`baton reap --state-dir ${dir}\` reaps it \\(a reap on this machine leaves another machine's deployment alone\\)$`,
      ),
    );
    expect(byId.get("dep-elsestale000")?.reapOn).toBe("login-elsewhere");
    // The count sends the user to the machine whose reap reaps its orphan, not to a reap here.
    const lastLine = async () => (await baton(["status", "--state-dir", dir])).stdout.trimEnd();
    expect((await lastLine()).split("\n").at(-1)).toBe(
      `1 orphaned (1 launched on login-elsewhere: run baton reap --state-dir ${dir} there), 1 live`,
    );
    // As `baton reap` here sees it: another machine's.
    const reap = JSON.parse((await baton(["reap", "--state-dir", dir, "--json"])).stdout);
    expect(reap.foreign).toEqual(
      expect.arrayContaining([{ deployment: "dep-elsestale000", host: "login-elsewhere" }]),
    );
    // With this machine's orphan beside it: a reap here for the one, the other machine's there.
    await writeDeployment(dir, "dep-hereorphan00", dead, [{ pid: dead, phase: "ready" }], 60_000);
    expect((await lastLine()).split("\n").at(-1)).toBe(
      `2 orphaned (1 here: run baton reap --state-dir ${dir}; 1 launched on login-elsewhere: run it there), 1 live`,
    );
  });

  it("says a deployment's invalid manifest is why it stays, not that it started no rank", async () => {
    const dir = stateDir();
    const deployment = "dep-brokenlease0";
    const paths = deploymentPaths(dir, deployment);
    await mkdir(paths.dir);
    await writeFile(paths.manifest, '{"format":"baton.manifest/1", broken');
    const dead = await deadPid();
    await writeLease(dir, deployment, dead, hostname(), 0);
    const { stdout } = await baton(["status", "--state-dir", dir]);
    expect(stdout.split("\n")[0]).toContain(
      `${deployment}  orphaned (launcher pid ${dead} is gone; its manifest is invalid (below), so \`baton reap\` leaves it alone and a launch of this name is refused: once no process with BATON_DEPLOYMENT=${deployment} and BATON_STATE_DIR=${dir} runs, remove ${paths.dir})  launcher ${dead} (gone, last seen `,
    );
    expect(stdout).not.toContain("with no manifest");
  });

  it.skipIf(procs.containment === undefined)(
    "tells a cgroup that is gone from one it cannot read",
    async () => {
      const dir = stateDir();
      const launcher = await deadPid();
      const cgroups = {
        "dep-cgroupgone00": join(tmpdir(), `baton-no-cgroup-${process.pid}`, "baton"),
        // A path through a file: reading it fails with ENOTDIR, not "no such cgroup".
        "dep-cgroupfile00": join(dir, "file", "baton"),
      };
      await writeFile(join(dir, "file"), "");
      for (const [deployment, parent] of Object.entries(cgroups)) {
        await mkdir(join(dir, deployment));
        await files.writeAtomic(
          deploymentPaths(dir, deployment).manifest,
          encodeStateFile(MANIFEST_FORMAT, {
            deployment,
            launcher: { pid: launcher, token: "tok", host: hostname() },
            ranks: [],
            worldSize: 1,
            argv: ["python3", "train.py"],
            startedAt: Date.now(),
            // A manifest of an older launcher: no stateDir, its cgroup named after it alone.
            cgroup: join(parent, deployment),
          }),
        );
      }
      const json = await baton(["status", "--state-dir", dir, "--json"]);
      const byId = new Map<string, DeploymentStatus>(
        JSON.parse(json.stdout).deployments.map((dep: DeploymentStatus) => [dep.deployment, dep]),
      );
      expect(byId.get("dep-cgroupgone00")?.cgroup).toEqual({
        path: join(cgroups["dep-cgroupgone00"], "dep-cgroupgone00"),
        processes: null,
        gone: true,
        error: null,
      });
      expect(byId.get("dep-cgroupfile00")?.cgroup).toMatchObject({
        processes: null,
        gone: false,
        error: expect.stringMatching(/^ENOTDIR/),
      });
      const { stdout } = await baton(["status", "--state-dir", dir]);
      expect(stdout).toMatch(/^dep-cgroupgone00 .* {2}contained: cgroup gone$/m);
      expect(stdout).toMatch(
        new RegExp(
          `^dep-cgroupfile00 .* {2}contained: cannot read ${join(dir, "file")}/baton/dep-cgroupfile00: ENOTDIR`,
          "m",
        ),
      );
    },
  );

  it("refuses an empty or unusable value of every flag of status and reap, saying what to do", async () => {
    const dir = stateDir();
    // An unset variable: "" would have been the working directory.
    const empties: [string, string][] = [
      ["status", "state-dir"],
      ["reap", "state-dir"],
      ["reap", "grace-ms"],
      ["reap", "ssh-config"],
      ["reap", "log-level"],
    ];
    // At once: each is a start of the command, and what is checked is only its answer.
    const answers = await Promise.all(
      empties.map(([command, flag]) => baton([command, `--${flag}`, ""])),
    );
    for (const [index, [command, flag]] of empties.entries()) {
      const empty = answers[index]!;
      expect(empty.code).toBe(2);
      expect(empty.stdout).toBe("");
      expect(empty.stderr).toBe(
        `baton ${command}: --${flag} is empty: give it a value, or leave it out (baton ${command} --help says what it takes) [CONFIG]\n`,
      );
    }
    await writeFile(join(dir, "afile"), "x");
    const refused: [string[], string][] = [
      [["--grace-ms", "0"], '--grace-ms must be a whole number of milliseconds ≥ 1, not "0"'],
      [["--grace-ms", "soon"], '--grace-ms must be a whole number of milliseconds ≥ 1, not "soon"'],
      [
        ["--ssh-config", join(dir, "missing")],
        `--ssh-config ${join(dir, "missing")} does not exist: give the path of an ssh_config file`,
      ],
      [
        ["--ssh-config", dir],
        `--ssh-config ${dir} is a directory: give the path of an ssh_config file`,
      ],
      [
        ["--ssh-config", join(dir, "afile", "config")],
        `--ssh-config ${join(dir, "afile", "config")} is under a file, not a directory: give the path of an ssh_config file`,
      ],
    ];
    const results = await Promise.all(
      refused.map(([flags]) => baton(["reap", "--state-dir", dir, ...flags])),
    );
    for (const [index, [, message]] of refused.entries()) {
      const result = results[index]!;
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`baton reap: ${message} [CONFIG]\n`);
    }
    for (const [command, ...rest] of EVERY_STATE_DIR_COMMAND) {
      const underFile = await baton([command, "--state-dir", join(dir, "afile", "run"), ...rest]);
      expect(underFile.code).toBe(2);
      expect(underFile.stderr).toBe(
        `baton ${command}: the state dir ${join(dir, "afile", "run")} is under a file, ${join(dir, "afile")}, not a directory: give --state-dir the directory your launches use (default .baton/run), or move the file aside [CONFIG]\n`,
      );
    }
  });

  it.runIf(process.getuid?.() === 0)(
    "tells a user who may not list the state dir whose it is, instead of scandir's EACCES",
    async () => {
      // mkdtemp's directory is root's, 0700: closed to nobody, and so is everything under it.
      const dir = stateDir();
      const nobody = `this user (${userName(65534)})`;
      for (const [command, ...rest] of EVERY_STATE_DIR_COMMAND) {
        const closed = await startBaton([command, "--state-dir", dir, ...rest], { uid: 65534 })
          .exit;
        expect(closed.code).toBe(2);
        expect(closed.stderr).toBe(
          `baton ${command}: cannot list the state dir ${dir}: permission denied: ${nobody} may not list that directory (root's, mode 700); give --state-dir the directory your launches use (default .baton/run), or run the command as root [CONFIG]\n`,
        );
        const below = await startBaton([command, "--state-dir", join(dir, "run"), ...rest], {
          uid: 65534,
        }).exit;
        expect(below.code).toBe(2);
        // The directory above that is closed, named, and whose it is.
        expect(below.stderr).toBe(
          `baton ${command}: cannot list the state dir ${join(dir, "run")}: permission denied: ${nobody} may not enter ${dir} (root's, mode 700), a directory on that path; give --state-dir the directory your launches use (default .baton/run), or run the command as root [CONFIG]\n`,
        );
      }
    },
  );

  it.runIf(process.getuid?.() === 0)(
    "baton reap as another user in a shared state dir names the owner of a 0700 deployment, in the report and --json",
    async () => {
      const dir = stateDir();
      await chmod(dir, 0o755);
      const deployment = "dep-theirs000000";
      await writeDeployment(dir, deployment, await deadPid(), [], 1_000);
      await chmod(join(dir, deployment), 0o700);
      const [text, json] = await Promise.all([
        startBaton(["reap", "--state-dir", dir], { uid: 65534 }).exit,
        startBaton(["reap", "--state-dir", dir, "--json"], { uid: 65534 }).exit,
      ]);
      expect(text.stdout).toBe(`${deployment}: root's, left alone\nnothing to reap in ${dir}\n`);
      expect(text.code).toBe(0);
      expect(JSON.parse(json.stdout).otherUsers).toEqual([{ deployment, owner: "root" }]);
    },
  );

  it("says when there is nothing, also in --json, and refuses unknown flags and negative numbers (status and reap alike)", async () => {
    const dir = stateDir();
    const empty = await baton(["status", "--state-dir", join(dir, "missing")]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe(
      `no runs or deployments: ${join(dir, "missing")} does not exist (no run or launch used it; is --state-dir right? A baton run's is its store's run/ folder: .baton/run beside its graph module, or DIR/run for --store DIR)\n`,
    );
    const reapMissing = await baton(["reap", "--state-dir", join(dir, "missing")]);
    expect(reapMissing.code).toBe(0);
    expect(reapMissing.stdout).toBe(
      `nothing to reap: ${join(dir, "missing")} does not exist (no run or launch used it; is --state-dir right? A baton run's is its store's run/ folder: .baton/run beside its graph module, or DIR/run for --store DIR)\n`,
    );
    expect(reapMissing.stderr).toBe("");
    // --json says so too, in a field of its own.
    const reapMissingJson = await baton(["reap", "--state-dir", join(dir, "missing"), "--json"]);
    expect(reapMissingJson.code).toBe(0);
    expect(JSON.parse(reapMissingJson.stdout)).toMatchObject({
      stateDir: join(dir, "missing"),
      stateDirExists: false,
      reaped: [],
    });
    const statusMissingJson = await baton([
      "status",
      "--state-dir",
      join(dir, "missing"),
      "--json",
    ]);
    expect(JSON.parse(statusMissingJson.stdout)).toEqual({
      stateDir: join(dir, "missing"),
      stateDirExists: false,
      runs: [],
      unreadableRunLocks: [],
      deployments: [],
    });
    // A file is no state dir: said in words, not as a failed scandir.
    await writeFile(join(dir, "afile"), "x");
    for (const [command, ...rest] of [
      ["status", "--json"] as [string, ...string[]],
      ["reap", "--json"] as [string, ...string[]],
      ...EVERY_STATE_DIR_COMMAND.filter(([command]) => command === "launch"),
    ]) {
      const onFile = await baton([command, "--state-dir", join(dir, "afile"), ...rest]);
      expect(onFile.code).toBe(2);
      // One error from each: launch said REAP_FAILED, in words of its own, exit 1.
      expect(onFile.stderr).toBe(
        `baton ${command}: the state dir ${join(dir, "afile")} is a file, not a directory: give --state-dir the directory your launches use (default .baton/run), or move the file aside [CONFIG]\n`,
      );
    }
    const reapJson = await baton(["reap", "--state-dir", dir, "--json"]);
    expect(JSON.parse(reapJson.stdout)).toMatchObject({ stateDir: dir, stateDirExists: true });
    // Folders that hold no deployment's file (a store's, when --state-dir names the store).
    await mkdir(join(dir, "logs"));
    await writeFile(join(dir, "logs", "run-1.log"), "{}\n");
    await mkdir(join(dir, "quarantine"));
    await writeFile(join(dir, "quarantine", "ab12"), "{}\n");
    const json = await baton(["status", "--state-dir", dir, "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({
      stateDir: dir,
      stateDirExists: true,
      runs: [],
      unreadableRunLocks: [],
      deployments: [],
    });
    // The store's run folder holds the deployments (the default .baton/run): say to look there.
    await writeDeployment(join(dir, "run"), "dep-below0000000", await deadPid(), [], 1_000);
    const [statusAbove, reapAbove] = await Promise.all([
      baton(["status", "--state-dir", dir]),
      baton(["reap", "--state-dir", dir]),
    ]);
    const below = join(dir, "run");
    expect(statusAbove.stdout).toBe(
      `no runs or deployments in ${dir}, but ${below} holds 1 deployment: give --state-dir ${below}\n`,
    );
    expect(reapAbove.stdout).toBe(
      `nothing to reap in ${dir}, but ${below} holds 1 deployment: give --state-dir ${below}\n`,
    );
    const bad = await baton(["status", "--bogus"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      "baton status: unknown flag --bogus (baton status --help lists its flags) [CONFIG]\n",
    );
    // A negative number gets the flag's own range message, as any other value out of range.
    const negative = await baton(["reap", "--state-dir", dir, "--grace-ms", "-1"]);
    expect(negative.code).toBe(2);
    expect(negative.stderr).toBe(
      'baton reap: --grace-ms must be a whole number of milliseconds ≥ 1, not "-1" [CONFIG]\n',
    );
    const dashed = await baton(["reap", "--state-dir", dir, "--grace-ms", "--json"]);
    expect(dashed.code).toBe(2);
    expect(dashed.stderr).toBe(
      "baton reap: --grace-ms needs a value, and is followed by the flag --json: give --grace-ms its value first (baton reap --help lists its flags) [CONFIG]\n",
    );
  });
});
