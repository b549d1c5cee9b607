/**
 * `tearDown`, `teardownDeadlineMs` and `markerPids` as a JavaScript caller may call them: what
 * they cannot take is a `ConfigError` naming the argument, before anything is signalled or
 * read, where each was a TypeError from inside (`target.groups.find is not a function`,
 * `paths.marker is not a function`), `NaN`, or a wrong answer (a relative state dir made the
 * deployment's own processes strangers).
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import {
  DEFAULT_TEARDOWN_TIMEOUTS,
  deploymentPaths,
  markerPids,
  nodeClock,
  nodeFiles,
  nodeProcs,
  type RemoteProcs,
  type RemoteTeardownTarget,
  type SshHost,
  tearDown,
  tearDownRemote,
  teardownDeadlineMs,
} from "../../src/index.ts";
import { emptyTeardownTarget } from "../fixtures/emptyTeardownTarget.ts";

const stateDir = "/nonexistent/baton-teardown-arguments";
const deployment = "dep-arguments01";
const target = emptyTeardownTarget(deployment, stateDir);
const ports = { procs: nodeProcs(), clock: nodeClock() };

describe("tearDown's arguments", () => {
  it.each([
    [
      [undefined, ports],
      "tearDown: target must be the rank group to tear down, { deployment, stateDir, groups, pids, sweepCandidates, forbiddenGroups }, not undefined",
    ],
    [
      [{ ...target, stateDir: ".baton/run" }, ports],
      'tearDown: target.stateDir must be the absolute path of the state directory, as the launcher gives its ranks BATON_STATE_DIR (resolve(".baton/run")), not ".baton/run"',
    ],
    [
      [{ ...target, pids: 4711 }, ports],
      "tearDown: target.pids must be a list of process ids ([] for none), not 4711",
    ],
    [
      [{ ...target, pids: [0] }, ports],
      "cannot tear down dep-arguments01: pid 0 is not a process of a rank",
    ],
    [
      [{ ...target, sweepCandidates: undefined }, ports],
      "tearDown: target must be a TeardownTarget, whose sweepCandidates() gives the pids in the deployment's markers (markerPids); it has no sweepCandidates()",
    ],
    [
      [{ ...target, forbiddenGroups: [] }, ports],
      "tearDown: target.forbiddenGroups must be a Set of the groups never to signal (new Set<number>()), not []",
    ],
    [
      [target, nodeProcs()],
      "tearDown: ports.procs must be a Procs, such as nodeProcs(), not undefined",
    ],
    [
      [target, { ...ports, clock: Date }],
      "tearDown: ports.clock must be a Clock, such as nodeClock(); it has no setTimeout()",
    ],
    [
      [target, ports, { termGrace: 5_000 }],
      "tearDown: timeouts: unknown option termGrace; it takes termGraceMs,",
    ],
    [
      [target, ports, { termGraceMs: "5000" }],
      'tearDown: timeouts.termGraceMs must be a number of ms of 0 or more, not "5000"',
    ],
  ])("rejects what it cannot take with a ConfigError naming it (%#)", async (args, message) => {
    const call = () => tearDown(...(args as Parameters<typeof tearDown>));
    await expect(call()).rejects.toBeInstanceOf(ConfigError);
    await expect(call()).rejects.toThrow(message);
  });

  it("still tears down a target it takes (nothing to stop: verified at once)", async () => {
    const report = await tearDown(target, ports, { pollMs: 5 });
    expect(report).toMatchObject({ verified: true, deployment, swept: [], stopped: [] });
  });
});

describe("tearDownRemote's arguments", () => {
  const remote: RemoteTeardownTarget = {
    deployment,
    stateDir,
    pids: [4711],
    sweepCandidates: async () => [],
  };
  /** Round trips to the host: none, for every refusal. */
  let asked = 0;
  const table: RemoteProcs = {
    host: { target: { spec: "ssh://alice@gpu-2" } } as SshHost,
    snapshot: async () => {
      asked++;
      return [];
    },
    signalIfOwned: async () => {
      asked++;
      return new Map();
    },
  };
  const there = { table, clock: nodeClock() };

  it.each([
    [
      [undefined, there],
      "tearDownRemote: target must be the ranks to tear down on one host, { deployment, stateDir, pids, sweepCandidates }, not undefined",
    ],
    [
      [{ ...remote, stateDir: ".baton/run" }, there],
      'tearDownRemote: target.stateDir must be the absolute path of the state directory, as the launcher gives its ranks BATON_STATE_DIR (resolve(".baton/run")), not ".baton/run"',
    ],
    [
      [{ ...remote, pids: "4711" }, there],
      'tearDownRemote: target.pids must be a list of process ids ([] for none), not "4711"',
    ],
    [
      [{ ...remote, pids: [4711, 0] }, there],
      "tearDownRemote: target.pids[1] must be a whole number of 1 or more, not 0",
    ],
    [
      [{ ...remote, sweepCandidates: [] }, there],
      "tearDownRemote: target must be a TeardownTarget, whose sweepCandidates() gives the pids in the deployment's markers (markerPids); it has no sweepCandidates()",
    ],
    [
      [remote, undefined],
      "tearDownRemote: ports must be { table, clock }, such as { table: remoteProcs(host), clock: nodeClock() }, not undefined",
    ],
    [
      [remote, { ...there, table: nodeProcs() }],
      "tearDownRemote: ports.table must be a RemoteProcs, such as remoteProcs(host); it has no snapshot()",
    ],
    [
      [remote, { ...there, table: { ...table, host: "ssh://alice@gpu-2" } }],
      'tearDownRemote: ports.table.host must be an SshHost, such as sshHost(target), not "ssh://alice@gpu-2"',
    ],
    [
      [remote, { ...there, clock: Date }],
      "tearDownRemote: ports.clock must be a Clock, such as nodeClock(); it has no setTimeout()",
    ],
    [
      [remote, { ...there, logger: "pino" }],
      'tearDownRemote: ports.logger must be a pino logger, not "pino"',
    ],
    [
      [remote, { ...there, hurry: true }],
      "tearDownRemote: ports.hurry must be an AbortSignal, or undefined, not true",
    ],
    [
      [remote, there, { pollMs: "1s" }],
      'tearDownRemote: timeouts.pollMs must be a number of ms of 0 or more, not "1s"',
    ],
  ])(
    "rejects what it cannot take with a ConfigError naming it, asking the host nothing (%#)",
    async (args, message) => {
      const call = () => tearDownRemote(...(args as Parameters<typeof tearDownRemote>));
      await expect(call()).rejects.toBeInstanceOf(ConfigError);
      await expect(call()).rejects.toThrow(message);
      expect(asked).toBe(0);
    },
  );

  it("still tears down a target it takes (nothing of it on the host: verified)", async () => {
    const report = await tearDownRemote(remote, there, { pollMs: 5 });
    expect(report).toMatchObject({ verified: true, deployment, stopped: [] });
    expect(asked).toBeGreaterThan(0);
  });
});

