import { describe, expect, it } from "vitest";
import {
  emptyWorkerGroup,
  type LiveRemains,
  type Stray,
  type WorkerRemains,
} from "../../src/runtime/emptyWorkerGroup.ts";
import type { Procs } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";

function world(cgroups = false) {
  const clock = new SimClock();
  return { clock, procs: new SimProcs({ clock, cgroups }) };
}

/** Runs `emptyWorkerGroup` on virtual time until it resolves. */
async function empty(
  remains: number | WorkerRemains,
  clock: SimClock,
  procs: Procs,
  seen?: LiveRemains,
): Promise<Stray[]> {
  let result: { strays: Stray[] } | { error: unknown } | undefined;
  const target = typeof remains === "number" ? { pgid: remains } : remains;
  emptyWorkerGroup(target, procs, clock, 2_000, seen).then(
    (strays) => {
      result = { strays };
    },
    (error: unknown) => {
      result = { error };
    },
  );
  for (let i = 0; result === undefined; i++) {
    if (i > 1_000) throw new Error("emptyWorkerGroup did not resolve");
    await new Promise((resolve) => setImmediate(resolve));
    if (result === undefined) clock.fireNext();
  }
  if ("error" in result) throw result.error;
  return result.strays;
}

/** The signals sent since `start` (not the probes, signal 0), and when. */
function sent(procs: SimProcs, start: number) {
  return procs.signals
    .filter((s) => s.signal !== 0)
    .map(({ at, target, id, signal }) => ({ at: at - start, target, id, signal }));
}

