/**
 * A rank group's progress report: followed from the group's and its ranks' real machines,
 * sent as a job's progress message, read back strictly, and turned into the dashboard's
 * `group` and `rank` events (changes only) by the inspection feed from a connection's
 * emitted `progress`.
 */

import { afterEach, describe, expect, it } from "vitest";
import { type AnyStateMachine, createActor, type InspectionEvent } from "xstate";
import { ConfigError } from "../../src/errors.ts";
import { groupMachine } from "../../src/machines/group.ts";
import { rankMachine } from "../../src/machines/rank.ts";
import { teardownMachine } from "../../src/machines/teardown.ts";
import { GROUP_REPORT_INTERVAL_MS, groupReporter } from "../../src/runtime/rankJob.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { chartLayout } from "../../src/viz/chartLayout.ts";
import { type DashboardEvent, DashboardModel } from "../../src/viz/dashboardModel.ts";
import {
  GROUP_PROGRESS_FORMAT,
  type GroupProgress,
  groupFeed,
  groupProgressEvents,
  groupProgressMessage,
  MAX_REPORTED_RANKS,
  readGroupProgress,
  watchGroup,
} from "../../src/viz/groupProgress.ts";
import { inspectionFeed } from "../../src/viz/inspectionFeed.ts";
import { stateChart } from "../../src/viz/stateChart.ts";

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

function chartOf(machine: AnyStateMachine) {
  return chartLayout(stateChart(machine));
}

function report(state: string, ranks: GroupProgress["ranks"]): GroupProgress {
  return { format: GROUP_PROGRESS_FORMAT, deployment: "dep-abc", worldSize: 2, state, ranks };
}

/** What the coordinator's inspection sees when a connection emits a worker's progress frame. */
function progressEmit(job: string, message: string | undefined): InspectionEvent {
  return {
    type: "@xstate.action",
    action: {
      type: "xstate.emit",
      params: {
        event: {
          type: "progress",
          frame: { type: "progress", job, ...(message !== undefined && { message }) },
          worker: "w1",
        },
      },
    },
  } as unknown as InspectionEvent;
}

