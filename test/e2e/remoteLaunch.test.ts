/**
 * `baton launch --hosts …` as a user runs it, with ranks here and on a real OpenSSH server on
 * 127.0.0.1 (test/fixtures/sshd.ts), and `baton reap --ssh-config`. Every process a test
 * starts is stopped by its pid when it ends: the baton processes, then what is left of the
 * test's deployments on the ssh host, over ssh, after the host checked each pid carries it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import { remoteFiles } from "../../src/runtime/remoteFiles.ts";
import { remoteProcs } from "../../src/runtime/remoteProcs.ts";
import { type SshHost, sshHost } from "../../src/runtime/sshHost.ts";
import type { SshTarget } from "../../src/runtime/sshTarget.ts";
import { type BatonProcess, ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { ranksReady } from "../fixtures/ranksReady.ts";
import { readManifest } from "../fixtures/readManifest.ts";
import { killRemoteLeftovers } from "../fixtures/remoteLeftovers.ts";
import { sshdTestsRun, startSshdSite, type TestSshd } from "../fixtures/sshd.ts";

const RANK = ["/usr/bin/python3", join(ROOT, "examples/ranks/rank.py")];

const available = sshdTestsRun("remoteLaunch.test.ts");

describe.skipIf(!available)("baton launch --hosts", () => {
  let sshd: TestSshd;
  let target: SshTarget;
  let remoteRoot: string;
  let counter = 0;
  let deployments: string[] = [];
  let dirs: string[] = [];

  const newDeployment = (): string => {
    const deployment = `rl${process.pid}t${++counter}`;
    deployments.push(deployment);
    return deployment;
  };
  const stateDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "baton-remote-launch-"));
    dirs.push(dir);
    return dir;
  };
  /**
   * Starts `baton launch` of rank.py on `hosts` with the test sshd's ssh config, in a new
   * state dir under a new deployment name: `flags` go before `--`, `rankArgs` after rank.py.
   */
  const launchRanks = (
    hosts: string,
    flags: string[],
    rankArgs: string[],
  ): { dir: string; name: string; launcher: BatonProcess } => {
    const dir = stateDir();
    const name = newDeployment();
    const launcher = startBaton([
      "launch",
      "--hosts",
      hosts,
      "--ssh-config",
      sshd.configFile,
      "--state-dir",
      dir,
      "--name",
      name,
      ...flags,
      "--",
      ...RANK,
      ...rankArgs,
    ]);
    return { dir, name, launcher };
  };
  /** Starts `baton launch` of `argv` as one rank on the ssh host, in a new state dir. */
  const launchOnSshHost = (name: string, argv: string[]): BatonProcess =>
    startBaton([
      "launch",
      "--hosts",
      sshd.url,
      "--ssh-config",
      sshd.configFile,
      "--state-dir",
      stateDir(),
      "--name",
      name,
      "--",
      ...argv,
    ]);
  /** Runs `check` on a new connection to the ssh host, closed after it. */
  const onSshHost = async (check: (there: SshHost) => Promise<void>): Promise<void> => {
    const there = sshHost(target, { configFile: sshd.configFile });
    try {
      await check(there);
    } finally {
      await there.close();
    }
  };

  beforeAll(async () => {
    ({ sshd, target, remoteRoot } = await startSshdSite());
  });

  afterAll(async () => {
    await sshd?.stop();
  });

  afterEach(async () => {
    stopBatons();
    const cleaner = sshHost(target, { configFile: sshd.configFile, multiplex: false });
    try {
      await killRemoteLeftovers(cleaner, deployments);
      const remote = deployments.map((dep) => `'${remoteRoot}/${dep}'`).join(" ");
      await cleaner.run(`rm -rf ${remote}; exit 0`);
    } finally {
      await cleaner.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      deployments = [];
      dirs = [];
    }
  });

  it.each([
    { exit: 0, said: "a warning: line", ended: "baton launch: every rank exited 0\n" },
    { exit: 3, said: "a warning in the log", ended: "rank 0 exited with code 3" },
  ])(
    "exits with its rank's code though the host refuses to remove the deployment's folder, naming it, the host, why and what to do in $said",
    async ({ exit, ended }) => {
      const name = newDeployment();
      // A state dir of its own on the host: the rank makes it unwritable, which the other
      // tests' launches on this host, in ~/.baton/run, must not meet.
      const root = `${remoteRoot}-refuses-${name}`;
      try {
        const result = await startBaton([
          "launch",
          "--hosts",
          sshd.url,
          "--ssh-config",
          sshd.configFile,
          "--state-dir",
          stateDir(),
          "--remote-state-dir",
          root,
          "--name",
          name,
          "--",
          "/bin/sh",
          "-c",
          // The host's state dir is no longer writable: the deployment's folder there stays.
          `chmod a-w "$BATON_STATE_DIR"; exit ${exit}`,
        ]).exit;
        expect(result.code).toBe(exit);
        const warning = `the empty folder ${root}/${name} on ${sshd.url} of the ended deployment was not removed (Permission denied); nothing needs it any more: once what refused it is fixed (the folder above it not writable by you, a symbolic link or a mount point in its place), remove it with \`rmdir ${root}/${name}\` there`;
        // A group that failed has no exit to carry it: the log says it, at warn (stderr's level),
        // in a line as on a terminal though stderr is a pipe, its fields after it.
        expect(result.stderr).toContain(
          exit === 0
            ? `baton launch: warning: ${warning}\n`
            : `] WARN: ${warning} {"deployment":"${name}",`,
        );
        expect(result.stderr).toContain(ended);
      } finally {
        await onSshHost(
          async (there) => void (await there.run(`chmod u+w '${root}' && rm -rf '${root}'`)),
        );
      }
    },
    60_000,
  );

  it("runs ranks here and on the ssh host (HOST*COUNT) and exits 0 when every rank does", async () => {
    const { dir, name, launcher } = launchRanks(
      `local,${sshd.url}*2`,
      ["--master-addr", "127.0.0.1"],
      ["--steps", "3", "--step-ms", "20"],
    );
    const result = await launcher.exit;
    expect(result.stderr).toMatch(new RegExp(`deployment ${name}: 3 ranks of .*rank\\.py`));
    expect(result.code).toBe(0);
    for (const rank of [0, 1, 2]) {
      expect(readFileSync(join(dir, name, `rank-${rank}.log`), "utf8")).toMatch(
        new RegExp(`rank ${rank}: `),
      );
    }
  }, 60_000);

  it("SIGTERM stops the ranks on both hosts, verified, even one that ignores TERM, and exits 143", async () => {
    const { dir, name, launcher } = launchRanks(
      `local,${sshd.url}`,
      ["--world", "2", "--grace-ms", "300"],
      ["--ignore-term", "--step-ms", "20"],
    );
    await ranksReady(launcher, 2);
    const manifest = await readManifest(dir, name);
    const remote = manifest?.ranks.find((rank) => rank.host === sshd.url);
    expect(remote?.stateDir).toBe(remoteRoot);
    launcher.child.kill("SIGTERM");
    const result = await launcher.exit;
    expect(result.stderr).toContain("stopped; every rank is gone");
    expect(result.code).toBe(143);
    await onSshHost(async (there) => {
      const [proc] = await remoteProcs(there).snapshot([remote?.pid as number], {
        deployment: name,
        stateDir: remoteRoot,
      });
      expect(proc === undefined || proc.state === "zombie").toBe(true);
      expect(await remoteFiles(there).list(deploymentPaths(remoteRoot, name).dir)).toEqual([]);
    });
  }, 60_000);

  it("after the launcher is SIGKILLed, baton reap --ssh-config removes what is left on both hosts", async () => {
    const { dir, name, launcher } = launchRanks(`local,${sshd.url}`, [], ["--step-ms", "20"]);
    await ranksReady(launcher, 2);
    const controlDirs = () =>
      readdirSync(tmpdir()).filter((entry) => entry.startsWith(`baton-ssh-${launcher.child.pid}-`));
    expect(controlDirs()).toHaveLength(1);
    launcher.child.kill("SIGKILL");
    await launcher.exit;
    const reap = await startBaton([
      "reap",
      "--state-dir",
      dir,
      "--ssh-config",
      sshd.configFile,
      "--grace-ms",
      "300",
      "--json",
    ]).exit;
    expect(reap.code).toBe(0);
    const report = JSON.parse(reap.stdout) as { reaped: { deployment: string }[] };
    expect(report.reaped.map((entry) => entry.deployment)).toEqual([name]);
    await onSshHost(async (there) => {
      expect(await remoteFiles(there).list(deploymentPaths(remoteRoot, name).dir)).toEqual([]);
      const id = { deployment: name, stateDir: remoteRoot };
      expect(await remoteProcs(there).snapshot([], id, { scan: true })).toEqual([]);
    });
    // The dead launcher's ssh control dir, and the master that served it, went with the reap.
    expect(controlDirs()).toEqual([]);
  }, 60_000);

  it("exits 127, as a shell does, when the rank's program is not on the ssh host", async () => {
    const result = await launchOnSshHost(newDeployment(), ["/nonexistent/train"]).exit;
    // The host and "could not be started" once each.
    expect(result.stderr).toContain(
      `rank 0 of 1 could not be started: ${sshd.url}: /nonexistent/train: not found on `,
    );
    expect(result.code).toBe(127);
  }, 60_000);

  it("refuses a --name another launcher holds in the ssh host's state dir with DEPLOYMENT_BLOCKED (exit 1), its lease left there", async () => {
    const name = newDeployment();
    const lease = deploymentPaths(remoteRoot, name).lease;
    const other = encodeStateFile(LEASE_FORMAT, {
      deployment: name,
      pid: 4242,
      token: "another launcher",
      renewedAt: Date.now(),
      staleAfterMs: 600_000,
    });
    await onSshHost((there) => remoteFiles(there).writeAtomic(lease, other));
    const result = await launchOnSshHost(name, RANK).exit;
    expect(result.stderr).toContain(
      `deployment ${name}: it cannot be launched: ${sshd.url}: deployment ${name} cannot use the state dir ${remoteRoot} there: another launcher holds it there (pid 4242 on its own machine`,
    );
    expect(result.stderr).toContain("No rank was started. [DEPLOYMENT_BLOCKED]");
    expect(result.code).toBe(1);
    await onSshHost(async (there) => {
      expect(await remoteFiles(there).read(lease)).toBe(other);
    });
  }, 60_000);

  it("refuses a host list that does not match the world size (exit 2)", async () => {
    const result = await startBaton([
      "launch",
      "--world",
      "3",
      "--hosts",
      `local,${sshd.url}`,
      "--",
      ...RANK,
    ]).exit;
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--hosts places 2 ranks but --world is 3/);
  }, 30_000);
});
