import { describe, expect, it } from "vitest";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";

function world() {
  const clock = new SimClock();
  return { clock, procs: new SimProcs({ clock }) };
}

const drain = (clock: SimClock) => {
  while (clock.fireNext());
};

describe("SimProcs", () => {
  it("starts processes in new or inherited groups, with argv and environment", () => {
    const { procs } = world();
    const leader = procs.start({ argv: ["python", "train.py"], env: { A: "1" }, newGroup: true });
    const child = procs.start({ argv: ["worker"], ppid: leader.pid, env: { A: "1" } });
    expect(procs.inspect(leader.pid)).toEqual({
      pid: leader.pid,
      ppid: procs.selfPid,
      pgid: leader.pid,
      state: "sleeping",
      argv: ["python", "train.py"],
    });
    expect(procs.inspect(child.pid)?.pgid).toBe(leader.pid);
    expect(procs.environ(child.pid)).toEqual({ A: "1" });
    expect(procs.list().map((info) => info.pid)).toEqual([1, procs.selfPid, leader.pid, child.pid]);
  });

  it("exits on TERM after its delay, or ignores TERM and needs as many KILLs as told", async () => {
    const { clock, procs } = world();
    const polite = procs.start({ argv: ["a"], newGroup: true, termExitMs: 500 });
    const stubborn = procs.start({ argv: ["b"], newGroup: true, onTerm: "ignore", killsToDie: 2 });
    expect(procs.signal(polite.pid, "SIGTERM")).toBe("ok");
    expect(procs.signal(stubborn.pid, "SIGTERM")).toBe("ok");
    clock.fireNext();
    expect(clock.now()).toBe(500);
    expect(await polite.exited).toEqual({ code: null, signal: "SIGTERM" });
    expect(procs.inspect(stubborn.pid)?.state).toBe("sleeping");
    procs.signalGroup(stubborn.pid, "SIGKILL");
    expect(procs.inspect(stubborn.pid)?.state).toBe("sleeping");
    procs.signalGroup(stubborn.pid, "SIGKILL");
    expect(procs.inspect(stubborn.pid)).toBeUndefined();
    expect(procs.signal(stubborn.pid, 0)).toBe("ESRCH");
  });

  it("holds signals during disk sleep and acts on them when it wakes", async () => {
    const { clock, procs } = world();
    const stuck = procs.start({ argv: ["dd"], diskSleep: { afterMs: 0, forMs: 1000 } });
    clock.fireNext();
    expect(procs.inspect(stuck.pid)?.state).toBe("disk-sleep");
    procs.signal(stuck.pid, "SIGKILL");
    expect(procs.inspect(stuck.pid)?.state).toBe("disk-sleep");
    drain(clock);
    expect(clock.now()).toBe(1000);
    expect(await stuck.exited).toEqual({ code: null, signal: "SIGKILL" });
  });

  it("keeps a zombie until it is reaped, with no argv and no environment", () => {
    const { clock, procs } = world();
    const dying = procs.start({ argv: ["x"], env: { A: "1" }, zombieMs: 300, exitAfterMs: 100 });
    drain(clock);
    expect(procs.inspect(dying.pid)).toBeUndefined();
    const again = procs.start({ argv: ["x"], zombieMs: 300, exitAfterMs: 100 });
    clock.fireNext();
    expect(procs.inspect(again.pid)).toMatchObject({ state: "zombie", argv: [] });
    expect(procs.environ(again.pid)).toBeUndefined();
  });

  it("lists its processes in pid order, zombies included, as one array until one is started or reaped", () => {
    const { clock, procs } = world();
    const first = procs.start({ argv: ["a"], zombieMs: 300, exitAfterMs: 100 });
    const listed = procs.processes();
    expect(listed.map((p) => p.pid)).toEqual([1, procs.selfPid, first.pid]);
    expect(procs.processes()).toBe(listed);
    clock.fireNext();
    expect(procs.processes()).toBe(listed);
    expect(listed.at(-1)?.state).toBe("zombie");
    const second = procs.start({ argv: ["b"] });
    const withSecond = procs.processes();
    expect(withSecond).not.toBe(listed);
    expect(withSecond.map((p) => p.pid)).toEqual([1, procs.selfPid, first.pid, second.pid]);
    clock.fireNext();
    expect(procs.processes().map((p) => p.pid)).toEqual([1, procs.selfPid, second.pid]);
  });

  it("leaves its group with setsid; a group leader cannot", () => {
    const { clock, procs } = world();
    const leader = procs.start({ argv: ["rank"], newGroup: true, setsidAfterMs: 10 });
    const child = procs.start({ argv: ["child"], ppid: leader.pid, setsidAfterMs: 10 });
    drain(clock);
    expect(procs.inspect(leader.pid)?.pgid).toBe(leader.pid);
    expect(procs.inspect(child.pid)?.pgid).toBe(child.pid);
  });

  it("keeps cgroups as Linux does: children stay in, whatever group or environment they take", async () => {
    const clock = new SimClock();
    const procs = new SimProcs({
      clock,
      cgroups: true,
      programs: {
        rank: () => ({
          main(self) {
            self.fork({
              argv: ["helper"],
              env: { ONLY: "this" },
              clearEnv: true,
              setsidAfterMs: 10,
            });
          },
        }),
      },
    });
    expect(new SimProcs({ clock }).containment).toBeUndefined();
    const containment = procs.containment!;
    const cgroup = containment.create("dep-a");
    expect(containment.members(cgroup)).toEqual([]);
    const rank = procs.spawn({
      argv: ["rank"],
      env: { BATON_DEPLOYMENT: "dep-a" },
      newGroup: true,
      cgroup,
    });
    const outside = procs.start({ argv: ["sleep"], newGroup: true });
    drain(clock);
    const [, helper] = containment.members(cgroup)!;
    expect(containment.members(cgroup)).toEqual([rank.pid, helper]);
    expect(procs.inspect(helper!)?.pgid).toBe(helper);
    expect(procs.environ(helper!)).toEqual({ ONLY: "this" });
    expect(containment.members(cgroup)).not.toContain(outside.pid);
    expect(containment.remove(cgroup)).toBe(false);

    procs.signal(helper!, "SIGKILL");
    procs.signal(rank.pid, "SIGKILL");
    await rank.exited;
    expect(containment.members(cgroup)).toEqual([]);
    expect(containment.remove(cgroup)).toBe(true);
    expect(containment.members(cgroup)).toBeUndefined();
    expect(() => procs.spawn({ argv: ["rank"], cgroup })).toThrow(/no cgroup/);
  });

  it("hands a freed pid to a new program, but not while it is still a group's id", () => {
    const { procs } = world();
    const leader = procs.start({ argv: ["rank"], newGroup: true });
    procs.start({ argv: ["child"], ppid: leader.pid, onTerm: "ignore" });
    procs.signal(leader.pid, "SIGKILL");
    expect(() => procs.start({ argv: ["sleep"], pid: leader.pid })).toThrow(/in use/);
    procs.signalGroup(leader.pid, "SIGKILL");
    const reused = procs.start({ argv: ["sleep"], pid: leader.pid, label: "foreign" });
    expect(reused.pid).toBe(leader.pid);
    expect(procs.process(leader.pid)?.label).toBe("foreign");
  });

  it("answers EPERM for another user's process and group, and hides its environment", () => {
    const { procs } = world();
    const theirs = procs.start({ argv: ["sshd"], newGroup: true, uid: 0, env: { A: "1" } });
    expect(procs.signal(theirs.pid, "SIGKILL")).toBe("EPERM");
    expect(procs.signalGroup(theirs.pid, "SIGKILL")).toBe("EPERM");
    expect(procs.environ(theirs.pid)).toBeUndefined();
    expect(procs.inspect(theirs.pid)?.state).toBe("sleeping");
    expect(
      procs.signals.map((record) => [record.target, record.outcome, record.receivers]),
    ).toEqual([
      ["pid", "EPERM", []],
      ["group", "EPERM", []],
    ]);
  });

  it("is deterministic: the same starts and signals give the same table and record", () => {
    const run = () => {
      const { clock, procs } = world();
      for (let i = 0; i < 5; i++) {
        procs.start({ argv: [`r${i}`], newGroup: i % 2 === 0, termExitMs: 7 * i, zombieMs: i });
      }
      for (const info of procs.list())
        if (info.pid > procs.selfPid) procs.signal(info.pid, "SIGTERM");
      clock.fireNext();
      return JSON.stringify([procs.list(), procs.signals, clock.now()]);
    };
    expect(run()).toBe(run());
  });
});
