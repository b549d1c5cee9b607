import { describe, expect, it } from "vitest";
import { createActor, SimulatedClock } from "xstate";
import { type GroupEmitted, groupMachine } from "../../src/machines/group.ts";

function startGroup(worldSize = 2, loadTimeoutMs = 60_000) {
  const clock = new SimulatedClock();
  const actor = createActor(groupMachine, {
    input: { deployment: "dep-test", worldSize, loadTimeoutMs },
    clock,
  });
  const emitted: GroupEmitted[] = [];
  actor.on("*", (event) => emitted.push(event));
  actor.start();
  return {
    actor,
    clock,
    emitted,
    value: () => actor.getSnapshot().value,
    types: () => emitted.map((e) => e.type),
    finished: () => emitted.find((e) => e.type === "group.finished"),
  };
}

function launched(worldSize = 2, loadTimeoutMs = 60_000) {
  const g = startGroup(worldSize, loadTimeoutMs);
  g.actor.send({ type: "REAPED" });
  g.actor.send({ type: "LAUNCHED" });
  return g;
}

describe("group machine", () => {
  it("reaps, launches, passes the barrier, and succeeds when every rank exits 0", () => {
    const g = startGroup();
    expect(g.value()).toBe("reaping");
    g.actor.send({ type: "REAPED" });
    expect(g.value()).toBe("launching");
    g.actor.send({ type: "LAUNCHED" });
    expect(g.value()).toBe("barrier");
    g.actor.send({ type: "RANK_READY", rank: 0 });
    expect(g.value()).toBe("barrier");
    g.actor.send({ type: "RANK_READY", rank: 1 });
    expect(g.value()).toBe("running");
    g.actor.send({ type: "RANK_EXITED", rank: 0, code: 0, signal: null });
    expect(g.value()).toBe("running");
    g.actor.send({ type: "RANK_EXITED", rank: 1, code: 0, signal: null });
    expect(g.value()).toBe("stopping");
    g.actor.send({ type: "TEARDOWN_DONE" });
    expect(g.value()).toBe("stopped");
    expect(g.types()).toEqual(["group.launch", "group.ready", "group.teardown", "group.finished"]);
    expect(g.finished()).toEqual({ type: "group.finished", outcome: { status: "succeeded" } });
  });

  it("counts a rank that exited 0 before it was ready as past the barrier", () => {
    const g = launched();
    g.actor.send({ type: "RANK_EXITED", rank: 1, code: 0, signal: null });
    g.actor.send({ type: "RANK_READY", rank: 0 });
    expect(g.emitted.find((e) => e.type === "group.ready")).toEqual({
      type: "group.ready",
      readyRanks: [0],
      exitedRanks: [1],
    });
    expect(g.value()).toBe("running");
  });

  it("fails with the first failing rank and tears the others down; later deaths do not replace it", () => {
    const g = launched(3);
    for (const rank of [0, 1, 2]) g.actor.send({ type: "RANK_READY", rank });
    g.actor.send({ type: "RANK_EXITED", rank: 1, code: 7, signal: null });
    expect(g.value()).toBe("stopping");
    g.actor.send({ type: "RANK_EXITED", rank: 0, code: null, signal: "SIGTERM" });
    g.actor.send({ type: "RANK_EXITED", rank: 2, code: 1, signal: null });
    g.actor.send({ type: "TEARDOWN_DONE" });
    expect(g.finished()).toEqual({
      type: "group.finished",
      outcome: {
        status: "failed",
        failure: {
          code: "RANK_FAILED",
          rank: 1,
          exit: { code: 7, signal: null },
          message: "rank 1 exited with code 7",
        },
      },
    });
    expect(g.actor.getSnapshot().context.exits).toEqual({
      0: { code: null, signal: "SIGTERM" },
      1: { code: 7, signal: null },
      2: { code: 1, signal: null },
    });
  });

  it("a rank that fails during launch or the barrier fails the group as well", () => {
    const g = startGroup();
    g.actor.send({ type: "REAPED" });
    g.actor.send({ type: "RANK_EXITED", rank: 0, code: null, signal: "SIGSEGV" });
    expect(g.value()).toBe("stopping");
    expect(g.types()).not.toContain("group.ready");
  });

  it("times the barrier out after loadTimeoutMs, naming the ranks not ready", () => {
    const g = launched(3, 60_000);
    g.actor.send({ type: "RANK_READY", rank: 1 });
    g.clock.increment(59_999);
    expect(g.value()).toBe("barrier");
    g.clock.increment(1);
    expect(g.value()).toBe("stopping");
    g.actor.send({ type: "TEARDOWN_DONE" });
    const finished = g.finished();
    expect(finished?.type === "group.finished" && finished.outcome).toEqual({
      status: "failed",
      failure: {
        code: "BARRIER_TIMEOUT",
        message: "ranks 0, 2 did not write a ready marker within the load timeout (60000 ms)",
      },
    });
  });

  it("cancels the barrier timer once the barrier passed", () => {
    const g = launched(1, 1_000);
    g.actor.send({ type: "RANK_READY", rank: 0 });
    g.clock.increment(5_000);
    expect(g.value()).toBe("running");
  });

  it("a failed launch tears down, then reports the launch failure", () => {
    const g = startGroup();
    g.actor.send({ type: "REAPED" });
    g.actor.send({ type: "LAUNCH_FAILED", message: "cannot start python9" });
    expect(g.value()).toBe("stopping");
    g.actor.send({ type: "TEARDOWN_FAILED", message: "pid 5 survived" });
    expect(g.value()).toBe("teardownFailed");
    g.actor.send({ type: "STOP", reason: "retry" });
    expect(g.value()).toBe("stopping");
    g.actor.send({ type: "TEARDOWN_DONE" });
    const finished = g.finished();
    expect(finished?.type === "group.finished" && finished.outcome).toEqual({
      status: "failed",
      failure: { code: "LAUNCH_FAILED", message: "cannot start python9" },
    });
  });

  it("a launch that would fail the same way again says so in its failure", () => {
    const g = startGroup();
    g.actor.send({ type: "REAPED" });
    g.actor.send({ type: "LAUNCH_FAILED", message: "cannot start python9", retryable: false });
    g.actor.send({ type: "TEARDOWN_DONE" });
    const finished = g.finished();
    expect(finished?.type === "group.finished" && finished.outcome).toEqual({
      status: "failed",
      failure: { code: "LAUNCH_FAILED", message: "cannot start python9", retryable: false },
    });
  });

  it("a name an ssh host refuses while launching tears down what the launch claimed, then fails DEPLOYMENT_BLOCKED, not LAUNCH_FAILED", () => {
    const g = startGroup();
    g.actor.send({ type: "REAPED" });
    g.actor.send({ type: "LAUNCH_BLOCKED", message: "another launcher holds it there" });
    expect(g.value()).toBe("stopping");
    expect(g.types()).toEqual(["group.launch", "group.teardown"]);
    // What that teardown does (a rank it stops, a later launch failure) does not replace it.
    g.actor.send({ type: "RANK_EXITED", rank: 0, code: null, signal: "SIGTERM" });
    g.actor.send({ type: "LAUNCH_FAILED", message: "cannot start python9" });
    g.actor.send({ type: "TEARDOWN_DONE" });
    const finished = g.finished();
    expect(finished?.type === "group.finished" && finished.outcome).toEqual({
      status: "failed",
      failure: { code: "DEPLOYMENT_BLOCKED", message: "another launcher holds it there" },
    });
  });

  it("a name refused after a stop, or once the ranks were launched, does not change the outcome", () => {
    const stopped = startGroup();
    stopped.actor.send({ type: "REAPED" });
    stopped.actor.send({ type: "STOP", reason: "Ctrl-C" });
    stopped.actor.send({ type: "LAUNCH_BLOCKED", message: "another launcher holds it there" });
    stopped.actor.send({ type: "TEARDOWN_DONE" });
    const finished = stopped.finished();
    expect(finished?.type === "group.finished" && finished.outcome).toEqual({
      status: "stopped",
      reason: "Ctrl-C",
    });
    const running = launched(1);
    running.actor.send({ type: "LAUNCH_BLOCKED", message: "another launcher holds it there" });
    expect(running.value()).toBe("barrier");
  });

  it("a failed reap refuses the launch: nothing is launched", () => {
    const g = startGroup();
    g.actor.send({
      type: "REAP_FAILED",
      failure: { code: "DEPLOYMENT_BLOCKED", message: "blocked" },
    });
    expect(g.value()).toBe("stopped");
    expect(g.types()).toEqual(["group.finished"]);
  });

  it("a lost rank fails the group", () => {
    const g = launched();
    g.actor.send({ type: "RANK_LOST", rank: 0, reason: "stale" });
    g.actor.send({ type: "TEARDOWN_DONE" });
    const finished = g.finished();
    expect(finished?.type === "group.finished" && finished.outcome).toEqual({
      status: "failed",
      failure: { code: "RANK_LOST", rank: 0, message: "rank 0 is lost: stale" },
    });
  });

  it("a lease the launcher could not renew fails the group, and the ranks' exits after it do not replace it", () => {
    const g = launched();
    g.actor.send({ type: "RANK_READY", rank: 0 });
    g.actor.send({ type: "RANK_READY", rank: 1 });
    g.actor.send({ type: "LEASE_LOST", message: "the launcher could not renew its lease" });
    expect(g.value()).toBe("stopping");
    g.actor.send({ type: "RANK_EXITED", rank: 0, code: null, signal: "SIGTERM" });
    g.actor.send({ type: "TEARDOWN_DONE" });
    const finished = g.finished();
    expect(finished?.type === "group.finished" && finished.outcome).toEqual({
      status: "failed",
      failure: { code: "LEASE_LOST", message: "the launcher could not renew its lease" },
    });
  });

  it("a stop is an outcome of its own, and a failure after it does not replace it", () => {
    const g = launched();
    g.actor.send({ type: "RANK_READY", rank: 0 });
    g.actor.send({ type: "RANK_READY", rank: 1 });
    g.actor.send({ type: "STOP", reason: "Ctrl-C" });
    g.actor.send({ type: "RANK_EXITED", rank: 0, code: 1, signal: null });
    g.actor.send({ type: "TEARDOWN_DONE" });
    const finished = g.finished();
    expect(finished?.type === "group.finished" && finished.outcome).toEqual({
      status: "stopped",
      reason: "Ctrl-C",
    });
  });

  it("a stop while reaping ends the group without a launch", () => {
    const g = startGroup();
    g.actor.send({ type: "STOP", reason: "early" });
    expect(g.value()).toBe("stopped");
    expect(g.types()).toEqual(["group.finished"]);
  });
});
