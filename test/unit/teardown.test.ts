import pino from "pino";
import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { ConfigError, TeardownError } from "../../src/errors.ts";
import {
  DEFAULT_TEARDOWN_TIMEOUTS,
  MOST_SWEEP_KILLS,
  type ProcView,
  pollDelayMs,
  type TeardownEffect,
  type TeardownInput,
  type TeardownTimeouts,
  teardownDeadlineMs,
  teardownMachine,
} from "../../src/machines/teardown.ts";
import type { Overrides } from "../../src/overrides.ts";
import type { Signal, SignalOutcome } from "../../src/runtime/ports.ts";
import { type TeardownTarget, tearDown } from "../../src/runtime/tearDown.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { emptyTeardownTarget } from "../fixtures/emptyTeardownTarget.ts";
import { onSimClock } from "../property/teardownModel.ts";

const DEP = "dep-0123456789ab";
const STATE_DIR = "/srv/app/.baton/run";
const TIMEOUTS: TeardownTimeouts = {
  termGraceMs: 1000,
  killWaitMs: 200,
  killAgainWaitMs: 300,
  sweepTermWaitMs: 400,
  sweepKillWaitMs: 500,
  pollMs: 50,
};

/** A process of the deployment (by its environment), sleeping. */
const rank = (pid: number, pgid = pid, state: ProcView["state"] = "sleeping"): ProcView => ({
  pid,
  ppid: 100,
  pgid,
  state,
  argv: ["python", "train.py"],
  env: { BATON_DEPLOYMENT: DEP, BATON_STATE_DIR: STATE_DIR },
});

/** A process of our user that has nothing to do with the deployment. */
const stranger = (pid: number, pgid = pid): ProcView => ({
  pid,
  ppid: 1,
  pgid,
  state: "sleeping",
  argv: ["sleep", "1000"],
  env: { HOME: "/home/someone" },
});

interface World {
  /** The process table a probe sees (filtered as the adapter filters it). */
  table: ProcView[];
  /** What a signal does: its outcome, and any change to the table. */
  onSignal?: (target: "pid" | "group", id: number, signal: Signal) => SignalOutcome;
  candidates?: number[];
  /** Who holds the name now, when another launcher took it over (`CANDIDATES`' `heldBy`). */
  heldBy?: string;
}

/** The machine alone on a simulated clock, with `world` answering its effects synchronously. */
function scripted(input: Partial<TeardownInput>, world: World) {
  const clock = new SimClock();
  const effects: TeardownEffect[] = [];
  const actor = createActor(teardownMachine, {
    clock,
    input: {
      deployment: DEP,
      stateDir: STATE_DIR,
      groups: [],
      pids: [],
      selfPid: 100,
      timeouts: TIMEOUTS,
      ...input,
    },
  });
  actor.on("effects", ({ effects: batch }) => {
    for (const effect of batch) {
      effects.push(effect);
      switch (effect.type) {
        case "probe": {
          const procs = world.table.filter(
            (proc) =>
              effect.scan || effect.groups.includes(proc.pgid) || effect.pids.includes(proc.pid),
          );
          actor.send({ type: "TABLE", seq: effect.seq, procs });
          break;
        }
        case "signal":
        case "signalGroup": {
          const target = effect.type === "signal" ? "pid" : "group";
          const id = effect.type === "signal" ? effect.pid : effect.pgid;
          const outcome = world.onSignal?.(target, id, effect.signal) ?? "ok";
          actor.send({ type: "SIGNALLED", target, id, signal: effect.signal, outcome });
          break;
        }
        case "readCandidates":
          actor.send({
            type: "CANDIDATES",
            pids: world.candidates ?? [],
            ...(world.heldBy !== undefined && { heldBy: world.heldBy }),
          });
          break;
      }
    }
  });
  actor.start();
  const signals = () =>
    effects.flatMap((effect) =>
      effect.type === "signal"
        ? [`${effect.signal} pid ${effect.pid}`]
        : effect.type === "signalGroup"
          ? [`${effect.signal} group ${effect.pgid}`]
          : [],
    );
  const steps = () => effects.flatMap((effect) => (effect.type === "step" ? [effect.text] : []));
  const finish = () => {
    while (actor.getSnapshot().status === "active" && clock.fireNext());
    return actor.getSnapshot();
  };
  return { actor, clock, effects, signals, steps, finish };
}

/** Removes `pids` from the table. */
const remove = (world: World, pids: number[]) => {
  world.table = world.table.filter((proc) => !pids.includes(proc.pid));
};

