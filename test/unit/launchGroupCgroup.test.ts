/**
 * A contained launch's cgroup does not outlive its deployment: on simulated processes (with
 * cgroups), files and clock, a launch stopped right after it made its cgroup, one stopped a
 * second time (`now`), and one whose removal gave up (the last threads of a killed process
 * still leaving it), which the next launch in the state dir removes; and a launch that comes
 * while a reaper holds its name to remove such a cgroup.
 */
import type { Logger } from "pino";
import { expect, it, vi } from "vitest";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import type { Containment } from "../../src/runtime/ports.ts";
import type { GroupExit, LaunchSpec } from "../../src/runtime/rankGroup.ts";
import { REAPER_CLAIM } from "../../src/runtime/removeStaleCgroups.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { settleOn, simLaunch, simPorts } from "../fixtures/simGroup.ts";

/**
 * One machine: its clock, files and processes, whose containment lists its cgroups as the
 * node port does, and refuses `busyRemovals` removals (as the kernel does while the last
 * threads of a killed process leave); `launch` starts a group of ranks ignoring TERM there.
 */
function machine() {
  const clock = new SimClock();
  const procs = new SimProcs({
    clock,
    cgroups: true,
    programs: { "/bin/rank": () => ({ onTerm: "ignore" }) },
  });
  const base = procs.containment as Containment;
  const made = new Set<string>();
  let busyRemovals = 0;
  const containment: Containment = {
    create: (name) => {
      const cgroup = base.create(name);
      made.add(cgroup);
      onCreate();
      return cgroup;
    },
    members: (cgroup) => base.members(cgroup),
    kill: (cgroup) => base.kill(cgroup),
    remove: (cgroup) => {
      if (busyRemovals > 0 && base.members(cgroup)?.length === 0) {
        busyRemovals--;
        return false;
      }
      return base.remove(cgroup);
    },
    list: () => [...made].filter((cgroup) => base.members(cgroup) !== undefined),
  };
  Object.defineProperty(procs, "containment", { value: containment });
  let onCreate = () => {};
  const files = new SimFiles(new SimEntropy(1)).port(clock.scope());
  const warn = vi.fn();
  const logger = {
    warn,
    info: vi.fn(),
    debug: vi.fn(),
    child: () => logger,
  } as unknown as Logger;
  const launch = (name: string, spec: Partial<LaunchSpec> = {}) =>
    simLaunch({
      worldSize: 2,
      name,
      teardown: { termGraceMs: 600_000 },
      timeouts: { loadTimeoutMs: 60_000 },
      logger,
      ...spec,
      ports: simPorts(clock, { procs, files }),
    });
  const settle = settleOn(clock);
  return {
    clock,
    procs,
    files,
    made,
    launch,
    settle,
    warn,
    exists: (cgroup: string) => containment.members(cgroup) !== undefined,
    whenCreated: (then: () => void) => {
      onCreate = then;
    },
    busyFor: (removals: number) => {
      busyRemovals = removals;
    },
  };
}

it("a launch stopped right after it made its cgroup, before any rank, removes it", async () => {
  const m = machine();
  let stopped: Promise<unknown> | undefined;
  const group = m.launch("early");
  m.whenCreated(() => {
    stopped = group.stop("SIGINT to the launcher");
  });
  const exit = (await m.settle(group.wait())) as GroupExit;
  expect(exit).toMatchObject({ status: "stopped", ranks: [] });
  await stopped;
  const [cgroup] = m.made;
  expect(cgroup).toMatch(/\/baton\/early-[0-9a-f]{12}$/);
  expect(m.exists(cgroup as string)).toBe(false);
});

it("a second stop (now: true) of ranks ignoring TERM removes the cgroup once they are gone", async () => {
  const m = machine();
  const group = m.launch("hurried");
  await m.settle(new Promise((resolve) => m.clock.setTimeout(resolve, 1_000)));
  expect(group.pids()).toHaveLength(2);
  void group.stop("SIGINT to the launcher");
  await m.settle(new Promise((resolve) => m.clock.setTimeout(resolve, 1_000)));
  const report = await m.settle(group.stop("SIGINT to the launcher", { now: true }));
  expect(report).toMatchObject({ verified: true });
  const [cgroup] = m.made;
  expect(m.exists(cgroup as string)).toBe(false);
});

it("a cgroup whose removal gave up is removed by the next launch in the state dir, of any name", async () => {
  const m = machine();
  const group = m.launch("slow");
  await m.settle(new Promise((resolve) => m.clock.setTimeout(resolve, 1_000)));
  // The kernel calls the emptied cgroup busy for longer than the release waits (2 s, every 20 ms).
  m.busyFor(1_000);
  await m.settle(group.stop("SIGINT to the launcher", { now: true }));
  const [cgroup] = [...m.made] as [string];
  expect(m.exists(cgroup)).toBe(true);
  expect(m.warn).toHaveBeenCalledWith(
    { cgroup, waitedMs: 2_000 },
    expect.stringContaining("the next reap or launch in this state dir removes it"),
  );
  m.busyFor(0);
  const next = m.launch("other");
  await m.settle(new Promise((resolve) => m.clock.setTimeout(resolve, 1_000)));
  expect(m.exists(cgroup)).toBe(false);
  await m.settle(next.stop("done", { now: true }));
  expect([...m.made].filter(m.exists)).toEqual([]);
});

it("a launch that finds its name claimed by a reaper removing its old empty cgroup waits the few ms, then starts", async () => {
  const m = machine();
  const lease = "/sim/run/busy/lease.json";
  await m.settle(
    m.files.writeAtomic(
      lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment: "busy",
        pid: m.procs.selfPid,
        token: `${REAPER_CLAIM}${m.procs.selfPid}-0`,
        renewedAt: m.clock.now(),
        staleAfterMs: 30_000,
      }),
    ),
  );
  // The reaper gives the name back, and removes the deployment's directory it made.
  m.clock.setTimeout(
    () => void m.files.remove(lease).then(() => m.files.removeDir("/sim/run/busy")),
    100,
  );
  const group = m.launch("busy");
  await m.settle(new Promise((resolve) => m.clock.setTimeout(resolve, 1_000)));
  expect(group.pids()).toHaveLength(2);
  await m.settle(group.stop("done", { now: true }));
});