describe("watchGroup", () => {
  it("refuses a report that is no function at the call, not at the group's first change", () => {
    for (const report of [undefined, "console.log"]) {
      const watch = () => watchGroup(report as never);
      expect(watch).toThrow(ConfigError);
      expect(watch).toThrow(
        `watchGroup: report must be a function, (progress) => …, not ${report === undefined ? "undefined" : `"${report}"`}`,
      );
    }
  });

  it("follows the group's and its ranks' machines and reports only changes", () => {
    const reports: GroupProgress[] = [];
    const inspect = watchGroup((p) => reports.push(structuredClone(p)));
    const ranks = [0, 1].map((rank) => createActor(rankMachine, { input: { rank }, inspect }));
    for (const actor of ranks) actor.start();
    const group = createActor(groupMachine, {
      input: { deployment: "dep-abc", worldSize: 2 },
      inspect,
    }).start();
    stops.push(() => group.stop(), ...ranks.map((actor) => () => actor.stop()));
    // Ranks start first: nothing is reported before the group is known.
    expect(reports[0]).toEqual(
      report("reaping", [
        { rank: 0, phase: "spawning" },
        { rank: 1, phase: "spawning" },
      ]),
    );
    group.send({ type: "REAPED" });
    ranks[0]!.send({ type: "SPAWNED", pid: 101, pgid: 101 });
    ranks[1]!.send({ type: "SPAWNED", pid: 102, pgid: 102 });
    group.send({ type: "LAUNCHED" });
    const marker = { pid: 101, phase: "ready" as const, heartbeatAt: 1, active: 0, epoch: 0 };
    ranks[0]!.send({ type: "MARKER", marker });
    const before = reports.length;
    // The same heartbeat again, and a newer one: the view does not change.
    ranks[0]!.send({ type: "MARKER", marker });
    ranks[0]!.send({ type: "MARKER", marker: { ...marker, heartbeatAt: 2 } });
    expect(reports).toHaveLength(before);
    ranks[1]!.send({ type: "EXITED", code: 3, signal: null });
    expect(reports.at(-1)).toEqual(
      report("barrier", [
        { rank: 0, phase: "ready", pid: 101 },
        { rank: 1, phase: "failed", pid: 102, code: 3 },
      ]),
    );
    expect(reports.map((r) => r.state)).toEqual(
      expect.arrayContaining(["reaping", "launching", "barrier"]),
    );
  });

  it("never reports the group past its barrier with the rank that let it pass still loading", () => {
    const reports: GroupProgress[] = [];
    const inspect = watchGroup((p) => reports.push(structuredClone(p)));
    const group = createActor(groupMachine, {
      input: { deployment: "dep-abc", worldSize: 2 },
      inspect,
    }).start();
    // Wired as launchGroup wires them: a rank's emitted event is the group's.
    const ranks = [0, 1].map((rank) => {
      const actor = createActor(rankMachine, { input: { rank }, inspect });
      actor.on("rank.ready", () => group.send({ type: "RANK_READY", rank }));
      actor.on("rank.exited", ({ code, signal }) =>
        group.send({ type: "RANK_EXITED", rank, code, signal }),
      );
      return actor.start();
    });
    stops.push(() => group.stop(), ...ranks.map((actor) => () => actor.stop()));
    group.send({ type: "REAPED" });
    for (const [rank, actor] of ranks.entries()) {
      actor.send({ type: "SPAWNED", pid: 101 + rank, pgid: 101 + rank });
    }
    group.send({ type: "LAUNCHED" });
    for (const [rank, actor] of ranks.entries()) {
      const pid = 101 + rank;
      actor.send({
        type: "MARKER",
        marker: { pid, phase: "ready", heartbeatAt: 1, active: 0, epoch: 0 },
      });
    }
    for (const actor of ranks) actor.send({ type: "EXITED", code: 0, signal: null });
    const lines = reports.map((r) => `${r.state}: ${r.ranks.map((k) => k.phase).join(" ")}`);
    expect(lines).toContain("running: ready ready");
    // XState hands a rank's emitted event to the group before it shows the rank's own new
    // state: the group's change was reported with the rank's old phase in between.
    expect(lines).not.toContain("running: ready loading");
    expect(lines).not.toContain("stopping: exited ready");
    expect(lines.at(-1)).toBe("stopping: exited exited");
  });

  it("reports its teardown's state, nested states dotted", () => {
    const reports: GroupProgress[] = [];
    const inspect = watchGroup((p) => reports.push(structuredClone(p)));
    const group = createActor(groupMachine, {
      input: { deployment: "dep-abc", worldSize: 1 },
      inspect,
    }).start();
    stops.push(() => group.stop());
    expect(reports.at(-1)?.teardown).toBeUndefined();
    const teardown = createActor(teardownMachine, {
      input: { deployment: "dep-abc", stateDir: "/s", groups: [], pids: [], selfPid: 1 },
      inspect,
    }).start();
    stops.push(() => teardown.stop());
    expect(reports.at(-1)?.teardown).toBe("term");
    // No rank left: on to the sweep, which reads the markers, then signals what they name.
    teardown.send({ type: "TABLE", seq: 1, procs: [] });
    expect(reports.at(-1)?.teardown).toBe("sweep.reading");
    teardown.send({ type: "CANDIDATES", pids: [] });
    expect(reports.at(-1)).toEqual({
      ...report("reaping", []),
      worldSize: 1,
      teardown: "sweep.term",
    });
  });

  it("lists at most MAX_REPORTED_RANKS ranks of a large group", () => {
    const reports: GroupProgress[] = [];
    const inspect = watchGroup((p) => reports.push(p));
    const worldSize = MAX_REPORTED_RANKS + 10;
    const ranks = Array.from({ length: worldSize }, (_, rank) =>
      createActor(rankMachine, { input: { rank }, inspect }).start(),
    );
    const group = createActor(groupMachine, {
      input: { deployment: "dep-big", worldSize },
      inspect,
    }).start();
    stops.push(() => group.stop(), ...ranks.map((actor) => () => actor.stop()));
    const last = reports.at(-1)!;
    expect(last.worldSize).toBe(worldSize);
    expect(last.ranks).toHaveLength(MAX_REPORTED_RANKS);
    expect(readGroupProgress(groupProgressMessage(last))).toEqual(last);
  });
});

