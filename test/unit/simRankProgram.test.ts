/**
 * Programs in the simulated process table: `spawn` runs the program registered for argv[0]
 * (its behaviour, its code on its own clock), and the simulated rank program behaves like a
 * rank through the real rank library: marker loading → ready, heartbeat, exit with a code,
 * exit when its launcher is gone, or stay (deaf), a helper that leaves the group.
 */
import { describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { ORPHANED_EXIT_CODE } from "../../src/rank/startRank.ts";
import type { ProcExit } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { SimProcs, type SimSelf } from "../../src/sim/simProcs.ts";
import {
  rankArgv,
  SIM_RANK,
  type SimRankBehaviour,
  type SimRankEvent,
  simRankProgram,
} from "../../src/sim/simRankProgram.ts";

/** Runs the clock up to `until`, letting every microtask run between timers. */
async function runUntil(clock: SimClock, until: number): Promise<void> {
  for (;;) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!clock.fireNext(until)) return;
  }
}

describe("SimProcs programs", () => {
  function world() {
    const clock = new SimClock();
    let self: SimSelf | undefined;
    const ticks: number[] = [];
    const procs = new SimProcs({
      clock,
      programs: {
        ticker: (spawn) => ({
          label: `ticker ${spawn.argv[1]}`,
          onTerm: "ignore",
          diskSleep: { afterMs: 1_500, forMs: 2_000 },
          main(s) {
            self = s;
            const tick = () => {
              ticks.push(clock.now());
              s.clock.setTimeout(tick, 1_000);
            };
            s.clock.setTimeout(tick, 1_000);
          },
        }),
      },
    });
    return { clock, procs, ticks, self: () => self! };
  }

  it("runs the program of argv[0] with its behaviour; other commands get the default", async () => {
    const { clock, procs, self } = world();
    const handle = procs.spawn({ argv: ["ticker", "a"], env: { X: "1" }, newGroup: true });
    expect(self().pid).toBe(handle.pid);
    expect(self().env).toEqual({ X: "1" });
    expect(procs.process(handle.pid)?.label).toBe("ticker a");
    expect(procs.signal(handle.pid, "SIGTERM")).toBe("ok");
    const plain = procs.spawn({ argv: ["sleep", "9"], newGroup: true });
    procs.signal(plain.pid, "SIGTERM");
    await runUntil(clock, 100);
    expect(procs.inspect(handle.pid)?.state).toBe("sleeping");
    expect(procs.inspect(plain.pid)).toBeUndefined();
  });

  it("holds its timers while it sleeps in D and stops them when it dies", async () => {
    const { clock, procs, ticks, self } = world();
    const handle = procs.spawn({ argv: ["ticker", "b"], newGroup: true });
    const deaths: ProcExit[] = [];
    self().onDeath((exit) => deaths.push(exit));
    await runUntil(clock, 5_000);
    // D from 1.5 s to 3.5 s: the tick due at 2 s runs when it wakes, and sets the next.
    expect(ticks).toEqual([1_000, 3_500, 4_500]);
    self().exit(3);
    expect(await handle.exited).toEqual({ code: 3, signal: null });
    expect(deaths).toEqual([{ code: 3, signal: null }]);
    expect(self().clock.alive).toBe(false);
    await runUntil(clock, 10_000);
    expect(ticks).toHaveLength(3);
  });

  it("forks a child into its group with its environment", () => {
    const { procs, self } = world();
    const handle = procs.spawn({ argv: ["ticker", "c"], env: { A: "1" }, newGroup: true });
    const child = self().fork({ argv: ["helper"], env: { B: "2" }, label: "helper" });
    expect(procs.inspect(child.pid)).toMatchObject({ ppid: handle.pid, pgid: handle.pid });
    expect(procs.environ(child.pid)).toEqual({ A: "1", B: "2" });
  });
});