describe("teardown machine", () => {
  it("with the name another launcher's, stops its own ranks and neither sweeps nor waits on that launcher's", () => {
    // 500 is this launcher's rank; 700 another launcher's of the same name and state dir.
    const world: World = { table: [rank(500), rank(700)], candidates: [700] };
    world.onSignal = (_target, id) => {
      remove(world, [id]);
      return "ok";
    };
    const withoutHolder = scripted({ groups: [500], pids: [500] }, world);
    expect(withoutHolder.finish().value).toBe("verified");
    expect(withoutHolder.signals()).toContain("SIGTERM pid 700");

    world.table = [rank(500), rank(700)];
    world.heldBy = "launcher pid 4242 holds its lease";
    const run = scripted({ groups: [500], pids: [500] }, world);
    const end = run.finish();
    expect(end.value).toBe("verified");
    expect(run.signals()).toEqual(["SIGTERM group 500"]);
    expect(end.output?.swept).toEqual([]);
    expect(run.steps()).toContain(
      `sweep: skipped: ${DEP} is now another launcher's (launcher pid 4242 holds its lease), whose processes carry it too; verifying this launcher's ranks alone`,
    );
    expect(world.table.map((proc) => proc.pid)).toEqual([700]);
  });

  it("with the name another launcher's, still sweeps what names this launcher, and nothing of the other's", () => {
    // This launcher (pid 300): rank 500 and its setsid child 510. The other (4242): rank 700,
    // and 710, a helper of it with an empty environment in the name's cgroup, which both share.
    const launched = (pid: number, launcher: number, pgid = pid): ProcView => {
      const proc = rank(pid, pgid);
      return { ...proc, env: { ...proc.env, BATON_LAUNCHER_PID: String(launcher) } };
    };
    const fresh = (): ProcView[] => [
      launched(500, 300),
      launched(510, 300),
      launched(700, 4242),
      { ...stranger(710), env: {}, contained: true },
    ];
    const world: World = { table: fresh(), heldBy: "launcher pid 4242 holds its lease" };
    world.onSignal = (target, id) => {
      remove(
        world,
        target === "group" ? world.table.filter((p) => p.pgid === id).map((p) => p.pid) : [id],
      );
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500], launcherPid: 300 }, world);
    const end = run.finish();
    expect(end.value).toBe("verified");
    expect(run.signals()).toEqual(["SIGTERM group 500", "SIGTERM pid 510"]);
    expect(end.output?.swept).toEqual([510]);
    expect(run.steps()).toContain(
      `sweep: ${DEP} is now another launcher's (launcher pid 4242 holds its lease), whose processes carry it too: no markers, and only processes with BATON_LAUNCHER_PID=300 (this launcher's) are swept`,
    );
    expect(world.table.map((proc) => proc.pid)).toEqual([700, 710]);

    // Not told the name was taken over (its lease written over the other's), a marker naming
    // the other launcher's rank: still never signalled, nor counted as a survivor.
    world.table = fresh().slice(0, 3);
    delete world.heldBy;
    world.candidates = [700];
    const unaware = scripted({ groups: [500], pids: [500], launcherPid: 300 }, world);
    expect(unaware.finish().value).toBe("verified");
    expect(unaware.signals()).toEqual(["SIGTERM group 500", "SIGTERM pid 510"]);
    expect(world.table.map((proc) => proc.pid)).toEqual([700]);
  });

  it("ends the grace early once the whole group is gone, without any KILL", () => {
    const world: World = { table: [rank(500), rank(501, 500)] };
    world.onSignal = (_target, _id, signal) => {
      if (signal === "SIGTERM") remove(world, [500, 501]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    expect(run.actor.getSnapshot().value).toBe("awaitTerm");
    run.clock.fireNext();
    const end = run.actor.getSnapshot();
    expect(end.value).toBe("verified");
    expect(run.clock.now()).toBe(pollDelayMs(TIMEOUTS.pollMs, 0));
    expect(run.signals()).toEqual(["SIGTERM group 500"]);
    expect(run.steps()).toContain("awaitTerm: all gone");
    expect(end.output).toEqual({
      verified: true,
      survivors: [],
      swept: [],
      stopped: [500],
      others: [{ pid: 501, pgid: 500, program: "python", swept: false }],
      forbiddenGroups: [],
    });
  });

  it("tells the ranks it stopped from ranks that had exited on their own", () => {
    // Rank 600 exited on its own (a zombie); rank 700 did too, leaving a child in its group;
    // rank 500 still runs. Groups 500 and 700 get TERM, but only rank 500 was stopped.
    const world: World = {
      table: [rank(500), rank(600, 600, "zombie"), rank(700, 700, "zombie"), rank(701, 700)],
    };
    world.onSignal = (_target, _id, signal) => {
      if (signal === "SIGTERM") remove(world, [500, 600, 700, 701]);
      return "ok";
    };
    const run = scripted({ groups: [500, 600, 700], pids: [500, 600, 700] }, world);
    const end = run.finish();
    expect(end.value).toBe("verified");
    expect(run.signals()).toEqual(["SIGTERM group 500", "SIGTERM group 700"]);
    expect(end.output?.stopped).toEqual([500]);
  });

  it("names the other processes it signalled: one left in an exited rank's group, one the sweep found", () => {
    // Rank 700 exited, leaving 701 in its group; 900 left the group (setsid) and only the
    // sweep finds it by its environment, which says rank 1. 702 forks after the first TERM.
    const child = (pid: number, pgid: number, argv: string[], rankId: string): ProcView => ({
      ...rank(pid, pgid),
      argv,
      env: { BATON_DEPLOYMENT: DEP, BATON_STATE_DIR: STATE_DIR, RANK: rankId },
    });
    const world: World = {
      table: [
        rank(700, 700, "zombie"),
        child(701, 700, ["sleep", "30"], "0"),
        child(900, 900, ["python", "helper.py"], "1"),
      ],
    };
    world.onSignal = (target, id, signal) => {
      if (target === "group" && signal === "SIGTERM") {
        // 701 ignores TERM and forks 702 before it goes.
        world.table.push(child(702, 700, ["sleep", "31"], "0"));
      } else if (target === "group") remove(world, [701, 702]);
      else remove(world, [id]);
      return "ok";
    };
    const end = scripted({ groups: [700], pids: [700] }, world).finish();
    expect(end.value).toBe("verified");
    expect(end.output?.stopped).toEqual([]);
    expect(end.output?.others).toEqual([
      { pid: 701, pgid: 700, program: "sleep", rank: 0, swept: false },
      { pid: 702, pgid: 700, program: "sleep", rank: 0, swept: false },
      { pid: 900, pgid: 900, program: "python", rank: 1, swept: true },
    ]);
  });

  it("names a process already running its exit when first signalled by the kernel's name for it, not `?`", () => {
    // Rank 500's helper 501 is exiting as the TERM comes: its arguments and environment are
    // gone, and its stat still names its program.
    const exiting: ProcView = {
      ...rank(501, 500),
      argv: [],
      env: undefined,
      exiting: true,
      name: "python3",
    };
    const world: World = { table: [rank(500), exiting] };
    world.onSignal = () => {
      remove(world, [500, 501]);
      return "ok";
    };
    const end = scripted({ groups: [500], pids: [500] }, world).finish();
    expect(end.value).toBe("verified");
    expect(end.output?.others).toEqual([
      { pid: 501, pgid: 500, program: "python3, exiting", swept: false },
    ]);
  });

  it("keeps waiting while a group member lives after its rank died, and KILLs the group", () => {
    // The rank exits on TERM; its child (not a known pid) ignores TERM.
    const world: World = { table: [rank(500), rank(501, 500)] };
    world.onSignal = (_target, _id, signal) => {
      remove(world, signal === "SIGTERM" ? [500] : [500, 501]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    const end = run.finish();
    expect(end.output?.verified).toBe(true);
    expect(run.signals()).toEqual(["SIGTERM group 500", "SIGKILL group 500"]);
    expect(run.steps()).toContain("awaitTerm: time is up");
  });

  it("while a known rank lives, polls only the known pids, sooner first then every pollMs", () => {
    const run = scripted({ groups: [500], pids: [500] }, { table: [rank(500), rank(501, 500)] });
    const polls: { at: number; groups: number[]; pids: number[] }[] = [];
    run.actor.on("effects", ({ effects }) => {
      for (const effect of effects) {
        if (effect.type === "probe") {
          polls.push({ at: run.clock.now(), groups: effect.groups, pids: effect.pids });
        }
      }
    });
    while (run.actor.getSnapshot().matches("awaitTerm") && run.clock.fireNext());
    const expected: number[] = [];
    for (let n = 0, at = 0; at + pollDelayMs(TIMEOUTS.pollMs, n) < TIMEOUTS.termGraceMs; n++) {
      at += pollDelayMs(TIMEOUTS.pollMs, n);
      expected.push(at);
    }
    const quick = polls.filter((poll) => poll.at < TIMEOUTS.termGraceMs);
    expect(quick.map((poll) => poll.at)).toEqual(expected);
    expect(quick.every((poll) => poll.groups.length === 0 && poll.pids.join() === "500")).toBe(
      true,
    );
  });

  it("backs the poll off from pollMs / 16 to pollMs, never beyond", () => {
    for (const pollMs of [1, 10, 50, 250, 400]) {
      const delays = Array.from({ length: 12 }, (_, n) => pollDelayMs(pollMs, n));
      expect(delays[0]).toBe(Math.max(1, Math.ceil(pollMs / 16)));
      expect(delays.at(-1)).toBe(pollMs);
      for (let n = 1; n < delays.length; n++) {
        expect(delays[n]).toBe(Math.min(pollMs, (delays[n - 1] as number) * 2));
      }
    }
  });

  it("goes TERM → KILL → KILL again, each after its own timeout", () => {
    const world: World = { table: [rank(500)] };
    let kills = 0;
    world.onSignal = (_, _id, signal) => {
      if (signal === "SIGKILL" && ++kills === 2) remove(world, [500]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    const times: Record<string, number> = {};
    run.actor.subscribe((snapshot) => {
      times[JSON.stringify(snapshot.value)] ??= run.clock.now();
    });
    const end = run.finish();
    expect(end.output?.verified).toBe(true);
    expect(run.signals()).toEqual(["SIGTERM group 500", "SIGKILL group 500", "SIGKILL group 500"]);
    expect(times['"awaitKill"']).toBe(TIMEOUTS.termGraceMs);
    expect(times['"awaitKillAgain"']).toBe(TIMEOUTS.termGraceMs + TIMEOUTS.killWaitMs);
  });

  it("on HURRY in the TERM grace, KILLs at once and still verifies", () => {
    const world: World = { table: [rank(500)] };
    world.onSignal = (_, _id, signal) => {
      if (signal === "SIGKILL") remove(world, [500]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    run.clock.fireNext(TIMEOUTS.termGraceMs / 2);
    expect(run.actor.getSnapshot().value).toBe("awaitTerm");
    const at = run.clock.now();
    run.actor.send({ type: "HURRY" });
    expect(run.signals()).toEqual(["SIGTERM group 500", "SIGKILL group 500"]);
    const end = run.finish();
    expect(end.output?.verified).toBe(true);
    expect(at).toBeLessThan(TIMEOUTS.termGraceMs);
    expect(run.steps()).toContain("hurried: no more waiting for TERM");
  });

  it("after HURRY, waits for TERM nowhere: the ranks' grace and the sweep's TERM wait alike", () => {
    // A rank that takes two KILLs, and a leftover only its marker names.
    const world: World = { table: [rank(500), rank(600)], candidates: [600] };
    let kills = 0;
    world.onSignal = (_, id, signal) => {
      if (signal === "SIGKILL" && (id === 600 || ++kills === 2)) remove(world, [id]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    run.actor.send({ type: "HURRY" });
    const end = run.finish();
    expect(end.output?.verified).toBe(true);
    expect(run.signals()).toEqual([
      "SIGTERM group 500",
      "SIGKILL group 500",
      "SIGKILL group 500",
      "SIGTERM pid 600",
      "SIGKILL pid 600",
    ]);
    // Of the deadlines, only the first KILL's wait ran out (and a few early polls after it);
    // without HURRY the grace and the sweep's TERM wait come on top (1,600 ms more).
    expect(run.clock.now()).toBeGreaterThanOrEqual(TIMEOUTS.killWaitMs);
    expect(run.clock.now()).toBeLessThan(TIMEOUTS.killWaitMs + TIMEOUTS.pollMs);
  });

  it("counts a zombie as dead", () => {
    const run = scripted(
      { groups: [500], pids: [500] },
      { table: [rank(500, 500, "zombie"), rank(501, 500, "zombie")] },
    );
    const end = run.finish();
    expect(end.output?.verified).toBe(true);
    expect(run.signals()).toEqual([]);
    expect(run.clock.now()).toBe(0);
  });

  it("counts a process in disk sleep as alive: unverified after every deadline", () => {
    const run = scripted({ groups: [500], pids: [500] }, { table: [rank(500, 500, "disk-sleep")] });
    const end = run.finish();
    expect(end.value).toBe("unverified");
    expect(end.output).toMatchObject({
      verified: false,
      survivors: [{ pid: 500, state: "disk-sleep" }],
      swept: [500],
    });
    // Every wait ran out; the sweep KILLed once, its survivor being one it had signalled.
    expect(run.clock.now()).toBe(
      teardownDeadlineMs(TIMEOUTS) - (MOST_SWEEP_KILLS - 1) * TIMEOUTS.sweepKillWaitMs,
    );
    expect(run.signals()).toEqual([
      "SIGTERM group 500",
      "SIGKILL group 500",
      "SIGKILL group 500",
      "SIGTERM pid 500",
      "SIGKILL pid 500",
    ]);
  });

  it("never signals a group again after it answered EPERM, nor one forbidden before", () => {
    // Group 600 turns out to be another user's between the check and the signal.
    const world: World = { table: [rank(500), rank(600), rank(700)] };
    world.onSignal = (target, id) => (target === "group" && id === 600 ? "EPERM" : "ok");
    const run = scripted(
      { groups: [500, 600, 700], pids: [500, 600, 700], forbiddenGroups: [700] },
      world,
    );
    const end = run.finish();
    expect(run.signals().filter((signal) => signal.endsWith("group 600"))).toEqual([
      "SIGTERM group 600",
    ]);
    expect(run.signals().some((signal) => signal.endsWith("group 700"))).toBe(false);
    // Its rank is still a known pid of the deployment: signalled by pid from then on.
    expect(run.signals()).toContain("SIGKILL pid 600");
    expect(run.effects.filter((effect) => effect.type === "groupForbidden")).toEqual([
      { type: "groupForbidden", pgid: 600 },
    ]);
    expect(end.output?.forbiddenGroups).toEqual([600, 700]);
  });

  it("leaves alone a group holding no process of the deployment (a reused group id)", () => {
    const theirs: ProcView = { ...stranger(600), env: undefined, argv: ["ssh", "host"] };
    const run = scripted({ groups: [500, 600], pids: [500] }, { table: [rank(500), theirs] });
    run.finish();
    expect(run.signals().some((signal) => signal.includes("600"))).toBe(false);
  });

  it("signals a group whole when its other members cannot be read (a rank's ssh child)", () => {
    const child: ProcView = { ...stranger(501, 500), env: undefined, argv: ["ssh", "host"] };
    const run = scripted({ groups: [500], pids: [500] }, { table: [rank(500), child] });
    run.finish();
    expect(run.signals()[0]).toBe("SIGTERM group 500");
  });

  it("sweeps only marker pids that still carry the deployment, TERM then KILL", () => {
    const leftGroup: ProcView = {
      ...rank(701, 701),
      argv: ["worker", `--deployment=${DEP}`],
      env: {},
    };
    const world: World = { table: [stranger(700), leftGroup], candidates: [700, 701] };
    world.onSignal = (_, id, signal) => {
      if (signal === "SIGKILL" && id === 701) remove(world, [701]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    const end = run.finish();
    expect(end.output).toMatchObject({ verified: true, swept: [701] });
    expect(run.signals()).toEqual(["SIGTERM pid 701", "SIGKILL pid 701"]);
    expect(run.steps()).toContain(`sweep: pids 700 no longer carry ${DEP}: not signalled`);
  });

  it("counts a process it KILLed as alive while it exits (no arguments, no environment left)", () => {
    const leftGroup: ProcView = { ...rank(701, 701), argv: ["worker", `--deployment=${DEP}`] };
    const exiting: ProcView = { ...leftGroup, state: "running", argv: [], env: {} };
    const world: World = { table: [leftGroup], candidates: [701] };
    world.onSignal = (_, id, signal) => {
      if (signal === "SIGKILL" && id === 701) world.table = [exiting];
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    expect(run.finish().output).toMatchObject({
      verified: false,
      survivors: [{ pid: 701, state: "running" }],
    });

    world.table = [leftGroup];
    const gone = scripted({ groups: [500], pids: [500] }, world);
    gone.clock.setTimeout(() => {
      world.table = [{ ...exiting, state: "zombie" }];
    }, TIMEOUTS.sweepTermWaitMs + TIMEOUTS.pollMs);
    expect(gone.finish().output).toMatchObject({ verified: true, swept: [701] });
  });

  it("finds a leftover through its environment even without a marker", () => {
    const world: World = { table: [rank(900, 900)] };
    world.onSignal = (_, id, signal) => {
      if (signal === "SIGTERM" && id === 900) remove(world, [900]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    expect(run.finish().output).toMatchObject({ verified: true, swept: [900] });
  });

  it("finds a descendant in the deployment's cgroup whose environment and group say nothing", () => {
    const escaped: ProcView = { ...stranger(950, 950), contained: true };
    const world: World = { table: [stranger(949), escaped] };
    world.onSignal = (_, id, signal) => {
      if (signal === "SIGKILL" && id === 950) remove(world, [950]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    expect(run.finish().output).toMatchObject({ verified: true, swept: [950] });
    expect(run.signals()).toEqual(["SIGTERM pid 950", "SIGKILL pid 950"]);
  });

  it("KILLs what a leftover forked between the sweep's look and its KILL, and verifies", () => {
    // A daemon's `while :; do sleep 1; done`: its next sleep came after the sweep's scan.
    const world: World = { table: [rank(950, 950)] };
    world.onSignal = (_, id, signal) => {
      if (signal === "SIGKILL" && id === 950) world.table = [{ ...rank(951, 950), ppid: 1 }];
      if (signal === "SIGKILL" && id === 951) remove(world, [951]);
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    expect(run.finish().output).toMatchObject({ verified: true, swept: [950, 951] });
    expect(run.signals()).toEqual(["SIGTERM pid 950", "SIGKILL pid 950", "SIGKILL pid 951"]);
    expect(run.steps()).toContain("verify: 951 started after the sweep's KILL: KILL it too");
  });

  it("gives up on a leftover that keeps forking, after a few KILLs, naming what survives", () => {
    let next = 950;
    const world: World = { table: [rank(next, 950)] };
    world.onSignal = (_, id, signal) => {
      if (signal === "SIGKILL" && id === next) world.table = [rank(++next, 950)];
      return "ok";
    };
    const run = scripted({ groups: [500], pids: [500] }, world);
    expect(run.finish().output).toMatchObject({
      verified: false,
      survivors: [{ pid: 953, state: "sleeping" }],
    });
    expect(run.signals().filter((signal) => signal.startsWith("SIGKILL"))).toHaveLength(3);
  });

  it("is not verified while a process of the cgroup lives, even one no other evidence names", () => {
    const world: World = { table: [{ ...stranger(950, 950), env: undefined, contained: true }] };
    const end = scripted({ groups: [500], pids: [500] }, world).finish();
    expect(end.output).toMatchObject({
      verified: false,
      survivors: [{ pid: 950, state: "sleeping" }],
    });
  });

  it("signals a group holding a stranger member by member, never the stranger", () => {
    // The rank (500) is gone: nothing vouches for the group's members but their own evidence.
    const run = scripted(
      { groups: [500], pids: [500] },
      { table: [rank(502, 500), stranger(501, 500)] },
    );
    run.finish();
    expect(run.signals().slice(0, 3)).toEqual([
      "SIGTERM pid 502",
      "SIGKILL pid 502",
      "SIGKILL pid 502",
    ]);
    expect(run.signals().some((signal) => signal.includes("501"))).toBe(false);
  });

  it("signals a live rank's group whole, with a member that emptied its environment", () => {
    // Only the rank's descendants are in its session, so in its group: the member is its own.
    const run = scripted(
      { groups: [500], pids: [500] },
      { table: [rank(500), { ...stranger(501, 500), ppid: 500, env: {} }] },
    );
    const end = run.finish();
    expect(run.signals().slice(0, 3)).toEqual([
      "SIGTERM group 500",
      "SIGKILL group 500",
      "SIGKILL group 500",
    ]);
    expect(end.output?.survivors.map((survivor) => survivor.pid)).toEqual([500, 501]);
  });

  it("takes a rank that is its own child as the deployment's, whatever its environment says", () => {
    const bare = { ...stranger(500), ppid: 100, env: {} };
    const run = scripted({ groups: [500], pids: [500] }, { table: [bare] });
    run.finish();
    expect(run.signals().slice(0, 3)).toEqual([
      "SIGTERM group 500",
      "SIGKILL group 500",
      "SIGKILL group 500",
    ]);
    // Not its child (a stranger that took the pid): never signalled.
    const other = scripted({ groups: [500], pids: [500] }, { table: [stranger(500)] });
    other.finish();
    expect(other.signals()).toEqual([]);
  });

  it("never signals its own process, even when it carries the deployment", () => {
    const run = scripted(
      { groups: [500], pids: [500], selfPid: 501 },
      { table: [rank(500), rank(501, 500)] },
    );
    run.finish();
    expect(run.signals().some((signal) => signal.includes("group 500"))).toBe(false);
    expect(run.signals().some((signal) => signal.includes("501"))).toBe(false);
  });

  it("ignores an answer to an earlier probe, and a second copy of one already used", () => {
    const run = scripted({ groups: [500], pids: [500] }, { table: [rank(500)] });
    for (let seq = 0; seq <= 3; seq++) run.actor.send({ type: "TABLE", seq, procs: [] });
    expect(run.actor.getSnapshot().value).toBe("awaitTerm");
    run.clock.fireNext();
    run.actor.send({ type: "TABLE", seq: 3, procs: [] });
    expect(run.actor.getSnapshot().value).toBe("awaitTerm");
  });

  it("with the planted bug, trusts the first KILL and skips the rest", () => {
    const run = scripted(
      { groups: [500], pids: [500], plantedBugs: ["teardown-trusts-single-kill"] },
      { table: [rank(500, 500, "disk-sleep")] },
    );
    const end = run.finish();
    expect(end.output?.verified).toBe(true);
    expect(run.signals()).toEqual(["SIGTERM group 500", "SIGKILL group 500"]);
  });
});

describe("tearDown on simulated processes", () => {
  function group(
    procs: SimProcs,
    size: number,
    behaviour: { onTerm?: "exit" | "ignore" } = {},
  ): TeardownTarget {
    const pids = Array.from(
      { length: size },
      (_, r) =>
        procs.start({
          argv: ["python", "train.py"],
          env: { BATON_DEPLOYMENT: DEP, BATON_STATE_DIR: STATE_DIR, RANK: String(r) },
          newGroup: true,
          label: `rank-${r}`,
          ...behaviour,
        }).pid,
    );
    return {
      ...emptyTeardownTarget(DEP, STATE_DIR),
      groups: [...pids],
      pids,
      sweepCandidates: async () => pids,
    };
  }

  it("tears down 8 ranks that exit on TERM and reports how", async () => {
    const clock = new SimClock();
    const procs = new SimProcs({ clock });
    const target = group(procs, 8);
    const outcome = await onSimClock(clock, tearDown(target, { procs, clock }, TIMEOUTS));
    expect(outcome).toMatchObject({
      value: {
        verified: true,
        deployment: DEP,
        elapsedMs: pollDelayMs(TIMEOUTS.pollMs, 0),
        swept: [],
      },
    });
    const { steps } = (outcome as { value: { steps: string[] } }).value;
    expect(steps[0]).toBe(
      `+0ms start: groups ${target.groups.join(", ")}, pids ${target.pids.join(", ")}`,
    );
    expect(steps).toContain(`+0ms TERM to groups ${target.groups.join(", ")}`);
    expect(procs.processes().filter((proc) => proc.label?.startsWith("rank"))).toEqual([]);
  });

  it("keeps the default of a timeout given as undefined, as of one left out", async () => {
    const kill = async (timeouts: Overrides<TeardownTimeouts>) => {
      const clock = new SimClock();
      const procs = new SimProcs({ clock });
      const target = group(procs, 1, { onTerm: "ignore" });
      const outcome = await onSimClock(clock, tearDown(target, { procs, clock }, timeouts));
      const { steps } = (outcome as { value: { steps: string[] } }).value;
      return steps.find((step) => step.includes("KILL to groups"));
    };
    const unset = Object.fromEntries(Object.keys(TIMEOUTS).map((name) => [name, undefined]));
    expect(await kill({})).toMatch(`+${DEFAULT_TEARDOWN_TIMEOUTS.termGraceMs}ms KILL`);
    expect(await kill(unset)).toBe(await kill({}));
    expect(await kill({ ...unset, termGraceMs: 700 })).toMatch("+700ms KILL");
  });

  it("the machine itself keeps the default of a timeout given as undefined, whoever drives it", () => {
    const actor = createActor(teardownMachine, {
      input: {
        deployment: DEP,
        stateDir: STATE_DIR,
        groups: [],
        pids: [],
        selfPid: 1,
        timeouts: { termGraceMs: undefined, pollMs: 50 },
      },
    });
    expect(actor.getSnapshot().context.timeouts).toEqual({
      ...DEFAULT_TEARDOWN_TIMEOUTS,
      pollMs: 50,
    });
  });

  it("raises TeardownError naming survivors, then verifies when called again", async () => {
    const clock = new SimClock();
    const procs = new SimProcs({ clock });
    const target = group(procs, 2, { onTerm: "ignore" });
    const stuck = procs.start({
      argv: ["python", "train.py"],
      env: { BATON_DEPLOYMENT: DEP, BATON_STATE_DIR: STATE_DIR },
      pgid: target.groups[0],
      ppid: target.pids[0],
      diskSleep: { afterMs: 0, forMs: teardownDeadlineMs(TIMEOUTS) + 100 },
      label: "rank-0.child",
    });
    while (clock.fireNext(0));
    const first = await onSimClock(clock, tearDown(target, { procs, clock }, TIMEOUTS));
    expect("error" in first && first.error).toBeInstanceOf(TeardownError);
    const error = (first as { error: TeardownError }).error;
    expect(error.code).toBe("TEARDOWN_UNVERIFIED");
    expect(error.deployment).toBe(DEP);
    expect(error.survivors).toEqual([{ pid: stuck.pid, state: "disk-sleep" }]);
    expect(error.message).toContain(`${stuck.pid} (disk-sleep)`);
    expect(error.message).toContain("stop() again");

    // The KILL it got while in D takes effect when it wakes; the retry starts over and verifies.
    const second = await onSimClock(clock, tearDown(target, { procs, clock }, TIMEOUTS));
    expect(second).toMatchObject({ value: { verified: true } });
    expect(await stuck.exited).toEqual({ code: null, signal: "SIGKILL" });
  });

  it("never signals another user's group in the target, and verifies", async () => {
    const clock = new SimClock();
    const procs = new SimProcs({ clock });
    const target = group(procs, 1, { onTerm: "ignore" });
    const reused = procs.start({ argv: ["sshd"], newGroup: true, uid: 0, label: "other" });
    target.groups.push(reused.pid);
    const outcome = await onSimClock(clock, tearDown(target, { procs, clock }, TIMEOUTS));
    expect(outcome).toMatchObject({ value: { verified: true } });
    expect(procs.signals.filter((record) => record.id === reused.pid)).toEqual([]);
    expect(procs.process(reused.pid)?.state).toBe("sleeping");
  });

  it("keeps a group that answered EPERM forbidden across attempts", async () => {
    /** A table where group `denied` answers EPERM (its id changed hands after the probe). */
    class Denying extends SimProcs {
      denied = 0;
      deniedAttempts = 0;
      override signalGroup(pgid: number, signal: Signal): SignalOutcome {
        if (pgid !== this.denied) return super.signalGroup(pgid, signal);
        this.deniedAttempts++;
        return "EPERM";
      }
    }
    const clock = new SimClock();
    const procs = new Denying({ clock });
    const target = group(procs, 2, { onTerm: "ignore" });
    procs.denied = target.groups[1]!;
    // A process of the deployment stuck in D makes the first attempt unverified.
    procs.start({
      argv: ["python"],
      env: { BATON_DEPLOYMENT: DEP, BATON_STATE_DIR: STATE_DIR },
      newGroup: true,
      diskSleep: { afterMs: 0, forMs: 60_000 },
    });
    while (clock.fireNext(0));
    const first = await onSimClock(clock, tearDown(target, { procs, clock }, TIMEOUTS));
    expect(first).toMatchObject({ error: { code: "TEARDOWN_UNVERIFIED" } });
    expect([...target.forbiddenGroups]).toEqual([procs.denied]);
    expect(procs.deniedAttempts).toBe(1);
    await onSimClock(clock, tearDown(target, { procs, clock }, TIMEOUTS));
    expect(procs.deniedAttempts).toBe(1);
  });

  it("logs every step at debug through the logger it is given", async () => {
    const clock = new SimClock();
    const procs = new SimProcs({ clock });
    const target = group(procs, 2);
    const lines: { level: number; msg: string; deployment: string }[] = [];
    const logger = pino(
      { level: "debug" },
      { write: (line: string) => lines.push(JSON.parse(line)) },
    );
    const outcome = await onSimClock(clock, tearDown(target, { procs, clock, logger }, TIMEOUTS));
    const { steps } = (outcome as { value: { steps: string[] } }).value;
    expect(lines.map((line) => line.msg)).toEqual(
      steps.map((step) => `teardown: ${step.replace(/^\+\d+ms /, "")}`),
    );
    expect(lines.every((line) => line.level === 20 && line.deployment === DEP)).toBe(true);
  });

  it("still verifies when the markers cannot be read, and says so", async () => {
    const clock = new SimClock();
    const procs = new SimProcs({ clock });
    const target = group(procs, 1, { onTerm: "ignore" });
    target.sweepCandidates = async () => {
      throw new Error("EACCES: permission denied");
    };
    const outcome = await onSimClock(clock, tearDown(target, { procs, clock }, TIMEOUTS));
    expect(outcome).toMatchObject({ value: { verified: true } });
    const { steps } = (outcome as { value: { steps: string[] } }).value;
    expect(steps.some((step) => step.includes("markers unreadable (EACCES"))).toBe(true);
  });

  it("refuses a target whose groups could signal everything", async () => {
    const clock = new SimClock();
    const procs = new SimProcs({ clock });
    const target = group(procs, 1);
    target.groups.push(1);
    await expect(tearDown(target, { procs, clock })).rejects.toBeInstanceOf(ConfigError);
    expect(procs.signals).toEqual([]);
  });
});