describe("groupReporter", () => {
  it("sends at most one report per interval, the latest, and the pending one on flush", () => {
    const clock = new SimClock();
    const sent: { at: number; progress: GroupProgress }[] = [];
    const failures: unknown[] = [];
    const reporter = groupReporter(
      {
        progress: ({ message }) => {
          if (message === "") throw new Error("never empty");
          sent.push({ at: clock.now(), progress: readGroupProgress(message)! });
          if (sent.length === 3) throw new Error("link closed");
        },
        log: { warn: (...args: unknown[]) => failures.push(args) } as never,
      },
      clock,
    );
    const { inspect } = reporter;
    const rank = createActor(rankMachine, { input: { rank: 0 }, inspect, clock }).start();
    const group = createActor(groupMachine, {
      input: { deployment: "dep-abc", worldSize: 1 },
      inspect,
      clock,
    }).start();
    stops.push(
      () => group.stop(),
      () => rank.stop(),
    );
    expect(sent.map((s) => s.progress.state)).toEqual(["reaping"]);
    // Three changes within one interval: one report, the latest, when the interval ends.
    group.send({ type: "REAPED" });
    rank.send({ type: "SPAWNED", pid: 101, pgid: 101 });
    group.send({ type: "LAUNCHED" });
    expect(sent).toHaveLength(1);
    const intervalEnds = clock.now() + GROUP_REPORT_INTERVAL_MS;
    while (clock.fireNext(intervalEnds)) {}
    expect(sent).toHaveLength(2);
    expect(sent[1]!.at - sent[0]!.at).toBe(GROUP_REPORT_INTERVAL_MS);
    expect(sent[1]!.progress).toEqual({
      ...report("barrier", [{ rank: 0, phase: "loading", pid: 101 }]),
      worldSize: 1,
    });
    // A change right after is held until the interval ends; flush sends it now.
    rank.send({ type: "EXITED", code: 0, signal: null });
    expect(sent).toHaveLength(2);
    reporter.flush();
    expect(sent).toHaveLength(3);
    expect(sent[2]!.progress.ranks).toEqual([{ rank: 0, phase: "exited", pid: 101, code: 0 }]);
    // The failed send was logged, not thrown into the rank's machine.
    expect(failures).toHaveLength(1);
    expect(rank.getSnapshot().value).toBe("exited");
    reporter.flush();
    expect(sent).toHaveLength(3);
  });
});