describe("the simulated rank program", () => {
  const STATE = "/sim/run";
  const DEP = "dep-abcdefghijkl";

  function world(plan: SimRankBehaviour[]) {
    const clock = new SimClock();
    const files = new SimFiles(new SimEntropy(7));
    const events: SimRankEvent[] = [];
    const procs: SimProcs = new SimProcs({
      clock,
      programs: {
        [SIM_RANK]: simRankProgram({
          files,
          procs: { inspect: (pid) => procs.inspect(pid) },
          watchEveryMs: 500,
          onEvent: (event) => events.push(event),
        }),
      },
    });
    const launcher = procs.start({ argv: ["baton", "launch"], onTerm: "ignore" });
    const spawn = (rank: number) =>
      procs.spawn({
        argv: rankArgv(plan),
        env: {
          RANK: String(rank),
          WORLD_SIZE: String(plan.length),
          BATON_DEPLOYMENT: DEP,
          BATON_STATE_DIR: STATE,
          BATON_LAUNCHER_PID: String(launcher.pid),
          BATON_MARKER_HEARTBEAT_MS: "1000",
        },
        newGroup: true,
      });
    const marker = (rank: number) => {
      const text = files.peek(deploymentPaths(STATE, DEP).marker(rank));
      return text === undefined ? undefined : JSON.parse(text);
    };
    return { clock, files, procs, events, launcher, spawn, marker };
  }

  it("writes its marker loading, then ready, heartbeats, and exits with its code", async () => {
    const w = world([{ loadMs: 2_000, exit: { afterMs: 6_000, code: 3 } }]);
    const rank = w.spawn(0);
    expect(w.procs.process(rank.pid)?.label).toBe(`${DEP}/rank-0`);
    await runUntil(w.clock, 1_000);
    expect(w.marker(0)).toMatchObject({ rank: 0, pid: rank.pid, phase: "loading" });
    await runUntil(w.clock, 3_000);
    expect(w.marker(0).phase).toBe("ready");
    const beat = w.marker(0).heartbeatAt;
    await runUntil(w.clock, 5_000);
    expect(w.marker(0).heartbeatAt).toBeGreaterThan(beat);
    await runUntil(w.clock, 10_000);
    expect(await rank.exited).toEqual({ code: 3, signal: null });
    expect(w.marker(0).phase).toBe("exiting");
    expect(w.events.map((e) => e.kind)).toEqual(["ready", "died"]);
  });

  it("exits when its launcher is gone, unless it is deaf; its helper stays either way", async () => {
    const w = world([{ loadMs: 100 }, { loadMs: 100, deaf: true, helper: { setsidAfterMs: 50 } }]);
    const polite = w.spawn(0);
    const deaf = w.spawn(1);
    await runUntil(w.clock, 1_000);
    const helper = w.procs.processes().find((p) => p.label === `${DEP}/rank-1/helper`)!;
    expect(helper.pgid).toBe(helper.pid);
    expect(w.procs.environ(helper.pid)?.BATON_DEPLOYMENT).toBe(DEP);
    w.procs.signal(w.launcher.pid, "SIGKILL");
    await runUntil(w.clock, 5_000);
    expect(await polite.exited).toEqual({ code: ORPHANED_EXIT_CODE, signal: null });
    // It says why it left before it dies; the deaf one never does.
    expect(w.events.filter((e) => e.kind !== "ready").map((e) => [e.kind, e.rank])).toEqual([
      ["orphaned", 0],
      ["died", 0],
    ]);
    expect(w.procs.inspect(deaf.pid)?.state).toBe("sleeping");
    expect(w.marker(1).phase).toBe("exiting");
    expect(w.procs.inspect(helper.pid)?.state).toBe("sleeping");
  });

  it("exits 2 when its ready marker cannot be written (the disk is full)", async () => {
    const w = world([{ loadMs: 2_000 }]);
    const rank = w.spawn(0);
    await runUntil(w.clock, 1_000);
    w.files.refuseWrites(60_000);
    await runUntil(w.clock, 3_000);
    expect(await rank.exited).toEqual({ code: 2, signal: null });
    expect(w.events.map((e) => e.kind)).toEqual(["died"]);
  });

  it("ignores TERM and survives the first KILL when its plan says so", async () => {
    const w = world([{ loadMs: 100, ignoreTerm: true, killsToDie: 2 }]);
    const rank = w.spawn(0);
    await runUntil(w.clock, 500);
    w.procs.signalGroup(rank.pid, "SIGTERM");
    w.procs.signalGroup(rank.pid, "SIGKILL");
    await runUntil(w.clock, 1_000);
    expect(w.procs.inspect(rank.pid)?.state).toBe("sleeping");
    w.procs.signalGroup(rank.pid, "SIGKILL");
    expect(await rank.exited).toEqual({ code: null, signal: "SIGKILL" });
  });
});
