/**
 * The dashboard's graph layout: a column of many jobs wraps into sub-columns so that the
 * graph keeps its panel's height and is drawn at its own size, each heading with the room of
 * its whole column; no two nodes share a place, at any job count.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DashboardModel } from "../../src/viz/dashboardModel.ts";
import { GRAPH_SIZES, graphLayout } from "../../src/viz/graphLayout.ts";
import { propertyParameters, propertyRuns, throwIfFailed } from "../fixtures/propertyRun.ts";

/** A simulated 100-job graph's shape: 35 fetches, 30 parses, 20 transforms, 14 merges, 1 report. */
function hundred() {
  const shape: [string, number][] = [
    ["fetch-remote-dataset", 35],
    ["parse", 30],
    ["transform", 20],
    ["merge", 14],
    ["report", 1],
  ];
  return shape.flatMap(([kind, n], layer) =>
    Array.from({ length: n }, (_, i) => ({ id: `${kind}${i}`, kind, layer })),
  );
}

describe("graphLayout", () => {
  it("wraps a column of 35 jobs into three sub-columns, so the graph keeps to about 300 px", () => {
    const { layout, at } = graphLayout(hundred(), "jobs");
    expect(layout.height).toBeLessThanOrEqual(300);
    const fetchXs = new Set(
      hundred()
        .filter((n) => n.layer === 0)
        .map((n) => at.get(n.id)!.x),
    );
    expect([...fetchXs]).toEqual([20, 42, 64]);
    // Its heading has the whole column's room, the next column starting after it.
    expect(layout.headings[0]).toEqual({ x: 13, y: 14, room: 108, text: "fetch-remote-dataset" });
    expect(layout.headings[1]!.x).toBe(13 + 114);
    expect(layout.headings.map((h) => h.text)).toEqual([
      "fetch-remote-dataset",
      "parse",
      "transform",
      "merge",
      "report",
    ]);
    expect(layout.width).toBe(at.get("report0")!.x + GRAPH_SIZES.jobs.column);
  });

  it("gives every node a place of its own, inside the graph and under the headings, and every heading a room of its own (property)", () => {
    const nodes = fc
      .array(fc.tuple(fc.integer({ min: 0, max: 12 }), fc.constantFrom("a", "bb", "ccc")), {
        minLength: 1,
        maxLength: 300,
      })
      .map((list) => list.map(([layer, kind], i) => ({ id: `j${i}`, kind, layer })));
    throwIfFailed(
      fc.check(
        fc.property(nodes, fc.constantFrom("jobs" as const, "kinds" as const), (list, mode) => {
          const { layout, at } = graphLayout(list, mode);
          const size = GRAPH_SIZES[mode];
          const places = new Set([...at.values()].map(({ x, y }) => `${x},${y}`));
          const inside = [...at.values()].every(
            ({ x, y }) => x >= 20 && x < layout.width && y >= size.top && y < layout.height,
          );
          const headings = layout.headings.every(
            (h, i) => i === 0 || h.x >= layout.headings[i - 1]!.x + layout.headings[i - 1]!.room,
          );
          return (
            places.size === list.length &&
            inside &&
            headings &&
            layout.height <= size.top + size.rows * size.down &&
            layout.headings.length ===
              (mode === "jobs" ? new Set(list.map((n) => n.layer)).size : 0)
          );
        }),
        propertyParameters(propertyRuns(200)),
      ),
      import.meta.url,
    );
  });
});

describe("DashboardModel's graph", () => {
  it("places a job added while running in the first column, below the others, not over a heading", () => {
    const model = new DashboardModel();
    model.apply(0, {
      type: "graph",
      jobs: [
        { id: "a", kind: "fetch", deps: [], state: "ready" },
        { id: "b", kind: "parse", deps: ["a"], state: "blocked" },
      ],
    });
    model.takeDiff();
    model.apply(1, { type: "job", id: "c", kind: "need", state: "ready" });
    const diff = model.takeDiff()!;
    const s = model.snapshot();
    expect(s.jobs.c).toMatchObject({ layer: 0, x: 20, y: 34 + 22 });
    expect(s.graph.headings[0]!.text).toBe("fetch, need");
    expect(diff.graph).toEqual(s.graph);
    expect(diff.jobs?.c).toEqual(s.jobs.c);
  });
});
