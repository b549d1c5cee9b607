/**
 * The dashboard fed only from XState inspection: a real run's coordinator and connection
 * actors, folded into the model, give the run's own counts, and every worker's chart.
 */
import { describe, expect, it } from "vitest";
import { recordSimulation } from "../../src/cli/simDashboard.ts";
import { createEngine, job } from "../../src/index.ts";
import { simulate } from "../../src/sim/simulate.ts";
import { DashboardModel, replayTo } from "../../src/viz/dashboardModel.ts";
import { inspectionFeed } from "../../src/viz/inspectionFeed.ts";

describe("inspection feed", () => {
  it.each([
    [60, "jobs"],
    [600, "kinds"],
  ] as const)("a %i-job run's counts match its result (graph drawn by %s)", async (n, mode) => {
    const model = new DashboardModel();
    let at = 0;
    const engine = createEngine({
      jobs: {
        leaf: (i: number) => {
          if (i % 7 === 3) throw new Error(`leaf ${i} fails`);
          return i;
        },
        sum: (_: null, ctx) => (ctx.results as number[]).reduce((a, b) => a + b, 0),
      },
      workers: 4,
      inspect: inspectionFeed((event) => model.apply(at++, event)),
    });
    const leaves = Array.from({ length: n - 2 }, (_, i) => job("leaf", i, { retries: 1 }));
    // One sum over leaves that work, one after a leaf that fails (so it is skipped).
    const sums = [leaves.filter((_, i) => i % 7 !== 3), [leaves[3]!]].map((after) =>
      job("sum", null, { after }),
    );

    const result = await engine.run([...sums, ...leaves]);

    const state = model.snapshot();
    expect(state.finished).toBe(true);
    expect(state.ok).toBe(result.ok);
    expect(state.total).toBe(result.jobs.size);
    expect(state.graphMode).toBe(mode);
    const { completed, failed, skipped, cancelled, cached } = result.counts;
    expect(state.outcomes).toEqual({ completed, failed, skipped, cancelled, cached });
    expect(failed).toBeGreaterThan(0);
    expect(skipped).toBe(1);
    expect(state.counts.running + state.counts.ready + state.counts.blocked).toBe(0);
    const workers = Object.values(state.actors).filter((a) => a.machine === "connection");
    // Each labelled by its worker and its connection, as the coordinator knows it.
    expect(workers.map((w) => w.label.split(" ")[0]).sort()).toEqual([
      "inproc-1",
      "inproc-2",
      "inproc-3",
      "inproc-4",
    ]);
    for (const worker of workers) {
      expect(worker.label).toMatch(/^inproc-\d \(connection \S+\)$/);
      expect(worker.label).toContain(`(connection ${worker.id.slice("connection:".length)})`);
    }
    for (const worker of workers) {
      expect(worker.states).toEqual(["connection.closed"]);
      // Closed at the end of the run, as normal: nothing to say why.
      expect(worker.closed).toBeUndefined();
    }
    expect(Object.keys(state.charts).sort()).toEqual(["connection", "coordinator"]);
  });

  it.each([
    [4, "jobs"],
    [400, "kinds"],
  ] as const)(
    "draws the arrows of jobs ctx.need added while running (%i reports, by %s)",
    async (n, mode) => {
      // A kind first seen while the run ran joined the graph with no arrows: its jobs were told
      // without their dependencies, and the job that needed them kept the ones it started with.
      const model = new DashboardModel();
      let at = 0;
      const engine = createEngine({
        jobs: {
          fetch: (i: number) => i,
          parse: (i: number) => i * 2,
          // The needs carry the needed job's own dependency: a report depends on both.
          report: async (i: number, ctx) => {
            const [parsed] = await ctx.need(job("parse", i, { after: [job("fetch", i)] }));
            return parsed as number;
          },
        },
        workers: 2,
        inspect: inspectionFeed((event) => model.apply(at++, event)),
      });

      const result = await engine.run(Array.from({ length: n }, (_, i) => job("report", i)));

      expect(result.ok).toBe(true);
      const state = model.snapshot();
      expect(state.graphMode).toBe(mode);
      expect(state.kinds.fetch?.deps).toEqual([]);
      expect(state.kinds.parse?.deps).toEqual(["fetch"]);
      expect(state.kinds.report?.deps.sort()).toEqual(["fetch", "parse"]);
      expect(Object.fromEntries(Object.values(state.kinds).map((k) => [k.kind, k.layer]))).toEqual({
        fetch: 0,
        parse: 1,
        report: 2,
      });
      if (mode === "jobs") {
        const byKind = (kind: string) => Object.values(state.jobs).filter((j) => j.kind === kind);
        for (const report of byKind("report")) {
          expect(report.layer).toBe(2);
          expect(report.deps.map((d) => state.jobs[d]?.kind).sort()).toEqual(["fetch", "parse"]);
        }
        for (const parse of byKind("parse")) expect(parse.layer).toBe(1);
        // Each labelled by kind and input, those the run added too, for the page's hover.
        expect(
          Object.values(state.jobs)
            .map((j) => j.label)
            .sort(),
        ).toEqual(
          ["fetch", "parse", "report"].flatMap((kind) => [0, 1, 2, 3].map((i) => `${kind} ${i}`)),
        );
      }
    },
  );

  it("says why a worker's connection closed when it was lost: cut, crashed or silent", async () => {
    const { trace } = await recordSimulation(2, (hooks) => simulate({ seed: 2, ...hooks }));
    const lost = trace.flatMap(({ event }) =>
      event.type === "actor" && event.closed !== undefined ? [event] : [],
    );
    for (const actor of lost) {
      expect(actor.machine).toBe("connection");
      expect(actor.states).toEqual(["connection.closed"]);
    }
    const why = lost.map((actor) => actor.closed);
    expect(why).toContain("1006: connection reset by peer");
    expect(why).toContainEqual(
      expect.stringMatching(
        /^4005: lease of job [0-9a-f]{16} expired: the worker sent no heartbeat before the lease deadline$/,
      ),
    );
    // The model keeps it for the page, whenever the page connects.
    const model = replayTo(trace, trace.length);
    expect(Object.values(model.snapshot().actors).some((a) => a.closed?.startsWith("4005: "))).toBe(
      true,
    );
  });
});
