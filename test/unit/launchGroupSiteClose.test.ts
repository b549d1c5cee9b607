/**
 * A launcher keeps its claim on the name (its local lease, renewed) until the files of its
 * deployment on every ssh host are gone: a launch of the same name that comes while a slow
 * host is being cleared is refused, instead of taking over a lease gone stale meanwhile and
 * then losing its new mirrored lease to the old launcher's clear; and a launch that one host
 * refuses the name on (another launcher holds it there) gives back what it claimed here and on
 * the hosts that opened, and fails DEPLOYMENT_BLOCKED; one whose hosts name one machine twice
 * fails as a configuration error naming both, and gives back the same. Simulated processes,
 * files and clock; the ssh host is a second simulated disk behind a stand-in for
 * `remoteSite.ts` (claiming the name there as the real site does) whose close the test holds
 * open.
 */
import { describe, expect, it, vi } from "vitest";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import type { Files, ProcExit } from "../../src/runtime/ports.ts";
import type {
  OrphanedSiteOptions,
  RemoteSite,
  RemoteSiteOptions,
} from "../../src/runtime/remoteSite.ts";
import type { SshHost } from "../../src/runtime/sshHost.ts";
import type { TeardownReport } from "../../src/runtime/tearDown.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { groupEnd, runFor, runUntil, simLaunch, simPorts } from "../fixtures/simGroup.ts";

const HOST = "ssh://alice@gpu-2";
const REMOTE_ROOT = "/home/alice/.baton/run";
const STALE_MS = 3_000;

/** The ssh host as the stand-in sites see it; set by each test. */
const host = vi.hoisted(() => ({
  files: undefined as unknown as Files,
  /** While set, a site's close waits for it before clearing the host's files. */
  holdClose: undefined as Promise<void> | undefined,
  /** Told when a site's close reached the hold. */
  onHeld: (): void => {},
  /** A host spec whose state dir holds the name for another launcher: its site is refused. */
  refused: undefined as string | undefined,
  nextPid: 7_000,
}));

vi.mock("../../src/runtime/remoteSite.ts", async () => {
  const { clearDeployment } = await import("../../src/runtime/clearDeployment.ts");
  const { holdLease } = await import("../../src/runtime/launcherLease.ts");
  const { claimMirroredLease } = await import("../../src/runtime/mirroredLease.ts");
  const { deploymentPaths } = await import("../../src/rank/deploymentPaths.ts");
  const report = (deployment: string, stopped: number[]): TeardownReport => ({
    verified: true,
    deployment,
    elapsedMs: 0,
    steps: [],
    swept: [],
    stopped,
    others: [],
    forbiddenGroups: [],
  });
  return {
    /** The real site's steps on the host's simulated disk: clear, folder, mirrored lease. */
    openRemoteSite: async (options: RemoteSiteOptions): Promise<RemoteSite> => {
      if (options.target.spec === host.refused) {
        const { RankGroupError } = await import("../../src/errors.ts");
        throw new RankGroupError(
          "DEPLOYMENT_BLOCKED",
          `${options.target.spec}: another launcher holds it there`,
          options.deployment,
        );
      }
      const { files } = host;
      const paths = deploymentPaths(REMOTE_ROOT, options.deployment);
      const mirrored = {
        files,
        clock: options.clock,
        path: paths.lease,
        deployment: options.deployment,
        pid: options.launcherPid,
        token: options.token,
        staleAfterMs: options.leaseStaleMs,
      };
      // Every host spec reaches this one disk: two specs name one machine.
      await claimMirroredLease({
        ...mirrored,
        host: options.target.spec,
        stateDir: REMOTE_ROOT,
        procs: options.procs,
      });
      await clearDeployment(files, paths, { keepLease: true });
      const lease = await holdLease(mirrored);
      const ranks = new Map<number, (exit: ProcExit) => void>();
      return {
        host: { target: { spec: options.target.spec } } as SshHost,
        files,
        table: undefined as never,
        stateDir: REMOTE_ROOT,
        paths,
        spawnRank: async () => {
          const pid = host.nextPid++;
          const exited = new Promise<ProcExit>((resolve) => ranks.set(pid, resolve));
          return { host: HOST, pid, sshPid: pid, exited, hangUp: () => {} };
        },
        tearDown: async (pids) => {
          for (const pid of pids) ranks.get(pid)?.({ code: null, signal: "SIGTERM" });
          return report(options.deployment, pids);
        },
        close: async ({ clear = false } = {}) => {
          await lease.release();
          if (host.holdClose !== undefined) {
            host.onHeld();
            await host.holdClose;
          }
          return clear ? (await clearDeployment(files, paths)).folderNotRemoved : undefined;
        },
      };
    },
    /** A dead launcher's ranks there are gone; its files go, as the real reap's do. */
    reapRemoteSite: async (options: OrphanedSiteOptions): Promise<TeardownReport> => {
      await clearDeployment(host.files, deploymentPaths(options.stateDir, options.deployment));
      return report(options.deployment, []);
    },
  };
});

