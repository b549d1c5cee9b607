import { describe, expect, it } from "vitest";
import { emptyWorkerGroup, type Stray } from "../../src/runtime/emptyWorkerGroup.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";

function world() {
  const clock = new SimClock();
  return { clock, procs: new SimProcs({ clock }) };
}

/** Runs `emptyWorkerGroup` on virtual time until it resolves. */
async function empty(pgid: number, clock: SimClock, procs: SimProcs): Promise<Stray[]> {
  let result: Stray[] | undefined;
  void emptyWorkerGroup(pgid, procs, clock, 2_000).then((strays) => {
    result = strays;
  });
  for (let i = 0; result === undefined; i++) {
    if (i > 1_000) throw new Error("emptyWorkerGroup did not resolve");
    await new Promise((resolve) => setImmediate(resolve));
    if (result === undefined) clock.fireNext();
  }
  return result;
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
      { pid: polite.pid, program: "node", ended: "SIGTERM" },
      { pid: deaf.pid, program: "python", ended: "SIGKILL" },
      { pid: stuck.pid, program: "dd", ended: "still running" },
    ]);
    expect(
      procs.signals
        .filter((s) => s.signal !== 0)
        .map(({ at, target, id, signal }) => ({ at: at - start, target, id, signal })),
    ).toEqual([
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
      { pid: child.pid, program: "node", ended: "SIGTERM" },
    ]);
    expect(procs.signals.filter((s) => s.signal !== 0).map((s) => s.signal)).toEqual(["SIGTERM"]);
    expect(clock.now() - start).toBeLessThan(200);
  });
});
