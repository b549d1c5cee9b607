import { describe, expect, it } from "vitest";
import { createActor, SimulatedClock } from "xstate";
import { type RankEmitted, type RankMarkerSeen, rankMachine } from "../../src/machines/rank.ts";

function startRank(markerStaleMs = 45_000) {
  const clock = new SimulatedClock();
  const actor = createActor(rankMachine, { input: { rank: 3, markerStaleMs }, clock });
  const emitted: RankEmitted[] = [];
  actor.on("*", (event) => emitted.push(event));
  actor.start();
  return { actor, clock, emitted, value: () => actor.getSnapshot().value };
}

function marker(overrides: Partial<RankMarkerSeen> = {}): RankMarkerSeen {
  return { pid: 100, phase: "loading", heartbeatAt: 1, active: 0, epoch: 0, ...overrides };
}

describe("rank machine", () => {
  it("goes spawning → loading → ready on its own ready marker and reports it once", () => {
    const r = startRank();
    expect(r.value()).toBe("spawning");
    r.actor.send({ type: "SPAWNED", pid: 100, pgid: 100 });
    expect(r.value()).toBe("loading");
    r.actor.send({ type: "MARKER", marker: marker() });
    expect(r.value()).toBe("loading");
    r.actor.send({ type: "MARKER", marker: marker({ phase: "ready", heartbeatAt: 2 }) });
    r.actor.send({ type: "MARKER", marker: marker({ phase: "ready", heartbeatAt: 3, active: 4 }) });
    expect(r.value()).toBe("ready");
    expect(r.emitted).toEqual([{ type: "rank.ready", rank: 3 }]);
    expect(r.actor.getSnapshot().context.active).toBe(4);
  });

  it("ignores a marker written by another pid (left by an earlier launch)", () => {
    const r = startRank();
    r.actor.send({ type: "SPAWNED", pid: 100, pgid: 100 });
    r.actor.send({ type: "MARKER", marker: marker({ pid: 99, phase: "ready" }) });
    expect(r.value()).toBe("loading");
    expect(r.emitted).toEqual([]);
  });

  it("exits cleanly on code 0 and fails on another code or a signal", () => {
    for (const [code, signal, state] of [
      [0, null, "exited"],
      [3, null, "failed"],
      [null, "SIGKILL", "failed"],
    ] as const) {
      const r = startRank();
      r.actor.send({ type: "SPAWNED", pid: 100, pgid: 100 });
      r.actor.send({ type: "EXITED", code, signal });
      expect(r.value()).toBe(state);
      expect(r.emitted).toEqual([{ type: "rank.exited", rank: 3, code, signal }]);
    }
  });

  it("is lost when its heartbeat stops advancing for markerStaleMs", () => {
    const r = startRank(45_000);
    r.actor.send({ type: "SPAWNED", pid: 100, pgid: 100 });
    r.actor.send({ type: "MARKER", marker: marker({ phase: "ready", heartbeatAt: 10 }) });
    r.clock.increment(30_000);
    // The same heartbeat read again is no sign of life; a newer one is.
    r.actor.send({ type: "MARKER", marker: marker({ phase: "ready", heartbeatAt: 10 }) });
    r.clock.increment(14_999);
    expect(r.value()).toBe("ready");
    r.actor.send({ type: "MARKER", marker: marker({ phase: "ready", heartbeatAt: 11 }) });
    r.clock.increment(44_999);
    expect(r.value()).toBe("ready");
    r.clock.increment(1);
    expect(r.value()).toBe("lost");
    expect(r.emitted.at(-1)).toEqual({
      type: "rank.lost",
      rank: 3,
      reason: "its marker's heartbeat has not advanced for 45000 ms",
    });
  });

  it("keeps counting toward stale across loading → ready when the ready marker's heartbeat is not newer", () => {
    // The rank rewrote its marker as ready within the millisecond of its last loading
    // heartbeat (the same heartbeatAt), then hung: it is lost 45 s after that heartbeat was
    // first seen, not never.
    const r = startRank(45_000);
    r.actor.send({ type: "SPAWNED", pid: 100, pgid: 100 });
    r.actor.send({ type: "MARKER", marker: marker({ phase: "loading", heartbeatAt: 10 }) });
    r.clock.increment(1_000);
    r.actor.send({ type: "MARKER", marker: marker({ phase: "ready", heartbeatAt: 10 }) });
    expect(r.value()).toBe("ready");
    r.clock.increment(43_999);
    expect(r.value()).toBe("ready");
    r.clock.increment(1);
    expect(r.value()).toBe("lost");
    expect(r.emitted).toEqual([
      { type: "rank.ready", rank: 3 },
      {
        type: "rank.lost",
        rank: 3,
        reason: "its marker's heartbeat has not advanced for 45000 ms",
      },
    ]);
  });

  it("has no stale timer before the first marker: the group's load timeout covers that", () => {
    const r = startRank(1_000);
    r.actor.send({ type: "SPAWNED", pid: 100, pgid: 100 });
    r.clock.increment(10_000);
    expect(r.value()).toBe("loading");
  });

  it("stops from any live state, and a stopped rank's exit is not a failure", () => {
    for (const before of ["spawning", "loading", "ready"] as const) {
      const r = startRank(1_000);
      if (before !== "spawning") r.actor.send({ type: "SPAWNED", pid: 100, pgid: 100 });
      if (before === "ready") r.actor.send({ type: "MARKER", marker: marker({ phase: "ready" }) });
      r.actor.send({ type: "STOP" });
      expect(r.value()).toBe("stopping");
      r.clock.increment(5_000);
      expect(r.value()).toBe("stopping");
      r.actor.send({ type: "EXITED", code: null, signal: "SIGTERM" });
      expect(r.value()).toBe("exited");
    }
  });

  it("fails when it cannot be spawned", () => {
    const r = startRank();
    r.actor.send({ type: "SPAWN_FAILED", reason: "ENOENT" });
    expect(r.value()).toBe("failed");
    expect(r.actor.getSnapshot().context.reason).toBe("ENOENT");
  });
});
