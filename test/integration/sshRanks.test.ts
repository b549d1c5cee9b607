/**
 * Remote ranks over SSH against a real OpenSSH server on 127.0.0.1 (test/fixtures/sshd.ts):
 * remote commands and their timeouts, the remote process table, ownership checked on the
 * remote side, the remote teardown, remote files, and ranks that must not outlive their
 * launcher. The "remote" host is this machine, so the remote pids are real pids here, owned
 * by the test user; every one a test starts is killed by pid over ssh in afterEach.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RankGroupError, RemoteHostError, TeardownError } from "../../src/errors.ts";
import { envCarries } from "../../src/machines/carriesDeployment.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MARKER_FORMAT, type Marker } from "../../src/rank/markerFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import { holdLease } from "../../src/runtime/launcherLease.ts";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import { remoteFiles } from "../../src/runtime/remoteFiles.ts";
import { type RemoteProc, type RemoteProcs, remoteProcs } from "../../src/runtime/remoteProcs.ts";
import { type RemoteRankHandle, spawnRemoteRank } from "../../src/runtime/remoteRank.ts";
import { openRemoteSite } from "../../src/runtime/remoteSite.ts";
import { tearDownRemote } from "../../src/runtime/remoteTeardown.ts";
import { type SshHost, sshHost } from "../../src/runtime/sshHost.ts";
import { parseRankHost, type SshTarget } from "../../src/runtime/sshTarget.ts";
import { firstLine } from "../fixtures/firstLine.ts";
import { killRemoteLeftovers } from "../fixtures/remoteLeftovers.ts";
import { goneWithin, sshdTestsRun, startSshdSite, type TestSshd } from "../fixtures/sshd.ts";

const STUBBORN = fileURLToPath(new URL("../fixtures/stubbornRank.mjs", import.meta.url));
const LAUNCHER = fileURLToPath(new URL("../fixtures/remoteLauncher.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FAST = {
  termGraceMs: 600,
  killWaitMs: 600,
  killAgainWaitMs: 600,
  sweepTermWaitMs: 600,
  sweepKillWaitMs: 600,
};

const available = sshdTestsRun("sshRanks.test.ts");

describe.skipIf(!available)("remote ranks over SSH", () => {
  let sshd: TestSshd;
  let target: SshTarget;
  let stateDir: string;
  let localDir: string;
  /** Per test: what to stop afterwards. */
  let hosts: SshHost[] = [];
  let remotePids: number[] = [];
  let localChildren: ChildProcess[] = [];
  let ranks: RemoteRankHandle[] = [];
  let deployments: string[] = [];
  let counter = 0;

  const open = (options: { timeoutMs?: number; multiplex?: boolean } = {}): SshHost => {
    const host = sshHost(target, { configFile: sshd.configFile, ...options });
    hosts.push(host);
    return host;
  };
  /**
   * An ssh client at `localDir/name` that runs `ssh` after a shell `case` on the remote command
   * (its last argument), `pattern) action ;;`: a test's way to note or hold given calls.
   */
  const sshShim = (name: string, branch: string): string => {
    const shim = join(localDir, name);
    writeFileSync(
      shim,
      [
        "#!/bin/sh",
        "for arg; do last=$arg; done",
        `case $last in ${branch} esac`,
        'exec ssh "$@"',
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    return shim;
  };
  const newDeployment = (): string => {
    const deployment = `dep-ssh${process.pid}t${++counter}`;
    deployments.push(deployment);
    return deployment;
  };
  const startRank = async (
    host: SshHost,
    deployment: string,
    mode = "alone",
    extra: { env?: Record<string, string>; envDefaults?: Record<string, string> } = {},
  ): Promise<RemoteRankHandle> => {
    const rank = await spawnRemoteRank({
      host,
      argv: ["/usr/bin/node", STUBBORN, mode],
      env: {
        RANK: "1",
        WORLD_SIZE: "2",
        BATON_DEPLOYMENT: deployment,
        BATON_STATE_DIR: stateDir,
        ...extra.env,
      },
      envDefaults: extra.envDefaults,
      logFile: join(localDir, `${deployment}.log`),
      guardGraceMs: 1_000,
    });
    ranks.push(rank);
    remotePids.push(rank.pid);
    return rank;
  };
  /** Waits until the rank's log holds `text` (the rank has started its handlers). */
  const logged = async (deployment: string, text: RegExp): Promise<RegExpExecArray> => {
    for (let waited = 0; waited < 15_000; waited += 50) {
      const match = text.exec(readLog(deployment));
      if (match !== null) return match;
      await sleep(50);
    }
    throw new Error(`${deployment}'s log never showed ${text}: ${readLog(deployment)}`);
  };
  const readLog = (deployment: string): string => {
    try {
      return readFileSync(join(localDir, `${deployment}.log`), "utf8");
    } catch {
      return "";
    }
  };

  beforeAll(async () => {
    ({ sshd, target, remoteRoot: stateDir } = await startSshdSite());
  });

  afterAll(async () => {
    await sshd?.stop();
  });

  afterEach(async () => {
    try {
      rmSync(localDir, { recursive: true, force: true });
      for (const child of localChildren) {
        if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
          process.kill(child.pid, "SIGKILL");
        }
      }
      for (const rank of ranks) {
        const client = nodeProcs().inspect(rank.sshPid);
        if (client !== undefined && client.state !== "zombie") process.kill(rank.sshPid, "SIGKILL");
      }
      // The remote processes the test started, by pid (as the test user, over ssh), then
      // anything else that carries one of its deployments (a rank's child, a restarted one).
      const cleaner = sshHost(target, { configFile: sshd.configFile, multiplex: false });
      try {
        const dirs = deployments.map((dep) => `'${stateDir}/${dep}'`).join(" ");
        await cleaner.run(
          `${remotePids.length > 0 ? `kill -s KILL ${remotePids.join(" ")} 2>/dev/null;` : ""} rm -rf ${dirs} /tmp/baton-ssh-test-*.pid; exit 0`,
        );
        await killRemoteLeftovers(cleaner, deployments);
      } finally {
        await cleaner.close();
      }
    } finally {
      for (const host of hosts) await host.close().catch(() => undefined);
      hosts = [];
      remotePids = [];
      localChildren = [];
      ranks = [];
      deployments = [];
    }
  });

  beforeEach(() => {
    localDir = mkdtempSync(join(tmpdir(), "baton-ssh-ranks-"));
  });

  it("runs a remote command, captures its output and code, and kills a call that outlives its timeout", async () => {
    const host = open();
    const result = await host.run("echo out; echo err >&2; printf '%s' \"$(id -un)\" >&2; exit 3");
    expect(result.code).toBe(3);
    expect(result.stdout.toString()).toBe("out\n");
    expect(result.stderr).toBe(`err\n${sshd.user}`);
    // Data travels on stdin, not argv.
    const echoed = await host.run("cat", { input: "secret-on-stdin" });
    expect(echoed.stdout.toString()).toBe("secret-on-stdin");

    const pidFile = `/tmp/baton-ssh-test-${process.pid}.pid`;
    const call = host.run(`echo $$ > ${pidFile}; exec sleep 31`, { timeoutMs: 800 });
    await expect(call).rejects.toMatchObject({ code: "SSH_TIMEOUT", host: sshd.url });
    const pid = Number((await host.run(`cat ${pidFile}`)).stdout.toString());
    expect(pid).toBeGreaterThan(1);
    remotePids.push(pid);
    // The remote side of the timed-out call was killed too (its process group, over ssh).
    await goneWithin(host, [pid], 5_000);
  });

  it("shares one master connection, starts it again when it dies, and stops it on close", async () => {
    const masters = () =>
      nodeProcs()
        .list()
        .filter(
          (proc) =>
            proc.state !== "zombie" &&
            proc.argv.includes("ControlMaster=yes") &&
            proc.argv.includes(String(sshd.port)),
        );
    const before = masters().map((proc) => proc.pid);
    const host = open();
    await host.run("true");
    await host.run("true");
    const first = masters().filter((proc) => !before.includes(proc.pid));
    expect(first).toHaveLength(1);
    const dir =
      first[0]?.argv.find((arg) => arg.startsWith("ControlPath="))?.slice("ControlPath=".length) ??
      "";
    expect(statSync(dirname(dir)).mode & 0o777).toBe(0o700);
    process.kill(first[0]?.pid as number, "SIGKILL");
    await sleep(200);
    expect((await host.run("echo again")).stdout.toString()).toBe("again\n");
    const second = masters().filter((proc) => !before.includes(proc.pid));
    expect(second).toHaveLength(1);
    expect(second[0]?.pid).not.toBe(first[0]?.pid);
    await host.close();
    const after = masters().filter((proc) => !before.includes(proc.pid));
    expect(after).toEqual([]);
    expect(existsSync(dirname(dir))).toBe(false);
    await expect(host.run("true")).rejects.toThrow(/closed/);
  });

  it("reports an unreachable host as SSH_UNREACHABLE with ssh's own words", async () => {
    const closed = parseRankHost("ssh://nobody@127.0.0.1:1") as SshTarget;
    const host = sshHost(closed, { configFile: sshd.configFile, connectTimeoutMs: 3_000 });
    hosts.push(host);
    const error = await host.run("true").catch((err: unknown) => err);
    expect(error).toBeInstanceOf(RemoteHostError);
    expect(error).toMatchObject({ code: "SSH_UNREACHABLE", host: "ssh://nobody@127.0.0.1:1" });
    expect((error as Error).message).toMatch(/refused|connect/i);
    // The command to try by hand is the one that reaches this host as baton does.
    expect((error as Error).message).toContain(
      `Check that \`ssh -o BatchMode=yes -F ${sshd.configFile} -p 1 nobody@127.0.0.1 true\` works`,
    );
  });

  it("passes the environment on stdin, byte for byte, with defaults yielding to the host's", async () => {
    const host = open();
    const deployment = newDeployment();
    const odd = 'it\'s "$HOME" `id` \\0101 %s\n\ttabs ünï ✓ -n ';
    const rank = await startRank(host, deployment, "alone", {
      env: { BATON_TEST_SHOW: "ODD,EMPTY,HOME,FILLED,BATON_LAUNCHER_PID", ODD: odd, EMPTY: "" },
      envDefaults: { HOME: "/not/the/home", FILLED: "from-default", ODD: "ignored" },
    });
    const shown = JSON.parse((await logged(deployment, /^env (.*)$/m))[1] as string);
    expect(shown).toEqual({
      ODD: odd,
      EMPTY: "",
      HOME: "/home/batontest",
      FILLED: "from-default",
      BATON_LAUNCHER_PID: expect.stringMatching(/^\d+$/),
    });
    // No value is in any argv on the remote host: not the guard's, not the rank's.
    const table = remoteProcs(host);
    const [mine] = await table.snapshot([rank.pid], { deployment, stateDir });
    expect(mine?.argv.join(" ")).not.toContain("from-default");
    const guard = await table.snapshot([mine?.ppid as number], { deployment, stateDir });
    expect(guard[0]?.argv.join(" ")).toMatch(/^\/bin\/sh -c /);
    expect(guard[0]?.argv.join(" ")).not.toContain("from-default");
  });

  it("refuses to start a rank whose program or directory is missing on the host", async () => {
    const host = open();
    const deployment = newDeployment();
    const base = {
      host,
      env: { BATON_DEPLOYMENT: deployment },
      logFile: join(localDir, `${deployment}.log`),
    };
    const missing = await spawnRemoteRank({ ...base, argv: ["/nonexistent/rank"] }).catch(
      (err: unknown) => err,
    );
    // Not there next time either: a rank job that meets it is not retried.
    expect(missing).toMatchObject({
      code: "SSH_REMOTE",
      host: sshd.url,
      retryable: false,
      shellCode: 127,
    });
    // The guard's own words, once, without its "baton: " (that marks them in the rank's log).
    expect((missing as Error).message).toBe(
      `${sshd.url}: /nonexistent/rank: not found on ${hostname()}`,
    );
    await logged(deployment, /\/nonexistent\/rank: not found on /);
    const nowhere = await spawnRemoteRank({
      ...base,
      argv: ["/usr/bin/node", STUBBORN],
      cwd: "/nonexistent/$USER's dir",
    }).catch((err: unknown) => err);
    expect(nowhere).toMatchObject({ code: "SSH_REMOTE", retryable: false, shellCode: undefined });
    // Not the shell's own "cd: can't cd to …" before it, and the directory as given.
    expect((nowhere as Error).message).toBe(`${sshd.url}: cannot enter /nonexistent/$USER's dir`);
  });

  it("snapshots remote processes in one round trip: ids, state, argv, environment, zombies", async () => {
    const host = open();
    const deployment = newDeployment();
    const rank = await startRank(host, deployment);
    const line = await logged(deployment, /stubborn rank (\d+) 1 (\S+) (\d+)\n/);
    expect(Number(line[1])).toBe(rank.pid);
    expect(line[2]).toBe(deployment);
    const sessionPid = Number(line[3]);
    const table = remoteProcs(host);
    const procs = await table.snapshot([rank.pid, sessionPid, 999_999_999], {
      deployment,
      stateDir,
    });
    const mine = procs.find((proc) => proc.pid === rank.pid);
    expect(mine).toMatchObject({
      pid: rank.pid,
      pgid: rank.pid,
      state: "sleeping",
      argv: ["/usr/bin/node", STUBBORN, "alone"],
      env: { BATON_DEPLOYMENT: deployment, BATON_STATE_DIR: stateDir },
    });
    // BATON_LAUNCHER_PID is the remote sshd session serving this rank's connection.
    const session = procs.find((proc) => proc.pid === sessionPid);
    expect(session?.argv.join(" ")).toMatch(/^sshd: /);
    // sshd makes its session process undumpable: its environment is unreadable, not "no".
    expect(session?.env).toBeUndefined();
    expect(procs.some((proc) => proc.pid === 999_999_999)).toBe(false);
    // The scan finds it by its environment alone.
    const scanned = await table.snapshot([], { deployment, stateDir }, { scan: true });
    expect(scanned.map((proc) => proc.pid)).toContain(rank.pid);
    expect(scanned.every((proc) => envCarries(proc.env, { deployment, stateDir }))).toBe(true);

    // A zombie counts as dead: its parent (exec'd into sleep) never reaps it. The child
    // outlives the exec by a second: a `sleep 0` could end first and be reaped by the shell,
    // leaving no zombie at all (it did, once in a CI run).
    const zombieFile = `/tmp/baton-ssh-test-${process.pid}.pid`;
    const parent = await host.run(
      `/bin/sh -c 'sleep 1 & echo $! > ${zombieFile}; exec sleep 300' >/dev/null 2>&1 </dev/null & echo $!`,
    );
    remotePids.push(Number(parent.stdout.toString()));
    let zombie: number | undefined;
    for (let waited = 0; zombie === undefined && waited < 5_000; waited += 100) {
      const text = (await host.run(`cat ${zombieFile} 2>/dev/null`)).stdout.toString();
      if (/^\d+\n$/.test(text)) zombie = Number(text);
      else await sleep(100);
    }
    expect(zombie).toBeGreaterThan(1);
    let state: string | undefined;
    for (let waited = 0; state !== "zombie" && waited < 5_000; waited += 100) {
      state = (await table.snapshot([zombie as number], { deployment, stateDir }))[0]?.state;
      if (state !== "zombie") await sleep(100);
    }
    expect(state).toBe("zombie");
    const outcomes = await table.signalIfOwned(
      [zombie as number],
      { deployment, stateDir },
      "SIGKILL",
    );
    expect(outcomes.get(zombie as number)).toBe("ESRCH");
  });

  it("never signals a remote pid that another program now holds", async () => {
    const host = open();
    const deployment = newDeployment();
    // An unrelated program of the same user, under a pid a stale marker could name.
    const started = await host.run("sleep 300 >/dev/null 2>&1 </dev/null & echo $!");
    const stranger = Number(started.stdout.toString());
    remotePids.push(stranger);
    const table = remoteProcs(host);
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      const outcomes = await table.signalIfOwned([stranger], { deployment, stateDir }, signal);
      expect(outcomes.get(stranger)).toBe("not-owned");
    }
    // A value cannot pose as an entry of the environment.
    const posing = await host.run(
      `FAKE="$(printf 'x\\nBATON_DEPLOYMENT=${deployment}')" sleep 300 >/dev/null 2>&1 </dev/null & echo $!`,
    );
    const poser = Number(posing.stdout.toString());
    remotePids.push(poser);
    expect(
      (await table.signalIfOwned([poser], { deployment, stateDir }, "SIGKILL")).get(poser),
    ).toBe("not-owned");
    expect((await table.snapshot([poser], { deployment, stateDir }))[0]?.env).toEqual({});
    // The whole remote teardown, told the pid is a rank and named by a marker, leaves it alone.
    const report = await tearDownRemote(
      { deployment, stateDir, pids: [stranger], sweepCandidates: async () => [stranger] },
      { table, clock: nodeClock() },
      FAST,
    );
    expect(report.verified).toBe(true);
    expect(report.swept).toEqual([]);
    const [after] = await table.snapshot([stranger], { deployment, stateDir });
    expect(after).toMatchObject({ pid: stranger, argv: ["sleep", "300"], env: {} });
    expect(after?.state).not.toBe("zombie");
    // A gone pid and a pid of another user are refused as such.
    const other = await table
      .signalIfOwned([999_999_999, 1], { deployment, stateDir }, "SIGTERM")
      .catch((err: Error) => err);
    expect(other).toBeInstanceOf(Error);
    const gone = await table.signalIfOwned([999_999_999], { deployment, stateDir }, "SIGTERM");
    expect(gone.get(999_999_999)).toBe("ESRCH");
  });

  it("never signals a process of the same name launched from another state dir there", async () => {
    const host = open();
    const deployment = newDeployment();
    const other = "/tmp/another state dir";
    const started = await host.run(
      `BATON_DEPLOYMENT=${deployment} BATON_STATE_DIR='${other}' /bin/sh -c 'sleep 300; :' ${deployment} >/dev/null 2>&1 </dev/null & echo $!`,
    );
    const twin = Number(started.stdout.toString());
    remotePids.push(twin);
    const table = remoteProcs(host);
    const [seen] = await table.snapshot([twin], { deployment, stateDir });
    expect(seen?.env).toEqual({ BATON_DEPLOYMENT: deployment, BATON_STATE_DIR: other });
    // Its arguments name the deployment, which would do for a pid of no state dir's.
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      const outcomes = await table.signalIfOwned([twin], { deployment, stateDir }, signal);
      expect(outcomes.get(twin)).toBe("not-owned");
    }
    // The teardown's scan finds it by its name, and leaves it alone.
    const report = await tearDownRemote(
      { deployment, stateDir, pids: [], sweepCandidates: async () => [twin] },
      { table, clock: nodeClock() },
      FAST,
    );
    expect(report.verified).toBe(true);
    expect(report.swept).toEqual([]);
    const [after] = await table.snapshot([twin], { deployment, stateDir });
    expect(after?.state).not.toBe("zombie");
  });

  it("tears down a remote rank that ignores TERM (and its escaped child) with TERM, wait, KILL", async () => {
    const host = open();
    const deployment = newDeployment();
    const rank = await startRank(host, deployment, "child");
    const child = Number((await logged(deployment, /child (\d+)\n/))[1]);
    remotePids.push(child);
    const table = remoteProcs(host);
    const report = await tearDownRemote(
      { deployment, stateDir, pids: [rank.pid], sweepCandidates: async () => [rank.pid] },
      { table, clock: nodeClock() },
      FAST,
    );
    expect(report.verified).toBe(true);
    const steps = report.steps.join("\n");
    expect(steps).toMatch(new RegExp(`TERM to pids ${rank.pid}`));
    expect(steps).toMatch(/awaitTerm: time is up/);
    expect(steps).toMatch(new RegExp(`KILL to pids ${rank.pid}`));
    // The child left the rank's process group; the sweep found it by its environment.
    expect(report.swept).toContain(child);
    expect(readLog(deployment)).toMatch(/ignoring SIGTERM/);
    expect(await rank.exited).toEqual({ code: 137, signal: null });
    await goneWithin(host, [rank.pid, child], 1_000);
  });

  it("reports another user's process as EPERM or not owned, never signalling it", async () => {
    const host = open();
    const deployment = newDeployment();
    const table = remoteProcs(host);
    // A root process whose environment carries the deployment: unreadable to the test user,
    // so nothing proves it is the deployment's.
    const byEnv = spawn("sleep", ["300"], {
      env: { ...process.env, BATON_DEPLOYMENT: deployment },
      stdio: "ignore",
    });
    localChildren.push(byEnv);
    const envPid = byEnv.pid as number;
    expect(
      (await table.signalIfOwned([envPid], { deployment, stateDir }, "SIGTERM")).get(envPid),
    ).toBe("not-owned");
    // A root process whose argv names the deployment: owned, but the kill is not permitted.
    const byArgv = spawn(process.execPath, ["-e", "setInterval(() => {}, 1 << 30)", deployment], {
      stdio: "ignore",
    });
    localChildren.push(byArgv);
    const argvPid = byArgv.pid as number;
    expect(
      (await table.signalIfOwned([argvPid], { deployment, stateDir }, "SIGKILL")).get(argvPid),
    ).toBe("EPERM");
    expect(nodeProcs().inspect(envPid)?.state).not.toBe("zombie");
    expect(nodeProcs().inspect(argvPid)?.state).not.toBe("zombie");
  });

  it("raises TeardownError naming a remote process of the deployment that keeps coming back", async () => {
    const host = open();
    const deployment = newDeployment();
    const id = { deployment, stateDir };
    const real = remoteProcs(host);
    // A supervisor outside the deployment (its own environment does not carry it, so no sweep
    // sees it) starts a process that carries it again as soon as one dies.
    const loop = await host.run(
      `/bin/sh -c 'while :; do BATON_DEPLOYMENT=${deployment} BATON_STATE_DIR=${stateDir} sleep 300; done' >/dev/null 2>&1 </dev/null & echo $!`,
    );
    remotePids.push(Number(loop.stdout.toString()));
    /** The supervisor's process of the deployment, once it has started one. */
    const restarted = async (): Promise<number> => {
      for (let waited = 0; waited < 10_000; waited += 50) {
        const [proc] = (await real.snapshot([], id, { scan: true })).filter(
          ({ state }) => state !== "zombie",
        );
        if (proc !== undefined) return proc.pid;
        await sleep(50);
      }
      throw new Error(`the supervisor started no process of ${deployment} within 10 s`);
    };
    // A check that lands between a death and the supervisor's next start rightly sees nothing
    // of the deployment (under load that window is long: the flake of the 33rd session's CI).
    // So each of the teardown's scans waits for the supervisor first: it keeps coming back
    // whenever the teardown looks.
    const table: RemoteProcs = {
      ...real,
      snapshot: async (pids, identity, options) => {
        if (options?.scan === true) await restarted();
        return real.snapshot(pids, identity, options);
      },
    };
    const first = await restarted();
    const error = await tearDownRemote(
      { deployment, stateDir, pids: [first], sweepCandidates: async () => [] },
      { table, clock: nodeClock() },
      FAST,
    ).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(TeardownError);
    const survivors = (error as TeardownError).survivors;
    expect(survivors).toHaveLength(1);
    expect(survivors[0]?.pid).not.toBe(first);
    expect((error as Error).message).toMatch(deployment);
  });

  it("never reports a remote process that ends while it is read as alive without its environment", async () => {
    const host = open();
    const deployment = newDeployment();
    const id = { deployment, stateDir };
    // Ten loops of processes that carry the deployment and live 100 ms, each left a zombie for
    // 200 ms by its parent (a shell that execs a sleep, which never waits): one that ends while a
    // scan reads it is still there for the scan's last read, its state, instead of gone unless
    // its parent had not yet reaped it (loops of `sleep 0.05` reaped at once left about one so
    // in thirty scans, and a scan 30 s long; these leave two or three in each scan). Started in
    // one ssh call.
    const loop = `while :; do /bin/sh -c "BATON_DEPLOYMENT=${deployment} BATON_STATE_DIR=${stateDir} sleep 0.1 & exec sleep 0.3"; done`;
    const started = await host.run(
      `for n in 1 2 3 4 5 6 7 8 9 10; do /bin/sh -c '${loop}' >/dev/null 2>&1 </dev/null & echo $!; done`,
    );
    remotePids.push(...started.stdout.toString().trim().split("\n").map(Number));
    // A process read as it ended is a zombie, or running its exit (`exiting`, its environment
    // unknown), or, wrongly, alive with an environment that could not be read.
    const endedWhileRead = ({ state, exiting, env }: RemoteProc) =>
      state === "zombie" || exiting === true || env === undefined;
    // Scans until at least 20 scans have read 20 processes as they ended, or 30 s (a loaded
    // machine starts the loops late and runs each scan slowly).
    const table = remoteProcs(host);
    const entries: RemoteProc[] = [];
    const until = Date.now() + 30_000;
    for (
      let scan = 0;
      scan < 20 || (entries.filter(endedWhileRead).length < 20 && Date.now() < until);
      scan++
    )
      entries.push(...(await table.snapshot([], id, { scan: true })));
    expect(entries.filter(endedWhileRead).length).toBeGreaterThan(0);
    // Each is the test user's own, its environment readable while it lives: one read as it
    // ended is gone, a zombie, or running its exit (`exiting`, its environment unknown), not
    // alive with an environment that could not be read.
    const unread = entries.filter(
      ({ state, exiting, env }) => state !== "zombie" && exiting !== true && env === undefined,
    );
    expect(unread).toEqual([]);
  });

  it("stops the remote rank when its ssh client is killed, though it ignores HUP and TERM", async () => {
    const host = open();
    const deployment = newDeployment();
    const rank = await startRank(host, deployment);
    const session = Number((await logged(deployment, /stubborn rank \d+ 1 \S+ (\d+)\n/))[1]);
    process.kill(rank.sshPid, "SIGKILL");
    const ms = await goneWithin(host, [rank.pid], 10_000);
    console.log(`remote rank gone ${ms} ms after its ssh client was killed`);
    // Its BATON_LAUNCHER_PID, the remote sshd session, is gone too: a rank on baton's rank
    // library (or rank.py) that ignored every signal would see its launcher gone.
    await goneWithin(host, [session], 5_000);
  });

  it("stops a remote rank whose mirrored lease stops changing (a frozen or cut-off launcher)", async () => {
    const host = open();
    const deployment = newDeployment();
    const files = remoteFiles(host);
    const paths = deploymentPaths(stateDir, deployment);
    const lease = await holdLease({
      files,
      clock: nodeClock(),
      path: paths.lease,
      deployment,
      pid: process.pid,
      token: "t0ken",
      staleAfterMs: 2_000,
    });
    let released = false;
    try {
      const rank = await spawnRemoteRank({
        host,
        argv: ["/usr/bin/node", STUBBORN],
        env: { RANK: "1", WORLD_SIZE: "2", BATON_DEPLOYMENT: deployment },
        logFile: join(localDir, `${deployment}.log`),
        guardGraceMs: 1_000,
        lease: { path: paths.lease, staleAfterMs: 2_000 },
      });
      ranks.push(rank);
      remotePids.push(rank.pid);
      await logged(deployment, /stubborn rank/);
      // Renewed: alive well past the staleness.
      await sleep(4_000);
      const [alive] = await remoteProcs(host).snapshot([rank.pid], { deployment, stateDir });
      expect(alive?.state).toMatch(/sleeping|running/);
      // The launcher stops renewing, its ssh session still open: the guard stops the rank.
      await lease.release();
      released = true;
      const ms = await goneWithin(host, [rank.pid], 10_000);
      console.log(`remote rank gone ${ms} ms after its lease stopped being renewed (stale 2 s)`);
      // It ignored TERM: the guard's KILL ended it, and its session with it.
      expect(await rank.exited).toEqual({ code: 137, signal: null });
    } finally {
      if (!released) await lease.release();
    }
  });

  it("leaves no remote rank alive when the launcher is killed", async () => {
    const host = open();
    const deployment = newDeployment();
    const launcher = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        LAUNCHER,
        sshd.url,
        sshd.configFile,
        join(localDir, `${deployment}.log`),
        deployment,
        STUBBORN,
      ],
      { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
    );
    localChildren.push(launcher);
    const line = await firstLine(launcher);
    const { pid, sshPid } = JSON.parse(line) as { pid: number; sshPid: number };
    remotePids.push(pid);
    await logged(deployment, /stubborn rank/);
    process.kill(launcher.pid as number, "SIGKILL");
    const ms = await goneWithin(host, [pid], 10_000);
    console.log(`remote rank gone ${ms} ms after its launcher was killed`);
    // The orphaned ssh client ends as well once the remote session closes.
    for (let waited = 0; waited < 5_000; waited += 50) {
      const info = nodeProcs().inspect(sshPid);
      if (info === undefined || info.state === "zombie") break;
      await sleep(50);
    }
    const info = nodeProcs().inspect(sshPid);
    expect(info === undefined || info.state === "zombie").toBe(true);
  });

  it("runs a rank of examples/ranks/rank.py on a remote site: ready marker read remotely, kept alive by the mirrored lease, torn down verified, files cleared", async () => {
    const deployment = newDeployment();
    const site = await openRemoteSite({
      target,
      deployment,
      ssh: { configFile: sshd.configFile },
      launcherPid: process.pid,
      procs: nodeProcs(),
      token: "t0ken",
      leaseStaleMs: 2_000,
      clock: nodeClock(),
    });
    let closed = false;
    try {
      expect(site.stateDir).toBe(stateDir);
      const rank = await site.spawnRank({
        argv: ["/usr/bin/python3", join(ROOT, "examples/ranks/rank.py"), "--ignore-term"],
        env: {
          RANK: "1",
          WORLD_SIZE: "2",
          BATON_DEPLOYMENT: deployment,
          BATON_MARKER_HEARTBEAT_MS: "500",
          BATON_LEASE_STALE_MS: "2000",
        },
        logFile: join(localDir, `${deployment}.log`),
        guardGraceMs: 1_000,
      });
      ranks.push(rank);
      remotePids.push(rank.pid);
      let marker: Marker | undefined;
      for (let waited = 0; marker?.phase !== "ready" && waited < 15_000; waited += 100) {
        marker = await readStateFile(site.files, MARKER_FORMAT, site.paths.marker(1));
        if (marker?.phase !== "ready") await sleep(100);
      }
      expect(marker).toMatchObject({ phase: "ready", pid: rank.pid, deployment });
      // Past the lease's staleness the rank (and its guard) still see a live launcher.
      await sleep(3_000);
      const [alive] = await site.table.snapshot([rank.pid], { deployment, stateDir });
      expect(alive?.state).toMatch(/sleeping|running/);
      const report = await site.tearDown([rank.pid], FAST);
      expect(report.verified).toBe(true);
      expect(report.steps.join("\n")).toMatch(new RegExp(`markers name pids ${rank.pid}`));
      expect(await rank.exited).toEqual({ code: 137, signal: null });
      await site.close({ clear: true });
      closed = true;
      const left = remoteFiles(open());
      // The control files, and then the folder they left empty.
      expect(await left.owner(site.paths.dir)).toBeUndefined();
    } finally {
      if (!closed) await site.close();
    }
  });

  it("removes, as a site closes with clear, the empty deployment folders earlier versions left in the host's state dir, and no folder that is in use, recent or not a folder, in the ssh call that removes its own folder", async () => {
    const [leftover, recent, held, linked] = [1, 2, 3, 4].map(() => newDeployment());
    const host = open();
    // The ssh client baton runs, through a shim that notes each remote command it is given.
    const calls = join(localDir, "remote-calls");
    const shim = sshShim("ssh", `"exec /bin/sh -c"*) echo call >>'${calls}' ;;`);
    const remoteCalls = () =>
      existsSync(calls) ? readFileSync(calls, "utf8").split("\n").length - 1 : 0;
    // An hour old: empty; holding a file; a link to an empty folder, which is not named like a
    // deployment. Just made: empty.
    await host.run(
      [
        `cd '${stateDir}'`,
        `mkdir '${leftover}' '${recent}' '${held}' '${linked} target'`,
        `touch '${held}/lease.json'`,
        `ln -s '${linked} target' '${linked}'`,
        `touch -h -d @$(($(date +%s) - 3600)) '${leftover}' '${held}' '${linked} target' '${linked}'`,
      ].join(" && "),
    );
    const site = await openRemoteSite({
      target,
      deployment: newDeployment(),
      ssh: { configFile: sshd.configFile, program: shim },
      launcherPid: process.pid,
      procs: nodeProcs(),
      token: "t0ken",
      leaseStaleMs: 60_000,
      clock: nodeClock(),
    });
    const opened = remoteCalls();
    await site.close({ clear: true });
    const left = (await host.run(`ls -a '${stateDir}'`)).stdout.toString().split("\n");
    try {
      // The clear's own calls (the lease's read: is it still this launcher's?, the manifest's
      // removal, the folder's listing, the lease's read again right before its removal, the
      // lease's removal, the folder's rmdir) and no more: the leftovers went with the rmdir.
      expect(remoteCalls() - opened).toBe(6);
      expect(left).not.toContain(site.paths.dir.slice(stateDir.length + 1));
      expect(left).not.toContain(leftover);
      expect(left).toEqual(expect.arrayContaining([recent, held, linked, `${linked} target`]));
    } finally {
      await host.run(`rm -rf '${stateDir}/${linked} target'`);
    }
  });

  it("clears a site whose folder, left empty, the host refuses to remove, and names the folder, its host and why", async () => {
    const host = open();
    const deployment = newDeployment();
    const site = await openRemoteSite({
      target,
      deployment,
      ssh: { configFile: sshd.configFile },
      launcherPid: process.pid,
      procs: nodeProcs(),
      token: "t0ken",
      leaseStaleMs: 60_000,
      clock: nodeClock(),
    });
    // The state dir no longer writable by the host's user: the deployment's files in its own
    // folder go, the folder cannot.
    await host.run(`chmod a-w '${stateDir}'`);
    try {
      expect(await site.close({ clear: true })).toEqual({
        dir: `${stateDir}/${deployment}`,
        host: target.spec,
        reason: "Permission denied",
      });
      expect((await host.run(`ls -A '${stateDir}/${deployment}'`)).stdout.toString()).toBe("");
    } finally {
      await host.run(`chmod u+w '${stateDir}'`);
    }
  }, 60_000);

  it("refuses a site of a name another launcher holds in the host's state dir, keeping its lease and markers, and takes over one whose lease is stale", async () => {
    const deployment = newDeployment();
    const siteOf = (token: string) =>
      openRemoteSite({
        target,
        deployment,
        ssh: { configFile: sshd.configFile },
        launcherPid: process.pid,
        procs: nodeProcs(),
        token,
        leaseStaleMs: 60_000,
        clock: nodeClock(),
      });
    const first = await siteOf("first");
    const marker = first.paths.marker(0);
    try {
      await first.files.writeAtomic(marker, "a rank's marker\n");
      const refused = await siteOf("second").catch((thrown: unknown) => thrown);
      expect(refused).toBeInstanceOf(RankGroupError);
      expect(refused).toMatchObject({
        code: "DEPLOYMENT_BLOCKED",
        message: expect.stringMatching(
          new RegExp(
            `^${target.spec}: deployment ${deployment} cannot use the state dir ${stateDir} there: another launcher holds it there \\(pid ${process.pid} on its own machine, its lease ${first.paths.lease} renewed \\d+ ms ago\\)`,
          ),
        ),
      });
      expect(await readStateFile(first.files, LEASE_FORMAT, first.paths.lease)).toMatchObject({
        token: "first",
      });
      expect(await first.files.read(marker)).toBe("a rank's marker\n");
    } finally {
      await first.close();
    }
    // Left renewed two minutes ago (its launcher gone without a clear): taken over, and the
    // markers of that run removed.
    const left = { deployment, pid: 1, token: "left", staleAfterMs: 2_000 };
    await remoteFiles(open()).writeAtomic(
      first.paths.lease,
      encodeStateFile(LEASE_FORMAT, { ...left, renewedAt: Date.now() - 120_000 }),
    );
    const third = await siteOf("third");
    try {
      expect(await readStateFile(third.files, LEASE_FORMAT, third.paths.lease)).toMatchObject({
        token: "third",
      });
      expect(await third.files.read(marker)).toBeUndefined();
    } finally {
      await third.close({ clear: true });
    }
  });

  it("removes nothing on the host as a site closes with clear once another launcher took its mirrored lease over, and says so", async () => {
    const deployment = newDeployment();
    const lines: string[] = [];
    const first = await openRemoteSite({
      target,
      deployment,
      ssh: { configFile: sshd.configFile },
      launcherPid: process.pid,
      procs: nodeProcs(),
      token: "first",
      leaseStaleMs: 60_000,
      clock: nodeClock(),
      logger: pino({ level: "warn" }, { write: (line: string) => lines.push(line) }),
    });
    // Another launcher of the name took the lease there over (as once it went stale) and
    // wrote its rank's marker.
    const other = { deployment, pid: 4242, token: "second", staleAfterMs: 60_000 };
    const marker = first.paths.marker(0);
    await remoteFiles(open()).writeAtomic(
      first.paths.lease,
      encodeStateFile(LEASE_FORMAT, { ...other, renewedAt: Date.now() }),
    );
    await remoteFiles(open()).writeAtomic(marker, "the other launcher's rank's marker\n");
    await first.close({ clear: true });
    const files = remoteFiles(open());
    expect(await readStateFile(files, LEASE_FORMAT, first.paths.lease)).toMatchObject({
      token: "second",
    });
    expect(await files.read(marker)).toBe("the other launcher's rank's marker\n");
    expect(lines.map((line) => JSON.parse(line).msg)).toContain(
      `${target.spec}: another launcher (pid 4242 on its own machine) took over deployment ${deployment} in the state dir ${stateDir} there after this launcher's mirrored lease went stale: its lease, markers and cancel file there were left as they are`,
    );
    await files.remove(marker);
    await files.remove(first.paths.lease);
    await files.removeDir(first.paths.dir);
  });

  it("keeps renewing its mirrored lease while a close clears the host, so a launcher of the same name cannot take the name over mid-clear", async () => {
    const deployment = newDeployment();
    // The first site's ssh client, through a shim that, once the test arms it as the site
    // closes, holds the manifest's removal (the clear's first call; the site's opening removes
    // it too, which the shim once held 5 s as well), noting when it starts, until the test lets
    // it go (or 20 s).
    const armed = join(localDir, "clear-armed");
    const started = join(localDir, "clear-started");
    const letGo = join(localDir, "clear-let-go");
    const shim = sshShim(
      "slow-clear-ssh",
      `*"rm -f"*manifest.json*) if [ -e '${armed}' ]; then touch '${started}'; n=0; while [ ! -e '${letGo}' ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n + 1)); done; fi ;;`,
    );
    const siteOf = (token: string, program?: string) =>
      openRemoteSite({
        target,
        deployment,
        ssh: { configFile: sshd.configFile, ...(program !== undefined && { program }) },
        launcherPid: process.pid,
        procs: nodeProcs(),
        token,
        leaseStaleMs: 1_500,
        clock: nodeClock(),
      });
    const first = await siteOf("first", shim);
    writeFileSync(armed, "");
    const closed = first.close({ clear: true });
    while (!existsSync(started)) await new Promise((resolve) => setTimeout(resolve, 50));
    // Twice the lease's staleness into the clear: a lease released as the clear began is stale.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const second = await siteOf("second").catch((thrown: unknown) => thrown);
    writeFileSync(letGo, "");
    await closed;
    if (!(second instanceof Error)) await (second as { close(): Promise<void> }).close();
    expect(second).toMatchObject({ code: "DEPLOYMENT_BLOCKED" });
  });

  it("reads, lists, writes (atomically, 0600), creates exclusively, removes files and empty folders, tells owners and one directory by two paths in the remote state dir", async () => {
    const host = open();
    const deployment = newDeployment();
    const files = remoteFiles(host);
    const dir = `${stateDir}/${deployment}`;
    expect(await files.list(dir)).toEqual([]);
    expect(await files.read(`${dir}/lease.json`)).toBeUndefined();
    const text = `{"format":"baton.lease/1","note":"it's $HOME \\n é"}\n`;
    await files.writeAtomic(`${dir}/lease.json`, text);
    await files.writeAtomic(`${dir}/.hidden`, new Uint8Array([1, 2, 3]));
    expect(await files.read(`${dir}/lease.json`)).toBe(text);
    expect((await files.list(dir)).sort()).toEqual([".hidden", "lease.json"]);
    // Whole seconds on the remote clock (this host's, here).
    const modifiedAt = await files.modifiedAt(`${dir}/lease.json`);
    expect(Math.abs(modifiedAt! - Date.now())).toBeLessThan(5_000);
    expect(modifiedAt! % 1000).toBe(0);
    expect(await files.modifiedAt(`${dir}/missing.json`)).toBeUndefined();
    const modes = await host.run(`stat -c '%a %U' '${dir}' '${dir}/lease.json'`);
    expect(modes.stdout.toString()).toBe(`700 ${sshd.user}\n600 ${sshd.user}\n`);
    await files.remove(`${dir}/lease.json`);
    await files.remove(`${dir}/lease.json`);
    expect(await files.list(dir)).toEqual([".hidden"]);
    await expect(files.read("relative/path")).rejects.toThrow(/must be absolute/);

    // Exclusive creation: of two at once exactly one creates the file, which keeps its text.
    const claim = `${dir}/claims/claim.json`;
    const created = await Promise.all(
      ["first", "second"].map((who) => files.createExclusive(claim, who)),
    );
    expect(created.filter(Boolean)).toHaveLength(1);
    expect(await files.read(claim)).toBe(created[0] ? "first" : "second");
    expect(await files.createExclusive(claim, "third")).toBe(false);
    expect((await host.run(`stat -c '%a' '${claim}'`)).stdout.toString()).toBe("600\n");

    // Owners, as the remote user sees them: its own files, and root's.
    expect(await files.owner(claim)).toEqual({ uid: expect.any(Number), self: true });
    expect(await files.owner("/etc/passwd")).toEqual({ uid: 0, self: false });
    expect(await files.owner(`${dir}/missing.json`)).toBeUndefined();
    // One directory by two paths (a symlink) is the same file; a missing one is none.
    await host.run(`ln -s '${dir}/claims' '${dir}/linked'`);
    expect(await files.sameFile(`${dir}/linked`, `${dir}/claims`)).toBe(true);
    expect(await files.sameFile(`${dir}/linked`, dir)).toBe(false);
    expect(await files.sameFile(`${dir}/missing`, `${dir}/missing`)).toBe(false);
    await files.remove(`${dir}/linked`);
    // A directory goes only once it is empty.
    expect(await files.removeDir(`${dir}/claims`)).toBe(false);
    await files.remove(claim);
    expect(await files.removeDir(`${dir}/claims`)).toBe(true);
    expect(await files.removeDir(`${dir}/claims`)).toBe(false);
    expect(await files.list(dir)).toEqual([".hidden"]);

    // A remote shell whose files may hold no byte (ulimit -f 0, SIGXFSZ ignored) fails each
    // write with EFBIG once the file is made, as a full disk does with ENOSPC: the file goes
    // again and the error is the write's, not "it existed already".
    const cramped = remoteFiles({
      ...host,
      run: (script, options) => host.run(`trap '' XFSZ; ulimit -f 0\n${script}`, options),
    });
    const lock = `${dir}/graph.lock`;
    await expect(cramped.createExclusive(lock, "held")).rejects.toThrow(
      new RegExp(`cannot create ${lock} \\(exit 1\\): .*File too large`),
    );
    expect(await files.list(dir)).toEqual([".hidden"]);
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