describe("emptyWorkerGroup", () => {
  it("probes the group once and signals nothing when the worker left no process in it", async () => {
    const { clock, procs } = world();
    const worker = procs.start({ argv: ["node", "baton", "worker"], newGroup: true });
    const other = procs.start({ argv: ["sleep", "100"], newGroup: true });
    procs.signal(worker.pid, "SIGKILL");
    await worker.exited;
    procs.signals.length = 0;

    expect(await empty(worker.pid, clock, procs)).toEqual([]);
    expect(
      procs.signals.map(({ target, id, signal, outcome }) => ({ target, id, signal, outcome })),
    ).toEqual([{ target: "group", id: worker.pid, signal: 0, outcome: "ESRCH" }]);
    expect(procs.inspect(other.pid)?.state).toBe("sleeping");
  });

  it("names a process that was running its exit at the first look by the kernel's name for it, not `?`", async () => {
    const { clock, procs } = world();
    const worker = procs.start({ argv: ["sh", "-c", "wrapper"], newGroup: true, exitAfterMs: 0 });
    const helper = procs.start({ ppid: worker.pid, pgid: worker.pid, argv: ["python3", "x.py"] });
    while (clock.nextDue() === 0) clock.fireNext();
    // The pool's first look (the exit line's) caught it as it ran its exit: arguments gone.
    const info = procs.inspect(helper.pid)!;
    const seen = { group: [{ ...info, argv: [], exiting: true, name: "python3" }], escaped: [] };
    expect(await empty(worker.pid, clock, procs, seen)).toEqual([
      { pid: helper.pid, program: "python3, exiting", ended: "SIGTERM", escaped: false },
    ]);
  });

  it("sends SIGTERM to the group, SIGKILL 2 s later, and says how each process ended", async () => {
    const { clock, procs } = world();
    const worker = procs.start({ argv: ["sh", "-c", "wrapper"], newGroup: true });
    const inGroup = { ppid: worker.pid, pgid: worker.pid };
    const polite = procs.start({ ...inGroup, argv: ["node", "baton"], termExitMs: 300 });
    const deaf = procs.start({ ...inGroup, argv: ["python", "-c", "x"], onTerm: "ignore" });
    // Asleep in D past its SIGKILL's wait: still there when the wait ends.
    const stuck = procs.start({
      ...inGroup,
      argv: ["dd"],
      onTerm: "ignore",
      diskSleep: { afterMs: 0, forMs: 60_000 },
    });
    const zombie = procs.start({ ...inGroup, argv: ["true"], exitAfterMs: 0, zombieMs: 60_000 });
    const outsider = procs.start({ argv: ["sleep", "100"], onTerm: "ignore", newGroup: true });
    while (clock.nextDue() === 0) clock.fireNext(); // the zombie exits, dd falls asleep
    expect(procs.inspect(zombie.pid)?.state).toBe("zombie");
    procs.signal(worker.pid, "SIGKILL");
    await worker.exited;
    procs.signals.length = 0;
    const start = clock.now();

    expect(await empty(worker.pid, clock, procs)).toEqual([
      { pid: polite.pid, program: "node", ended: "SIGTERM", escaped: false },
      { pid: deaf.pid, program: "python", ended: "SIGKILL", escaped: false },
      { pid: stuck.pid, program: "dd", ended: "still running", escaped: false },
    ]);
    expect(sent(procs, start)).toEqual([
      { at: 0, target: "group", id: worker.pid, signal: "SIGTERM" },
      { at: 2_000, target: "group", id: worker.pid, signal: "SIGKILL" },
    ]);
    expect(clock.now() - start).toBe(4_000);
    expect(procs.inspect(deaf.pid)).toBeUndefined();
    expect(procs.inspect(outsider.pid)?.state).toBe("sleeping");
  });

  it("sends no SIGKILL when SIGTERM ended them all, and returns as soon as they are gone", async () => {
    const { clock, procs } = world();
    const worker = procs.start({ argv: ["sh"], newGroup: true });
    const child = procs.start({ ppid: worker.pid, argv: ["node"], termExitMs: 50 });
    procs.signal(worker.pid, "SIGKILL");
    await worker.exited;
    procs.signals.length = 0;
    const start = clock.now();

    expect(await empty(worker.pid, clock, procs)).toEqual([
      { pid: child.pid, program: "node", ended: "SIGTERM", escaped: false },
    ]);
    expect(procs.signals.filter((s) => s.signal !== 0).map((s) => s.signal)).toEqual(["SIGTERM"]);
    expect(clock.now() - start).toBeLessThan(200);
  });

  it("stops, through the worker's cgroup, what left its group, and leaves other cgroups alone", async () => {
    const { clock, procs } = world(true);
    const containment = procs.containment!;
    const cgroup = containment.create("workers-run@1.1/local-1");
    const worker = procs.start({ argv: ["node", "baton", "worker"], newGroup: true, cgroup });
    const inGroup = procs.start({ ppid: worker.pid, argv: ["sh"], termExitMs: 50 });
    // A handler's child in a session of its own, deaf to SIGTERM; and one that obeys it.
    const deaf = procs.start({
      ppid: worker.pid,
      argv: ["python"],
      newGroup: true,
      onTerm: "ignore",
    });
    const polite = procs.start({ ppid: worker.pid, argv: ["ssh"], newGroup: true, termExitMs: 50 });
    const neighbour = containment.create("workers-run@1.1/local-2");
    const other = procs.start({
      argv: ["node"],
      newGroup: true,
      onTerm: "ignore",
      cgroup: neighbour,
    });
    procs.signal(worker.pid, "SIGKILL");
    await worker.exited;
    procs.signals.length = 0;
    const start = clock.now();

    expect(await empty({ pgid: worker.pid, cgroup }, clock, procs)).toEqual([
      { pid: inGroup.pid, program: "sh", ended: "SIGTERM", escaped: false },
      { pid: deaf.pid, program: "python", ended: "SIGKILL", escaped: true },
      { pid: polite.pid, program: "ssh", ended: "SIGTERM", escaped: true },
    ]);
    expect(sent(procs, start)).toEqual([
      { at: 0, target: "group", id: worker.pid, signal: "SIGTERM" },
      { at: 0, target: "pid", id: deaf.pid, signal: "SIGTERM" },
      { at: 0, target: "pid", id: polite.pid, signal: "SIGTERM" },
      { at: 2_000, target: "cgroup", id: deaf.pid, signal: "SIGKILL" },
    ]);
    expect(containment.members(cgroup)).toEqual([]);
    expect(procs.inspect(other.pid)?.state).toBe("sleeping");
  });

  it("SIGKILLs by pid what left its group where the kernel cannot kill a cgroup whole", async () => {
    const { clock, procs } = world(true);
    const base = procs.containment!;
    // Before Linux 5.14 there is no cgroup.kill: the port's kill says so with false.
    Object.defineProperty(procs, "containment", { value: { ...base, kill: () => false } });
    const cgroup = base.create("workers-run@1.1/local-1");
    const worker = procs.start({ argv: ["node", "baton", "worker"], newGroup: true, cgroup });
    const deaf = procs.start({
      ppid: worker.pid,
      argv: ["python"],
      newGroup: true,
      onTerm: "ignore",
    });
    procs.signal(worker.pid, "SIGKILL");
    await worker.exited;
    procs.signals.length = 0;
    const start = clock.now();

    expect(await empty({ pgid: worker.pid, cgroup }, clock, procs)).toEqual([
      { pid: deaf.pid, program: "python", ended: "SIGKILL", escaped: true },
    ]);
    expect(sent(procs, start)).toEqual([
      { at: 0, target: "pid", id: deaf.pid, signal: "SIGTERM" },
      { at: 2_000, target: "pid", id: deaf.pid, signal: "SIGKILL" },
    ]);
  });

  it("reads the cgroup once and signals nothing when the worker left nothing", async () => {
    const { clock, procs } = world(true);
    const cgroup = procs.containment!.create("workers-run@1.1/local-1");
    const worker = procs.start({ argv: ["node", "baton", "worker"], newGroup: true, cgroup });
    procs.signal(worker.pid, "SIGKILL");
    await worker.exited;
    procs.signals.length = 0;

    expect(await empty({ pgid: worker.pid, cgroup }, clock, procs)).toEqual([]);
    expect(procs.signals.filter((s) => s.signal !== 0)).toEqual([]);
  });

  it("refuses a cgroup that holds this process, signalling nothing, and says what to do", async () => {
    const { clock, procs } = world(true);
    const cgroup = procs.containment!.create("workers-run@1.1/local-1");
    // A coordinator that moved into its worker's cgroup to start it, and never moved back.
    const coordinator = procs.start({ argv: ["node", "baton", "run"], newGroup: true, cgroup });
    const worker = procs.start({ argv: ["node", "baton", "worker"], newGroup: true, cgroup });
    const child = procs.start({ argv: ["sleep", "100"], newGroup: true, cgroup });
    procs.signal(worker.pid, "SIGKILL");
    await worker.exited;
    procs.signals.length = 0;
    const asCoordinator: Procs = {
      selfPid: coordinator.pid,
      containment: procs.containment,
      spawn: (options) => procs.spawn(options),
      signal: (pid, signal) => procs.signal(pid, signal),
      signalGroup: (pgid, signal) => procs.signalGroup(pgid, signal),
      inspect: (pid) => procs.inspect(pid),
      list: () => procs.list(),
      environ: (pid) => procs.environ(pid),
    };

    const refused = await empty({ pgid: worker.pid, cgroup }, clock, asCoordinator).then(
      (strays) => strays,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({
      code: "CGROUP_HOLDS_THIS_PROCESS",
      message: expect.stringMatching(
        new RegExp(
          `^refusing to stop the processes in the cgroup ${cgroup}: this process \\(pid ${coordinator.pid}\\) is in it too .* Nothing was signalled\\. Move this process back`,
        ),
      ),
    });
    expect(sent(procs, 0)).toEqual([]);
    expect(procs.inspect(coordinator.pid)?.state).toBe("sleeping");
    expect(procs.inspect(child.pid)?.state).toBe("sleeping");
  });
});