describe("teardownDeadlineMs's timeouts", () => {
  it("sums every timeout", () => {
    expect(teardownDeadlineMs({ ...DEFAULT_TEARDOWN_TIMEOUTS, termGraceMs: 30_000 })).toBe(43_000);
  });

  it.each([
    [
      { termGraceMs: 30_000 },
      "teardownDeadlineMs: timeouts.killWaitMs must be a number of ms of 0 or more; give every timeout, such as { ...DEFAULT_TEARDOWN_TIMEOUTS, termGraceMs: 30_000 }, not undefined",
    ],
    [
      undefined,
      "teardownDeadlineMs: timeouts: the options must be an object, { termGraceMs, … }, not undefined",
    ],
    [
      { ...DEFAULT_TEARDOWN_TIMEOUTS, pollMs: -1 },
      "teardownDeadlineMs: timeouts.pollMs must be a number of ms of 0 or more",
    ],
  ])("refuses %o with a ConfigError, where it gave NaN or a TypeError", (timeouts, message) => {
    const call = () => teardownDeadlineMs(timeouts as never);
    expect(call).toThrow(ConfigError);
    expect(call).toThrow(message);
  });
});

describe("markerPids's arguments", () => {
  const paths = deploymentPaths(stateDir, deployment);
  const id = { deployment, stateDir };
  it.each([
    [[{}, paths, id], "markerPids: files must be a Files, such as nodeFiles(); it has no list()"],
    [
      [nodeFiles(), stateDir, id],
      'markerPids: paths must be a DeploymentPaths, such as deploymentPaths(stateDir, deployment), not "/nonexistent/baton-teardown-arguments"',
    ],
    [
      [nodeFiles(), paths, { deployment, stateDir: "run" }],
      'markerPids: id.stateDir must be the absolute path of the state directory, as the launcher gives its ranks BATON_STATE_DIR (resolve(".baton/run")), not "run"',
    ],
    [
      [nodeFiles(), paths, id, nodeClock()],
      "markerPids: procs must be a Procs, such as nodeProcs(), or undefined; it has no inspect()",
    ],
  ])("rejects what it cannot take with a ConfigError naming it (%#)", async (args, message) => {
    const call = () => markerPids(...(args as Parameters<typeof markerPids>));
    await expect(call()).rejects.toBeInstanceOf(ConfigError);
    await expect(call()).rejects.toThrow(message);
  });

  it("still reads a deployment that has no folder as naming nobody", async () => {
    await expect(markerPids(nodeFiles(), paths, id, nodeProcs())).resolves.toEqual([]);
  });
});
