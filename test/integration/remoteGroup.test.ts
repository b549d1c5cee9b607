/**
 * Rank groups spread over hosts: `launchGroup` with `hosts` (here and a real OpenSSH server on
 * 127.0.0.1, test/fixtures/sshd.ts), the barrier over remote markers, the teardown on both
 * hosts, a launcher killed with SIGKILL and the reaper after it. The "remote" host is this
 * machine, so remote pids are real pids here, owned by the test user. Every process a test
 * starts is stopped by its pid when it ends: local ones after checking they carry the
 * deployment, remote ones over ssh after the host checked the same (`signalIfOwned`).
 * That a remote pid held by another program is never signalled, even by the remote teardown
 * told it is a rank and named by a marker, is tested in sshRanks.test.ts ("never signals a
 * remote pid that another program now holds"); here the reaper's side of it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RankGroupError } from "../../src/errors.ts";
import { createEngine, job } from "../../src/index.ts";
import { carriesDeployment } from "../../src/machines/carriesDeployment.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MANIFEST_FORMAT, type ManifestRank } from "../../src/rank/manifestFormat.ts";
import { MARKER_FORMAT } from "../../src/rank/markerFormat.ts";
import { OUTCOME_FORMAT } from "../../src/rank/outcomeFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import { defineJobs } from "../../src/runtime/jobModule.ts";
import { launchGroup } from "../../src/runtime/launchGroup.ts";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { Files } from "../../src/runtime/ports.ts";
import type { LaunchSpec, RankGroup } from "../../src/runtime/rankGroup.ts";
import { type ReapReport, reapDeployments } from "../../src/runtime/reaper.ts";
import { remoteFiles } from "../../src/runtime/remoteFiles.ts";
import { remoteProcs } from "../../src/runtime/remoteProcs.ts";
import { type SshHost, sshHost } from "../../src/runtime/sshHost.ts";
import type { SshTarget } from "../../src/runtime/sshTarget.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { firstLine } from "../fixtures/firstLine.ts";
import { readManifest } from "../fixtures/readManifest.ts";
import { killRemoteLeftovers } from "../fixtures/remoteLeftovers.ts";
import { goneWithin, sshdTestsRun, startSshdSite, type TestSshd } from "../fixtures/sshd.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const RANK_PY = ["/usr/bin/python3", join(ROOT, "examples/ranks/rank.py")];
const ENV_RANK = ["/usr/bin/node", join(ROOT, "test/fixtures/envRank.mjs")];
const LAUNCHER = join(ROOT, "test/fixtures/remoteGroupLauncher.ts");
const FAST = {
  termGraceMs: 600,
  killWaitMs: 1_000,
  killAgainWaitMs: 1_000,
  sweepTermWaitMs: 600,
  sweepKillWaitMs: 1_000,
};
const procs = nodeProcs();
const files = nodeFiles();
const clock = nodeClock();

const available = sshdTestsRun("remoteGroup.test.ts");

describe.skipIf(!available)("rank groups over local and ssh hosts", () => {
  let sshd: TestSshd;
  let target: SshTarget;
  /** The root state dir on the ssh host (the test user's ~/.baton/run). */
  let remoteRoot: string;
  let counter = 0;
  /** Per test: what to stop and remove afterwards. */
  let groups: RankGroup[] = [];
  let deployments: string[] = [];
  let localDirs: string[] = [];
  let children: ChildProcess[] = [];
  /** Remote programs a test started that carry no deployment: killed if still that program. */
  let strangers: number[] = [];
  let hosts: SshHost[] = [];

  const open = (): SshHost => {
    const host = sshHost(target, { configFile: sshd.configFile });
    hosts.push(host);
    return host;
  };
  const newDeployment = (): string => {
    const deployment = `rg${process.pid}t${++counter}`;
    deployments.push(deployment);
    return deployment;
  };
  const newStateDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "baton-remote-group-"));
    localDirs.push(dir);
    return dir;
  };
  const launch = (spec: Partial<LaunchSpec> & Pick<LaunchSpec, "argv">): RankGroup => {
    const group = launchGroup({
      worldSize: 2,
      hosts: ["local", sshd.url],
      remote: { ssh: { configFile: sshd.configFile }, guardGraceMs: 1_000 },
      masterAddr: "127.0.0.1",
      stateDir: newStateDir(),
      name: newDeployment(),
      timeouts: { markerHeartbeatMs: 500, leaseStaleMs: 3_000 },
      teardown: FAST,
      ...spec,
    });
    groups.push(group);
    return group;
  };
  /**
   * Writes, in a new state dir under `deployment` (a new one unless given), the manifest of a
   * dead launcher (this process, without a lease) whose one rank is `rank` on a remote host;
   * where it wrote it.
   */
  const writeOrphanedManifest = async (
    rank: Pick<ManifestRank, "host" | "pid" | "stateDir">,
    deployment = newDeployment(),
  ): Promise<{
    stateDir: string;
    deployment: string;
    paths: ReturnType<typeof deploymentPaths>;
  }> => {
    const stateDir = newStateDir();
    const paths = deploymentPaths(stateDir, deployment);
    await files.mkdirp(paths.dir);
    await files.writeAtomic(
      paths.manifest,
      encodeStateFile(MANIFEST_FORMAT, {
        deployment,
        launcher: { pid: process.pid, token: "t0ken", host: hostname() },
        ranks: [
          {
            rank: 0,
            localRank: 0,
            host: rank.host,
            pid: rank.pid,
            pgid: rank.pid,
            stateDir: rank.stateDir,
          },
        ],
        worldSize: 1,
        argv: ["python3", "serve.py"],
        startedAt: Date.now(),
      }),
    );
    return { stateDir, deployment, paths };
  };
  /**
   * Writes, in the host's state dir, the mirrored lease of another launcher (pid 4242 on its
   * own machine, token "another launcher") holding `deployment` there, renewed just now;
   * its path.
   */
  const holdNameThere = async (there: Files, deployment: string): Promise<string> => {
    const lease = deploymentPaths(remoteRoot, deployment).lease;
    await there.writeAtomic(
      lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment,
        pid: 4242,
        token: "another launcher",
        renewedAt: Date.now(),
        staleAfterMs: 600_000,
      }),
    );
    return lease;
  };
  /** Runs the reaper over `stateDir` with the test sshd's ssh config and the fast teardown. */
  const reap = (stateDir: string): Promise<ReapReport> =>
    reapDeployments({
      stateDir,
      procs,
      files,
      clock,
      ssh: { configFile: sshd.configFile },
      teardown: FAST,
    });
  /**
   * Expects no folder of `deployment` left in the ssh host's state dir (its ranks' output is
   * in the local logs; an empty folder there would pile up with every launch).
   */
  const expectNoRemoteFolder = (deployment: string): void => {
    // The "remote" host is this machine, and its state dir the test user's.
    expect(readdirSync(remoteRoot)).not.toContain(deployment);
  };
  /**
   * Runs the reaper over `stateDir` as `reap` does, and expects it to have reaped
   * `deployment` alone, with no failure; its report.
   */
  const reapOnly = async (stateDir: string, deployment: string): Promise<ReapReport> => {
    const report = await reap(stateDir);
    expect(report.failed).toEqual([]);
    expect(report.reaped.map((entry) => entry.deployment)).toEqual([deployment]);
    return report;
  };

  beforeAll(async () => {
    ({ sshd, target, remoteRoot } = await startSshdSite());
  });

  afterAll(async () => {
    await sshd?.stop();
  });

  afterEach(async () => {
    try {
      for (const group of groups) await group.stop("test over").catch(() => {});
      for (const child of children) {
        if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
          process.kill(child.pid, "SIGKILL");
        }
      }
      // Local processes of the test's deployments (not the remote ones, which run here too but
      // belong to the test user: they are stopped over ssh below).
      for (const info of procs.list()) {
        if (info.state === "zombie" || info.state === "dead") continue;
        const env = procs.environ(info.pid);
        const stateDir = env?.BATON_STATE_DIR ?? "";
        const deployment = deployments.find((dep) =>
          carriesDeployment(info.argv, env, { deployment: dep, stateDir }),
        );
        if (deployment !== undefined && env?.USER !== sshd.user && info.pid !== process.pid) {
          procs.signal(info.pid, "SIGKILL");
        }
      }
      const cleaner = sshHost(target, { configFile: sshd.configFile, multiplex: false });
      try {
        await killRemoteLeftovers(cleaner, deployments);
        const still = (
          await remoteProcs(cleaner).snapshot(strangers, { deployment: "unused", stateDir: "/" })
        ).filter((proc) => proc.argv.join(" ") === "sleep 300" && proc.state !== "zombie");
        const dirs = deployments.map((dep) => `'${remoteRoot}/${dep}'`).join(" ");
        await cleaner.run(
          `${still.length > 0 ? `kill -s KILL ${still.map((proc) => proc.pid).join(" ")};` : ""} rm -rf ${dirs}; exit 0`,
        );
      } finally {
        await cleaner.close();
      }
    } finally {
      for (const host of hosts) await host.close().catch(() => undefined);
      for (const dir of localDirs) rmSync(dir, { recursive: true, force: true });
      groups = [];
      deployments = [];
      localDirs = [];
      children = [];
      strangers = [];
      hosts = [];
    }
  });

  it("gives each rank its host's environment: LOCAL_RANK per host, the remote state dir, spec.env as defaults there", async () => {
    const group = launch({
      argv: ENV_RANK,
      worldSize: 3,
      hosts: ["local", sshd.url, sshd.url],
      env: { FROM_SPEC: "spec" },
      operatorEnv: { ...process.env, FROM_OPERATOR: "operator" },
    });
    const exit = await group.wait();
    expect(exit.status).toBe("succeeded");
    expect(exit.ranks.map((rank) => rank.code)).toEqual([0, 0, 0]);
    const env = group.logFiles.map((file) => JSON.parse(readFileSync(file, "utf8")));
    expect(env[0]).toMatchObject({
      RANK: "0",
      LOCAL_RANK: "0",
      LOCAL_WORLD_SIZE: "1",
      GROUP_RANK: "0",
      GROUP_WORLD_SIZE: "2",
      BATON_STATE_DIR: group.dir.slice(0, -group.deployment.length - 1),
      FROM_SPEC: "spec",
      FROM_OPERATOR: "operator",
    });
    for (const rank of [1, 2]) {
      expect(env[rank]).toMatchObject({
        RANK: String(rank),
        WORLD_SIZE: "3",
        LOCAL_RANK: String(rank - 1),
        LOCAL_WORLD_SIZE: "2",
        GROUP_RANK: "1",
        GROUP_WORLD_SIZE: "2",
        MASTER_ADDR: "127.0.0.1",
        MASTER_PORT: env[0].MASTER_PORT,
        BATON_DEPLOYMENT: group.deployment,
        BATON_STATE_DIR: remoteRoot,
        FROM_SPEC: "spec",
      });
      // This machine's environment stays here.
      expect(env[rank].FROM_OPERATOR).toBeUndefined();
    }
    expect(existsSync(deploymentPaths(remoteRoot, group.deployment).manifest)).toBe(false);
    expectNoRemoteFolder(group.deployment);
  }, 60_000);

  it("starts and stops many ranks on one ssh host within sshd's session and start-up limits", async () => {
    // sshd's defaults: 10 sessions on one connection (MaxSessions), 10 connections still
    // authenticating (MaxStartups 10:30:100, beyond which it drops some at random).
    const group = launch({
      argv: ENV_RANK,
      worldSize: 16,
      hosts: ["local", ...Array.from({ length: 15 }, () => sshd.url)],
      // Sixteen ssh starts at once on a loaded machine (CI, twice this session) delayed the
      // mirrored lease's renewal past a 3 s lease's limit; this test is about sshd's limits.
      timeouts: { markerHeartbeatMs: 500, leaseStaleMs: 10_000 },
    });
    const exit = await group.wait();
    expect(exit.ranks.map((rank) => rank.code)).toEqual(Array.from({ length: 16 }, () => 0));
    const ranks = group.logFiles.map((file) => JSON.parse(readFileSync(file, "utf8")).LOCAL_RANK);
    expect(ranks).toEqual(["0", ...Array.from({ length: 15 }, (_, rank) => String(rank))]);
  }, 90_000);

  it("launches on two hosts, passes the barrier on remote markers, records both in the manifest, and tears down verified on both", async () => {
    const group = launch({ argv: [...RANK_PY, "--step-ms", "50"] });
    await group.ready;
    const manifest = await readManifest(
      group.dir.slice(0, -group.deployment.length - 1),
      group.deployment,
    );
    expect(manifest?.ranks).toEqual([
      { rank: 0, localRank: 0, host: "local", pid: expect.any(Number), pgid: expect.any(Number) },
      {
        rank: 1,
        localRank: 0,
        host: sshd.url,
        pid: expect.any(Number),
        pgid: expect.any(Number),
        stateDir: remoteRoot,
      },
    ]);
    const remotePid = manifest?.ranks[1]?.pid as number;
    expect(group.pids().sort()).toEqual(manifest?.ranks.map((rank) => rank.pid).sort());
    // The remote rank's marker (read over ssh for the barrier) and the mirrored lease.
    const there = remoteFiles(open());
    const paths = deploymentPaths(remoteRoot, group.deployment);
    expect(await readStateFile(there, MARKER_FORMAT, paths.marker(1))).toMatchObject({
      pid: remotePid,
      phase: "ready",
    });
    expect(await there.read(paths.lease)).toContain(group.deployment);
    const id = { deployment: group.deployment, stateDir: remoteRoot };
    const [proc] = await remoteProcs(open()).snapshot([remotePid], id);
    expect(proc).toMatchObject({
      pid: remotePid,
      env: { BATON_DEPLOYMENT: group.deployment, BATON_STATE_DIR: remoteRoot },
    });

    const report = await group.stop("test");
    expect(report.verified).toBe(true);
    console.log(`2-host group (rank.py, exits on TERM) verified gone in ${report.elapsedMs} ms`);
    expect(report.steps.join("\n")).toContain(`${sshd.url}: `);
    await goneWithin(open(), [remotePid], 2_000);
    const exit = await group.wait();
    expect(exit.status).toBe("stopped");
    // Control files gone on both hosts, and the folder on the ssh host; the logs (all here) stay.
    expectNoRemoteFolder(group.deployment);
    expect(existsSync(join(group.dir, "manifest.json"))).toBe(false);
    expect(readFileSync(group.logFiles[1] as string, "utf8")).toMatch(/rank 1: .*ready/);
  }, 60_000);

  it("kills a remote rank that ignores TERM with the remote teardown's KILL", async () => {
    const group = launch({ argv: [...RANK_PY, "--ignore-term", "--step-ms", "50"] });
    await group.ready;
    const remotePid = group.pids()[1] as number;
    const report = await group.stop("test");
    console.log(
      `2-host group (rank.py --ignore-term, grace ${FAST.termGraceMs} ms) verified gone in ${report.elapsedMs} ms`,
    );
    const steps = report.steps.join("\n");
    expect(steps).toMatch(new RegExp(`${sshd.url}: TERM to pids ${remotePid}`));
    expect(steps).toMatch(new RegExp(`${sshd.url}: KILL to pids ${remotePid}`));
    const exit = await group.wait();
    expect(exit.ranks.find((rank) => rank.rank === 1)).toMatchObject({ code: 137 });
    await goneWithin(open(), [remotePid], 2_000);
  }, 60_000);

  it("names a rank on an ssh host that ended before the teardown by its own exit, apart from the one the teardown stopped", async () => {
    // Rank 1 (ssh) prints "done" and exits 0; rank 0 (here) waits for that line in rank 1's
    // log, then exits 3; rank 2 (ssh) runs until the teardown stops it.
    const script = [
      'case "$RANK" in',
      "  1) echo done; exit 0 ;;",
      '  0) until grep -q done "$BATON_STATE_DIR/$BATON_DEPLOYMENT/rank-1.log"; do sleep 0.05; done; exit 3 ;;',
      "  *) exec sleep 300 ;;",
      "esac",
    ].join("\n");
    const group = launch({
      argv: ["/bin/sh", "-c", script],
      worldSize: 3,
      hosts: ["local", sshd.url, sshd.url],
    });
    const error = (await group.wait().catch((thrown: unknown) => thrown)) as RankGroupError;
    expect(error.code).toBe("RANK_FAILED");
    expect(error.message).toContain(
      "rank 0 exited with code 3. Rank 1 exited on its own too (code 0); rank 2 was stopped.",
    );
    expectNoRemoteFolder(group.deployment);
  }, 60_000);

  it("quotes a failed rank's own lines from its log on an ssh host, not those an earlier launch of the name left there", async () => {
    const stateDir = newStateDir();
    const name = newDeployment();
    const run = (text: string, code: number) =>
      launch({
        argv: ["/bin/sh", "-c", `echo "${text}"; exit ${code}`],
        worldSize: 1,
        hosts: [sshd.url],
        stateDir,
        name,
      }).wait();
    await run("first launch: all went well", 0);
    const error = (await run("second launch: it broke", 3).catch(
      (thrown: unknown) => thrown,
    )) as RankGroupError;
    expect(error.code).toBe("RANK_FAILED");
    // Its log here, fed by its ssh client, holds both launches' lines.
    expect(readFileSync(join(stateDir, name, "rank-0.log"), "utf8")).toContain("all went well");
    expect(error.message).toMatch(/The last line of the log:\n {2}\| second launch: it broke$/);
  }, 60_000);

  it("says of a rank on an ssh host that ended with code 128 + N that its shell reports a death by signal N the same way", async () => {
    const group = launch({
      argv: ["/bin/sh", "-c", "kill -s KILL $$"],
      worldSize: 1,
      hosts: [sshd.url],
    });
    const error = (await group.wait().catch((thrown: unknown) => thrown)) as RankGroupError;
    expect(error.code).toBe("RANK_FAILED");
    expect(error.message).toContain(
      `rank 0 exited with code 137. On ${sshd.url} its shell reports code 137 both for a rank killed by signal 9 (SIGKILL) and for one that exits with 137: baton cannot tell which it was.`,
    );
  }, 60_000);

  it("fails a launch with a host that refuses ssh before any rank starts, naming the host and the ssh command to try", async () => {
    const group = launch({
      argv: ENV_RANK,
      hosts: ["local", "ssh://nobody@127.0.0.1:1"],
      remote: { ssh: { configFile: sshd.configFile, connectTimeoutMs: 2_000 } },
    });
    const error = (await group.wait().catch((thrown: unknown) => thrown)) as RankGroupError;
    expect(error.code).toBe("LAUNCH_FAILED");
    expect(error.message).toMatch(
      new RegExp(
        `^deployment ${group.deployment}: it could not be launched: ssh://nobody@127\\.0\\.0\\.1:1: cannot connect: .*-p 1 nobody@127\\.0\\.0\\.1 true\` works .*\\. No rank was started\\.$`,
      ),
    );
  }, 30_000);

  it("refuses a launch of a name that a launcher with another local state dir holds in the same remote state dir as DEPLOYMENT_BLOCKED, giving back its own claim and leaving that one's files and ranks there alone", async () => {
    const first = launch({ argv: [...RANK_PY, "--step-ms", "50"] });
    await first.ready;
    const remotePid = first.pids()[1] as number;
    const firstManifest = await readManifest(
      first.dir.slice(0, -first.deployment.length - 1),
      first.deployment,
    );
    const there = remoteFiles(open());
    const paths = deploymentPaths(remoteRoot, first.deployment);
    /** The deployment's files on the host, but the temp files of writes in flight. */
    const filesThere = async () =>
      (await there.list(paths.dir)).filter((name) => !name.startsWith(".")).sort();
    const before = await filesThere();
    // Another local state dir (launch gives each its own), the same name and ssh host.
    const second = launch({ argv: [...RANK_PY, "--step-ms", "50"], name: first.deployment });
    const error = (await second.wait().catch((thrown: unknown) => thrown)) as RankGroupError;
    expect(error).toBeInstanceOf(RankGroupError);
    // Retryable, as a name a live launcher holds here is: that launch may end.
    expect(error).toMatchObject({ code: "DEPLOYMENT_BLOCKED", retryable: undefined });
    expect(error.message).toMatch(
      new RegExp(
        `^deployment ${first.deployment}: it cannot be launched: ${sshd.url}: deployment ${first.deployment} cannot use the state dir ${remoteRoot} there: another launcher holds it there \\(pid ${process.pid} on ${hostname().replaceAll(".", "\\.")}, its lease .* renewed \\d+ ms ago\\): .* give this one another --name \\(name\\) or --remote-state-dir \\(remote\\.stateDir\\)\\. No rank was started\\.$`,
      ),
    );
    // The refused launch gave back its local claim (its lease, its manifest) and added nothing
    // on the host.
    const secondPaths = deploymentPaths(
      second.dir.slice(0, -second.deployment.length - 1),
      second.deployment,
    );
    expect(existsSync(secondPaths.lease)).toBe(false);
    expect(existsSync(secondPaths.manifest)).toBe(false);
    expect(await filesThere()).toEqual(before);
    // The first launch's mirrored lease and its rank's marker are still there, its rank runs.
    expect(await readStateFile(there, LEASE_FORMAT, paths.lease)).toMatchObject({
      token: firstManifest?.launcher.token,
    });
    expect(await readStateFile(there, MARKER_FORMAT, paths.marker(1))).toMatchObject({
      pid: remotePid,
      phase: "ready",
    });
    const [proc] = await remoteProcs(open()).snapshot([remotePid], {
      deployment: first.deployment,
      stateDir: remoteRoot,
    });
    expect(proc?.state).toMatch(/sleeping|running/);
    expect((await first.stop("test")).verified).toBe(true);
  }, 60_000);

  it("refuses a launch whose hosts reach the ssh host under two names as a configuration error naming both, giving back its claims here and there", async () => {
    // An ssh_config alias of the test host: the same machine, user and state dir.
    const configFile = join(newStateDir(), "ssh_config");
    writeFileSync(
      configFile,
      `Host samebox\n  HostName 127.0.0.1\n\n${readFileSync(sshd.configFile, "utf8").replace("Host 127.0.0.1", "Host 127.0.0.1 samebox")}`,
    );
    const alias = sshd.url.replace("@127.0.0.1:", "@samebox:");
    const group = launch({
      argv: [...RANK_PY],
      worldSize: 3,
      hosts: ["local", sshd.url, alias],
      remote: { ssh: { configFile }, guardGraceMs: 1_000 },
    });
    const error = (await group.wait().catch((thrown: unknown) => thrown)) as RankGroupError;
    expect(error).toBeInstanceOf(RankGroupError);
    expect(error).toMatchObject({ code: "LAUNCH_FAILED", retryable: false });
    expect(error.message).toBe(
      `deployment ${group.deployment}: it could not be launched: --hosts (hosts) names one machine twice: ${sshd.url} and ${alias} reach the same state dir ${remoteRoot} as the same user, where this launch's lease of deployment ${group.deployment} was already there. List each machine once in --hosts, under one name. No rank was started.`,
    );
    expect(group.pids()).toEqual([]);
    // Its local claim given back, and nothing of it left on the host.
    const paths = deploymentPaths(
      group.dir.slice(0, -group.deployment.length - 1),
      group.deployment,
    );
    expect(existsSync(paths.lease)).toBe(false);
    expect(existsSync(paths.manifest)).toBe(false);
    expectNoRemoteFolder(group.deployment);
  }, 60_000);

  it("retries a rank job whose name another launcher holds in the ssh host's state dir, as one held here, saying to give it a backoff; that launcher's lease stays", async () => {
    const deployment = newDeployment();
    // The other launcher's mirrored lease, renewed just now: no process of it runs.
    const there = remoteFiles(open());
    const lease = await holdNameThere(there, deployment);
    const remote = defineJobs({
      train: {
        ranks: (input: { stateDir: string; name: string; host: string; configFile: string }) => ({
          argv: [...RANK_PY],
          stateDir: input.stateDir,
          name: input.name,
          hosts: [input.host],
          remote: { ssh: { configFile: input.configFile } },
        }),
      },
    });
    const input = {
      stateDir: newStateDir(),
      name: deployment,
      host: sshd.url,
      configFile: sshd.configFile,
    };
    const train = job("train", input, { ranks: 1, retries: 1 });
    const outcome = (await createEngine({ jobs: remote, workers: 1 }).run([train])).get(train);
    expect(outcome).toMatchObject({ status: "failed", attempts: 2 });
    // The job's advice is for DEPLOYMENT_BLOCKED alone (`forTheJob`): its error carries no code.
    expect(outcome.error).toMatchObject({ name: "RankGroupError" });
    expect(outcome.error?.retryable).toBeUndefined();
    expect(outcome.error?.message).toMatch(
      new RegExp(
        `^deployment ${deployment}: it cannot be launched: ${sshd.url}: deployment ${deployment} cannot use the state dir ${remoteRoot} there: another launcher holds it there \\(pid 4242 on its own machine, .*\\. No rank was started\\. Each retry of job ${outcome.id} \\(kind "train", this was attempt 2\\) launches it again, which works only once the name is free: give the job a backoff`,
      ),
    );
    expect(await readStateFile(there, LEASE_FORMAT, lease)).toMatchObject({
      token: "another launcher",
    });
  }, 60_000);

  it("leaves no remote rank alive when the launcher is SIGKILLed, and the reaper then removes the manifest on both hosts", async () => {
    const stateDir = newStateDir();
    const deployment = newDeployment();
    const launcher = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        LAUNCHER,
        stateDir,
        deployment,
        sshd.url,
        sshd.configFile,
        "--",
        ...RANK_PY,
        "--ignore-term",
        "--step-ms",
        "50",
      ],
      { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
    );
    children.push(launcher);
    const line = await firstLine(launcher);
    const { pids } = JSON.parse(line) as { pids: number[] };
    const manifest = await readManifest(stateDir, deployment);
    const remotePid = manifest?.ranks.find((rank) => rank.host === sshd.url)?.pid as number;
    expect(pids).toContain(remotePid);
    process.kill(launcher.pid as number, "SIGKILL");
    // The remote guard saw its session's input end: TERM (ignored), a second, KILL.
    const ms = await goneWithin(open(), [remotePid], 10_000);
    console.log(`remote rank gone ${ms} ms after its launcher was SIGKILLed`);

    await reapOnly(stateDir, deployment);
    expect(existsSync(deploymentPaths(stateDir, deployment).manifest)).toBe(false);
    expectNoRemoteFolder(deployment);
    for (const pid of pids) {
      const info = procs.inspect(pid);
      expect(info === undefined || info.state === "zombie").toBe(true);
    }
  }, 60_000);

  it("reaps an orphaned manifest whose remote pid another program now holds without signalling it, and the empty folders earlier versions left there", async () => {
    const host = open();
    const leftover = newDeployment();
    await host.run(
      `mkdir '${remoteRoot}/${leftover}' && touch -d @$(($(date +%s) - 3600)) '${remoteRoot}/${leftover}'`,
    );
    const started = await host.run("sleep 300 >/dev/null 2>&1 </dev/null & echo $!");
    const stranger = Number(started.stdout.toString());
    strangers.push(stranger);
    const { stateDir, deployment } = await writeOrphanedManifest({
      host: sshd.url,
      pid: stranger,
      stateDir: remoteRoot,
    });
    const report = await reapOnly(stateDir, deployment);
    // Probed as not of the deployment, so never signalled (and `signalIfOwned` on the host
    // would have refused it anyway).
    const steps = report.reaped[0]?.teardown.steps.join("\n") ?? "";
    expect(steps).toContain(`${sshd.url}: start: pids ${stranger}`);
    expect(steps).not.toMatch(new RegExp(`(TERM|KILL) to pids ${stranger}`));
    const [after] = await remoteProcs(host).snapshot([stranger], { deployment, stateDir });
    expect(after).toMatchObject({ pid: stranger, argv: ["sleep", "300"], env: {} });
    expect(after?.state).not.toBe("zombie");
    // Gone with the rmdir of the reaped deployment's own folder, in the same ssh call.
    expectNoRemoteFolder(leftover);
  }, 60_000);

  it("names what a remote rank left running that the reap stopped there, by pid, program, rank and host, in the outcome record", async () => {
    const host = open();
    const deployment = newDeployment();
    // A rank of a dead launcher on the ssh host, and a helper it left running there (started
    // here by the test, as the rank would have: with the rank's environment).
    const start = async (program: string) =>
      Number(
        (
          await host.run(
            `BATON_DEPLOYMENT='${deployment}' BATON_STATE_DIR='${remoteRoot}' RANK=0 ${program} >/dev/null 2>&1 </dev/null & echo $!`,
          )
        ).stdout.toString(),
      );
    const rank = await start("sleep 300");
    const helper = await start("tail -f /dev/null");
    const { stateDir, paths } = await writeOrphanedManifest(
      { host: sshd.url, pid: rank, stateDir: remoteRoot },
      deployment,
    );
    const report = await reapOnly(stateDir, deployment);
    const left = [{ pid: helper, rank: 0, host: sshd.url, program: "tail", outsideGroup: true }];
    expect(report.reaped[0]?.leftRunning).toEqual(left);
    expect((await readStateFile(files, OUTCOME_FORMAT, paths.outcome))?.ended).toMatchObject({
      status: "reaped",
      leftRunning: left,
    });
    const after = await remoteProcs(host).snapshot([rank, helper], {
      deployment,
      stateDir: remoteRoot,
    });
    expect(after.filter((proc) => proc.state !== "zombie")).toEqual([]);
  }, 60_000);

  it("reaps nothing on a host where a launcher with another local state dir now holds the orphaned deployment's name, keeping that launcher's rank, lease and the manifest", async () => {
    const { stateDir, deployment, paths } = await writeOrphanedManifest({
      host: sshd.url,
      pid: await deadPid(),
      stateDir: remoteRoot,
    });
    // The other launcher's rank there and its mirrored lease, renewed just now.
    const host = open();
    const started = await host.run(
      `BATON_DEPLOYMENT=${deployment} BATON_STATE_DIR='${remoteRoot}' sleep 300 >/dev/null 2>&1 </dev/null & echo $!`,
    );
    const rank = Number(started.stdout.toString());
    strangers.push(rank);
    const there = remoteFiles(host);
    const lease = await holdNameThere(there, deployment);
    const report = await reap(stateDir);
    expect(report.reaped).toEqual([]);
    expect(report.failed).toEqual([{ deployment, error: expect.any(RankGroupError) }]);
    expect(report.failed[0]?.error).toMatchObject({
      code: "DEPLOYMENT_BLOCKED",
      message: expect.stringMatching(
        new RegExp(
          `^${sshd.url}: deployment ${deployment} in the state dir ${remoteRoot} there is held by another launcher \\(pid 4242 on its own machine, its lease ${lease} renewed \\d+ ms ago\\), .* none was stopped and its files there stay\\. Reap again once that launch has ended$`,
        ),
      ),
    });
    const [after] = await remoteProcs(host).snapshot([rank], {
      deployment,
      stateDir: remoteRoot,
    });
    expect(after?.state).toMatch(/sleeping|running/);
    expect(await readStateFile(there, LEASE_FORMAT, lease)).toMatchObject({
      token: "another launcher",
    });
    expect(existsSync(paths.manifest)).toBe(true);
  }, 60_000);

  it("keeps the manifest when a remote host cannot be reached, and blocks that name", async () => {
    const { stateDir, paths } = await writeOrphanedManifest({
      host: "ssh://nobody@127.0.0.1:1",
      pid: 4242,
      stateDir: "/home/nobody/.baton/run",
    });
    const report = await reapDeployments({
      stateDir,
      procs,
      files,
      clock,
      ssh: { configFile: sshd.configFile, connectTimeoutMs: 2_000 },
    });
    expect(report.reaped).toEqual([]);
    expect(report.failed).toHaveLength(1);
    expect(report.failed[0]?.error).toMatchObject({ code: "SSH_UNREACHABLE" });
    expect(existsSync(paths.manifest)).toBe(true);
  }, 30_000);
});