describe("readGroupProgress", () => {
  const good = report("running", [
    { rank: 0, phase: "ready", pid: 7 },
    { rank: 1, phase: "exited", pid: 8, code: 0 },
    { rank: 2, phase: "failed", pid: 9, signal: "SIGKILL" },
  ]);

  it("reads back what was sent", () => {
    expect(readGroupProgress(groupProgressMessage(good))).toEqual(good);
    const stopping = { ...good, state: "stopping", teardown: "sweep.sweepAwaitTerm" };
    expect(readGroupProgress(groupProgressMessage(stopping))).toEqual(stopping);
  });

  it("ignores other jobs' messages and anything not well formed", () => {
    const bad: unknown[] = [
      { ...good, format: "baton.groupProgress/2" },
      { ...good, deployment: "../etc" },
      { ...good, deployment: "x".repeat(65) },
      { ...good, worldSize: -1 },
      { ...good, state: "<script>" },
      { ...good, teardown: "sweep..reading" },
      { ...good, teardown: "sweep.<b>" },
      { ...good, teardown: 3 },
      { ...good, ranks: [{ rank: 0, phase: "ready", pid: 1.5 }] },
      { ...good, ranks: [{ rank: 0, phase: "ready", signal: "kill -9" }] },
      { ...good, ranks: [null] },
      { ...good, ranks: "all" },
    ];
    for (const message of bad) {
      expect(readGroupProgress(JSON.stringify(message)), JSON.stringify(message)).toBeUndefined();
    }
    for (const message of [undefined, "", "parsing 3/10", "{not json", "null", "[]"]) {
      expect(readGroupProgress(message), String(message)).toBeUndefined();
    }
    expect(readGroupProgress(`{"pad":"${"x".repeat(70_000)}"}`)).toBeUndefined();
  });

  it("drops fields that are not part of the report", () => {
    const extra = { ...good, argv: ["secret"], ranks: [{ rank: 0, phase: "ready", env: "S" }] };
    const read = readGroupProgress(JSON.stringify(extra));
    expect(read).toEqual(report("running", [{ rank: 0, phase: "ready" }]));
    expect(JSON.stringify(read)).not.toContain("secret");
  });
});

describe("groupProgressEvents", () => {
  it("sends the group and every rank first, then only what changed", () => {
    const first = report("barrier", [
      { rank: 0, phase: "loading", pid: 7 },
      { rank: 1, phase: "loading", pid: 8 },
    ]);
    expect(groupProgressEvents(first, "train-1")).toEqual([
      { type: "group", id: "dep-abc", state: "barrier", job: "train-1", worldSize: 2 },
      { type: "rank", group: "dep-abc", rank: 0, phase: "loading", pid: 7 },
      { type: "rank", group: "dep-abc", rank: 1, phase: "loading", pid: 8 },
    ]);
    const second = report("barrier", [
      { rank: 0, phase: "ready", pid: 7 },
      { rank: 1, phase: "loading", pid: 8 },
    ]);
    expect(groupProgressEvents(second, "train-1", first)).toEqual([
      { type: "rank", group: "dep-abc", rank: 0, phase: "ready", pid: 7 },
    ]);
    const third = report("stopped", [
      { rank: 0, phase: "exited", pid: 7, code: 0 },
      { rank: 1, phase: "exited", pid: 8, signal: "SIGTERM" },
    ]);
    expect(groupProgressEvents(third, "train-1", second)).toEqual([
      { type: "group", id: "dep-abc", state: "stopped", job: "train-1", worldSize: 2 },
      { type: "rank", group: "dep-abc", rank: 0, phase: "exited", pid: 7, code: 0 },
      { type: "rank", group: "dep-abc", rank: 1, phase: "exited", pid: 8, signal: "SIGTERM" },
    ]);
    expect(groupProgressEvents(third, "train-1", third)).toEqual([]);
  });
});

/** What the coordinator's inspection sees when a job changes state. */
function jobChanged(job: string, state: string): InspectionEvent {
  const effects = [{ type: "job.changed", job, kind: "train", state }];
  return {
    type: "@xstate.action",
    action: { type: "xstate.emit", params: { event: { type: "effects", effects } } },
  } as unknown as InspectionEvent;
}