describe("launchGroup closing its ssh hosts", () => {
  it("keeps the name while a host is cleared: a launch of the same name then is refused and no launch loses its mirrored lease", async () => {
    const sim = new SimClock();
    host.files = new SimFiles(new SimEntropy(3)).port(sim.scope());
    const ports = simPorts(sim);
    const launch = () =>
      simLaunch({
        argv: ["/usr/bin/python3", "train.py"],
        hosts: [HOST],
        name: "w6",
        timeouts: { leaseStaleMs: STALE_MS },
        ports,
      });

    const first = launch();
    let launched = false;
    void first.ready.then(
      () => {
        launched = true;
      },
      () => {},
    );
    await runUntil(sim, () => launched || first.pids().length > 0);
    // The first launcher stops, and its host's files are slow to go.
    let release = () => {};
    host.holdClose = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = false;
    host.onHeld = () => {
      held = true;
    };
    const firstEnd = groupEnd(first);
    void first.stop("test over").catch(() => {});
    await runUntil(sim, () => held);
    // Longer than the lease's staleness passes while the host is cleared.
    await runFor(sim, 2 * STALE_MS);
    host.holdClose = undefined;

    const second = launch();
    const secondEnd = groupEnd(second);
    let secondLaunched = false;
    void second.ready.then(
      () => {
        secondLaunched = true;
      },
      () => {},
    );
    await runUntil(sim, () => secondEnd.done || secondLaunched || second.pids().length > 0);
    release();
    await runUntil(sim, () => firstEnd.done);
    const mirrored = await readStateFile(
      host.files,
      LEASE_FORMAT,
      `${REMOTE_ROOT}/w6/lease.json`,
    ).catch(() => undefined);
    if (!secondEnd.done) {
      // Launched: its ranks watch this lease, and it must be there.
      expect(mirrored).toBeDefined();
      await second.stop("test over").catch(() => {});
    }
    await runUntil(sim, () => secondEnd.done);
    expect(firstEnd.error).toBeUndefined();
    // The name was still the first launcher's.
    expect(secondEnd.error).toMatchObject({ code: "DEPLOYMENT_BLOCKED" });
  });

  it("a launch one host refuses the name on fails DEPLOYMENT_BLOCKED and gives back its claim here and on the host that opened", async () => {
    const sim = new SimClock();
    host.files = new SimFiles(new SimEntropy(3)).port(sim.scope());
    host.refused = "ssh://alice@gpu-3";
    const files = new SimFiles(new SimEntropy(1)).port(sim.scope());
    try {
      const group = simLaunch({
        argv: ["/usr/bin/python3", "train.py"],
        worldSize: 2,
        hosts: [HOST, host.refused],
        name: "w7",
        timeouts: { leaseStaleMs: STALE_MS },
        ports: simPorts(sim, { files }),
      });
      const end = groupEnd(group);
      await runUntil(sim, () => end.done);
      expect(end.error).toMatchObject({
        code: "DEPLOYMENT_BLOCKED",
        message:
          "deployment w7: it cannot be launched: ssh://alice@gpu-3: another launcher holds it there. No rank was started.",
      });
      expect(group.pids()).toEqual([]);
      // gpu-2's site opened, claimed the name there, and was cleared by the teardown.
      expect(await host.files.list(`${REMOTE_ROOT}/w7`)).toEqual([]);
      expect(await files.list("/sim/run/w7")).toEqual([]);
    } finally {
      host.refused = undefined;
    }
  });

  it("a launch whose hosts name one machine twice fails, not retryable, naming both, and gives back its claim here and there", async () => {
    const sim = new SimClock();
    host.files = new SimFiles(new SimEntropy(3)).port(sim.scope());
    const files = new SimFiles(new SimEntropy(1)).port(sim.scope());
    const group = simLaunch({
      argv: ["/usr/bin/python3", "train.py"],
      worldSize: 3,
      hosts: [HOST, "ssh://alice@10.1.2.3", HOST],
      name: "w8",
      timeouts: { leaseStaleMs: STALE_MS },
      ports: simPorts(sim, { files }),
    });
    const end = groupEnd(group);
    await runUntil(sim, () => end.done);
    expect(end.error).toMatchObject({
      code: "LAUNCH_FAILED",
      retryable: false,
      message: `deployment w8: it could not be launched: --hosts (hosts) names one machine twice: ${HOST} and ssh://alice@10.1.2.3 reach the same state dir ${REMOTE_ROOT} as the same user, where this launch's lease of deployment w8 was already there. List each machine once in --hosts, under one name. No rank was started.`,
    });
    expect(group.pids()).toEqual([]);
    // The site that claimed the name on the host was cleared by the teardown.
    expect(await host.files.list(`${REMOTE_ROOT}/w8`)).toEqual([]);
    expect(await files.list("/sim/run/w8")).toEqual([]);
  });
});
