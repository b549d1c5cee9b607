/**
 * `sshHost`, `remoteStateDir`, `remoteFiles`, `remoteProcs`, `spawnRemoteRank`, `openRemoteSite` and
 * `reapRemoteSite` as a JavaScript caller may call them: what they cannot take is a `ConfigError` naming the argument before any ssh client runs or any
 * control directory is made, where a spec as the target ran `ssh -l undefined`, `options` as
 * one string was read letter by letter, `stateDir: ""` was the remote home itself, and a bad
 * deployment id was refused only after the host had been asked for its home directory, and
 * `reapRemoteSite` connected to the host whatever its pids, clock or timeouts were; a spec
 * given to `remoteFiles` or `remoteProcs` as their host failed at the first call with
 * `host.run is not a function`, and `spawnRemoteRank` without an `env` with `Cannot convert
 * undefined or null to object`.
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import {
  nodeClock,
  nodeProcs,
  type OrphanedSiteOptions,
  openRemoteSite,
  parseRankHost,
  type RemoteRankOptions,
  type RemoteSiteOptions,
  reapRemoteSite,
  remoteFiles,
  remoteProcs,
  remoteStateDir,
  type SshTarget,
  spawnRemoteRank,
  sshHost,
} from "../../src/index.ts";

// Nothing here connects: every call is refused, or needs no answer from the host.
const target = parseRankHost("ssh://alice@127.0.0.1:1") as SshTarget;

describe("sshHost's arguments", () => {
  it.each([
    [
      ["ssh://alice:secret@gpu-2", {}],
      'sshHost: target must be an SshTarget, as parseRankHost("ssh://USER@HOST[:PORT]") gives it, not a string: give parseRankHost(spec)',
    ],
    [
      [{ ...target, host: "-oProxyCommand=touch /tmp/x" }, {}],
      'sshHost: target must be an SshTarget, as parseRankHost("ssh://USER@HOST[:PORT]") gives it, whose spec names its user, host and port, not',
    ],
    [
      [target, { timeout: 5_000 }],
      "sshHost: unknown option timeout; it takes configFile, options,",
    ],
    [[target, { timeoutMs: "5s" }], 'sshHost: timeoutMs must be a positive number of ms, not "5s"'],
    [[target, { multiplex: "no" }], 'sshHost: multiplex must be true or false, not "no"'],
    [[target, { program: "" }], 'sshHost: program must be a path, not ""'],
    [
      [target, { options: "IdentityFile=~/.ssh/lab" }],
      'sshHost: options must be a list of ssh settings, each Key=Value (["IdentityFile=~/.ssh/lab"]), not "IdentityFile=~/.ssh/lab"',
    ],
  ])("refuses what it cannot take with a ConfigError naming it (%#)", (args, message) => {
    const call = () => sshHost(...(args as Parameters<typeof sshHost>));
    expect(call).toThrow(ConfigError);
    expect(call).toThrow(message);
  });

  it("never shows a target given as text: it may hold a password", () => {
    expect(() => sshHost("ssh://alice:secret@gpu-2" as never)).toThrow(
      /^(?!.*secret).*not a string: give parseRankHost\(spec\)$/,
    );
  });

  it("still takes the target parseRankHost gives", async () => {
    const host = sshHost(target, { multiplex: false, timeoutMs: 5_000 });
    expect(host.target).toBe(target);
    await host.close();
  });
});

describe("remoteStateDir's arguments", () => {
  const host = sshHost(target, { multiplex: false });
  it("refuses a host that is no SshHost and an empty state dir, the remote home itself", async () => {
    await expect(remoteStateDir("ssh://alice@gpu-2" as never)).rejects.toThrow(
      'remoteStateDir: host must be an SshHost, such as sshHost(target), not "ssh://alice@gpu-2"',
    );
    await expect(remoteStateDir(host, "")).rejects.toThrow(
      'remoteStateDir: stateDir must be the root state dir on the host, absolute or under the remote home (such as "/scratch/run", or undefined for DEFAULT_STATE_DIR there), not ""',
    );
    await expect(remoteStateDir(host, 5 as never)).rejects.toBeInstanceOf(ConfigError);
  });

  it("still takes an absolute state dir as it is, without asking the host", async () => {
    await expect(remoteStateDir(host, "/scratch/run")).resolves.toBe("/scratch/run");
  });
});

describe("remoteFiles' and remoteProcs' host", () => {
  const host = sshHost(target, { multiplex: false });
  it.each([
    [
      () => remoteFiles("ssh://alice@gpu-2" as never),
      'remoteFiles: host must be an SshHost, such as sshHost(target), not "ssh://alice@gpu-2"',
    ],
    [
      () => remoteFiles(target as never),
      "remoteFiles: host must be an SshHost, such as sshHost(target); it has no run()",
    ],
    [
      () => remoteProcs(undefined as never),
      "remoteProcs: host must be an SshHost, such as sshHost(target), not undefined",
    ],
    [
      () => remoteProcs({ run: host.run } as never),
      "remoteProcs: host must be an SshHost, such as sshHost(target); it has no target.spec",
    ],
    [
      () => remoteProcs(host, { timeout: 5_000 } as never),
      "remoteProcs: unknown option timeout; it takes timeoutMs; did you mean timeoutMs?",
    ],
    [
      () => remoteProcs(host, { timeoutMs: "5s" } as never),
      'remoteProcs: timeoutMs must be a positive number of ms, not "5s"',
    ],
  ])(
    "refuses what it cannot take with a ConfigError at the call, not at its first use (%#)",
    (call, message) => {
      expect(call).toThrow(ConfigError);
      expect(call).toThrow(message);
    },
  );

  it("still takes an SshHost", () => {
    expect(remoteFiles(host).read).toBeTypeOf("function");
    expect(remoteProcs(host, { timeoutMs: 5_000 }).host).toBe(host);
  });
});

describe("spawnRemoteRank's options", () => {
  const logFile = join(tmpdir(), `baton-never-written-${process.pid}.log`);
  const options: RemoteRankOptions = {
    host: sshHost(target, { multiplex: false }),
    argv: ["python3", "train.py"],
    env: { RANK: "0" },
    logFile,
  };
  it.each([
    [
      undefined,
      "spawnRemoteRank: the options must be { host, argv, env, logFile, … }, not undefined",
    ],
    [{ ...options, logfile: "x.log" }, "spawnRemoteRank: unknown option logfile;"],
    [
      { ...options, host: target },
      "spawnRemoteRank: host must be an SshHost, such as sshHost(target); it has no sessionArgv()",
    ],
    [
      { ...options, argv: "python3 train.py" },
      'spawnRemoteRank: argv must be the rank\'s program and its arguments, a list of strings (["python3", "train.py"]), not "python3 train.py"',
    ],
    [{ ...options, argv: [] }, "spawnRemoteRank: argv must be the rank's program"],
    [
      { ...options, env: undefined },
      'spawnRemoteRank: env must be the rank\'s variables, { RANK: "1", … }, not undefined',
    ],
    [
      { ...options, env: { RANK: 0 } },
      "spawnRemoteRank: env.RANK must be text, as every variable's value is, not a number",
    ],
    [
      { ...options, envDefaults: ["OMP_NUM_THREADS=1"] },
      "spawnRemoteRank: envDefaults must be variables set where the remote login has none",
    ],
    [
      { ...options, cwd: "" },
      'spawnRemoteRank: cwd must be the rank\'s directory on the host, or undefined, not ""',
    ],
    [
      { ...options, logFile: undefined },
      "spawnRemoteRank: logFile must be the path of the local file for its output, not undefined",
    ],
    [
      { ...options, startTimeoutMs: "30s" },
      'spawnRemoteRank: startTimeoutMs must be a positive number of ms, not "30s"',
    ],
    [
      { ...options, lease: { path: "lease.json", staleAfterMs: 30_000 } },
      'spawnRemoteRank: lease.path must be the absolute path of the lease on the host, not "lease.json"',
    ],
    [
      { ...options, lease: { path: "/home/alice/lease.json" } },
      "spawnRemoteRank: lease.staleAfterMs must be a positive number of ms (as BATON_LEASE_STALE_MS), not undefined",
    ],
  ])(
    "refuses options %# with a ConfigError before it opens the log or starts ssh",
    (given, message) => {
      const spawn = () => spawnRemoteRank(given as RemoteRankOptions);
      expect(spawn).toThrow(ConfigError);
      expect(spawn).toThrow(message);
      expect(existsSync(logFile)).toBe(false);
    },
  );

  it("never shows the environment, nor a value in it: it holds secrets", () => {
    const spawn = (env: unknown) => () => spawnRemoteRank({ ...options, env } as never);
    expect(spawn("HF_TOKEN=hunter2")).toThrow(/^(?!.*hunter2).*, not a string$/);
    expect(spawn({ HF_TOKEN: 31337 })).toThrow(
      /^(?!.*31337).*env\.HF_TOKEN must be text.*, not a number$/,
    );
  });
});

describe("openRemoteSite's options", () => {
  const options: RemoteSiteOptions = {
    target,
    deployment: "dep-remote0001",
    launcherPid: process.pid,
    token: "t0ken",
    procs: nodeProcs(),
    leaseStaleMs: 30_000,
    clock: nodeClock(),
    ssh: { multiplex: false, connectTimeoutMs: 1_000 },
  };
  it.each([
    [
      undefined,
      "openRemoteSite: the options must be { target, deployment, launcherPid, token, procs, leaseStaleMs, clock, … }, not undefined",
    ],
    [{ ...options, leaseStale: 5 }, "openRemoteSite: unknown option leaseStale;"],
    [
      { ...options, deployment: "../etc" },
      'openRemoteSite: deployment must be a deployment id (1 to 64 letters, digits, "_", "." or "-"), not "../etc"',
    ],
    [
      { ...options, launcherPid: "1" },
      'openRemoteSite: launcherPid must be a whole number of 1 or more, not "1"',
    ],
    [
      { ...options, token: undefined },
      "openRemoteSite: token must be the launcher's instance token, a non-empty string, not undefined",
    ],
    [
      { ...options, leaseStaleMs: "30s" },
      'openRemoteSite: leaseStaleMs must be a positive number of ms (as BATON_LEASE_STALE_MS), not "30s"',
    ],
    [
      { ...options, stateDir: "" },
      "openRemoteSite: stateDir must be the root state dir on the host",
    ],
    [
      { ...options, clock: Date },
      "openRemoteSite: clock must be a Clock, such as nodeClock(); it has no setTimeout()",
    ],
    [{ ...options, target: "ssh://alice@gpu-2" }, "sshHost: target must be an SshTarget"],
  ])("refuses options %# with a ConfigError before it reaches the host", async (given, message) => {
    const open = () => openRemoteSite(given as RemoteSiteOptions);
    await expect(open()).rejects.toBeInstanceOf(ConfigError);
    await expect(open()).rejects.toThrow(message);
  });
});

describe("reapRemoteSite's options", () => {
  const options: OrphanedSiteOptions = {
    target,
    deployment: "dep-remote0001",
    stateDir: "/home/alice/.baton",
    pids: [4711],
    clock: nodeClock(),
    ssh: { multiplex: false, connectTimeoutMs: 1_000 },
  };
  it.each([
    [
      "x",
      'reapRemoteSite: the options must be { target, deployment, stateDir, pids, clock, … }, not "x"',
    ],
    [{ ...options, pid: [1] }, "reapRemoteSite: unknown option pid;"],
    [
      { ...options, deployment: "../etc" },
      'reapRemoteSite: deployment must be a deployment id (1 to 64 letters, digits, "_", "." or "-"), not "../etc"',
    ],
    [
      { ...options, stateDir: "" },
      "reapRemoteSite: stateDir must be the root state dir on the host",
    ],
    [
      { ...options, pids: 4711 },
      "reapRemoteSite: pids must be a list of the ranks' remote pids ([] for none), not 4711",
    ],
    [
      { ...options, pids: [4711, Number.NaN] },
      "reapRemoteSite: pids[1] must be a whole number of 1 or more, not NaN",
    ],
    [
      { ...options, launcherToken: 5 },
      "reapRemoteSite: launcherToken must be the dead launcher's instance token, as its manifest recorded it, or undefined, not 5",
    ],
    [
      { ...options, clock: undefined },
      "reapRemoteSite: clock must be a Clock, such as nodeClock(), not undefined",
    ],
    [{ ...options, logger: {} }, "reapRemoteSite: logger must be a pino logger; it has no debug()"],
    [
      { ...options, timeouts: { termGraceMs: "5s" } },
      'reapRemoteSite: timeouts.termGraceMs must be a number of ms of 0 or more, not "5s"',
    ],
    [
      { ...options, hurry: true },
      "reapRemoteSite: hurry must be an AbortSignal, or undefined, not true",
    ],
    [
      { ...options, onFolderNotRemoved: "log" },
      'reapRemoteSite: onFolderNotRemoved must be a function, (folder) => …, not "log"',
    ],
  ])("refuses options %# with a ConfigError before it reaches the host", async (given, message) => {
    const reap = () => reapRemoteSite(given as OrphanedSiteOptions);
    await expect(reap()).rejects.toBeInstanceOf(ConfigError);
    await expect(reap()).rejects.toThrow(message);
  });
});