describe("groupFeed", () => {
  it("feeds a group launched without a job (a simulation's) straight from its reports", () => {
    const events: DashboardEvent[] = [];
    const groups = groupFeed((event) => events.push(event));
    groups.report(report("launching", [{ rank: 0, phase: "spawning" }]));
    groups.report(report("launching", [{ rank: 0, phase: "loading", pid: 3 }]));
    groups.jobChanged("some-job", "completed");
    expect(events).toEqual([
      {
        type: "group",
        id: "dep-abc",
        state: "launching",
        worldSize: 2,
        charts: [chartOf(groupMachine), chartOf(rankMachine)],
      },
      { type: "rank", group: "dep-abc", rank: 0, phase: "spawning" },
      { type: "rank", group: "dep-abc", rank: 0, phase: "loading", pid: 3 },
    ]);
  });

  it("brings the teardown's chart with its first state, and each chart once", () => {
    const events: DashboardEvent[] = [];
    const groups = groupFeed((event) => events.push(event));
    groups.report(report("running", [{ rank: 0, phase: "ready" }]));
    groups.report({ ...report("stopping", [{ rank: 0, phase: "stopping" }]), teardown: "term" });
    groups.report({ ...report("stopping", []), deployment: "dep-two", teardown: "sweep.reading" });
    groups.report({ ...report("stopped", [{ rank: 0, phase: "exited" }]), teardown: "verified" });
    const shown = events.filter((e) => e.type === "group");
    expect(shown.map((e) => [e.id, e.state, e.teardown, e.charts?.map((c) => c.machine)])).toEqual([
      ["dep-abc", "running", undefined, ["group", "rank"]],
      ["dep-abc", "stopping", "term", ["teardown"]],
      ["dep-two", "stopping", "sweep.reading", undefined],
      ["dep-abc", "stopped", "verified", undefined],
    ]);
    const model = new DashboardModel();
    for (const event of events) model.apply(0, event);
    const state = model.snapshot();
    expect(Object.keys(state.charts).sort()).toEqual(["group", "rank", "teardown"]);
    expect(state.groups["dep-two"]?.teardown).toBe("sweep.reading");
    // The page highlights `teardown.sweep` and `teardown.sweep.reading`: both are on the chart.
    const ids = state.charts.teardown!.states.map((s) => s.id);
    expect(ids).toEqual(expect.arrayContaining(["teardown.sweep", "teardown.sweep.reading"]));
  });
});

describe("inspectionFeed and rank jobs' progress", () => {
  it("shows a group whose job stopped running before its last report as unreported", () => {
    const events: DashboardEvent[] = [];
    const feed = inspectionFeed((event) => events.push(event));
    const running = report("running", [{ rank: 0, phase: "ready", pid: 7 }]);
    feed(progressEmit("train-1", groupProgressMessage(running)));
    const start = events.length;
    feed(jobChanged("train-1", "ready")); // its worker was lost: the job waits for another
    expect(events.slice(start)).toEqual([
      { type: "group", id: "dep-abc", state: "unreported", job: "train-1" },
      { type: "job", id: "train-1", kind: "train", state: "ready" },
    ]);
    // A group that reported its end keeps it when its job completes.
    const other = { ...report("stopped", []), deployment: "dep-def" };
    feed(progressEmit("train-2", groupProgressMessage(other)));
    const before = events.length;
    feed(jobChanged("train-2", "completed"));
    expect(events.slice(before).map((e) => e.type)).toEqual(["job"]);
  });

  it("turns a connection's emitted group report into group and rank events on the model", () => {
    const events: DashboardEvent[] = [];
    const feed = inspectionFeed((event) => events.push(event));
    const model = new DashboardModel();
    const loading = report("barrier", [
      { rank: 0, phase: "loading", pid: 7 },
      { rank: 1, phase: "spawning" },
    ]);
    feed(progressEmit("train-1", groupProgressMessage(loading)));
    feed(progressEmit("other", "parsing 3/10"));
    feed(progressEmit("other", undefined));
    feed(progressEmit("train-1", groupProgressMessage(loading)));
    expect(events).toHaveLength(3);
    const done = report("stopped", [
      { rank: 0, phase: "exited", pid: 7, code: 0 },
      { rank: 1, phase: "failed", pid: 8, code: 2 },
    ]);
    feed(progressEmit("train-1", groupProgressMessage(done)));
    expect(events).toHaveLength(6);
    for (const event of events) model.apply(0, event);
    expect(model.snapshot().groups).toEqual({
      "dep-abc": {
        id: "dep-abc",
        state: "stopped",
        job: "train-1",
        worldSize: 2,
        ranks: {
          "0": { phase: "exited", pid: 7, code: 0 },
          "1": { phase: "failed", pid: 8, code: 2 },
        },
      },
    });
  });
});
