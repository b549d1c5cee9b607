import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findCycle } from "../../src/graph/findCycle.ts";

type Graph = Map<string, string[]>;

function cycleIn(graph: Graph): string[] | undefined {
  return findCycle(graph.keys(), (id) => graph.get(id));
}

function expectRealCycle(graph: Graph, cycle: string[] | undefined): void {
  expect(cycle).toBeDefined();
  const ids = cycle!;
  expect(ids.length).toBeGreaterThanOrEqual(2);
  expect(ids[0]).toBe(ids[ids.length - 1]);
  expect(new Set(ids.slice(1)).size).toBe(ids.length - 1);
  const missing = ids.slice(1).filter((id, i) => !graph.get(ids[i]!)?.includes(id));
  expect(missing).toEqual([]);
}

/** Nodes n0..n(size-1); node i depends only on lower-numbered nodes, so there is no cycle. */
const dags = fc.integer({ min: 1, max: 30 }).chain((size) =>
  fc.array(fc.tuple(fc.nat(size - 1), fc.nat(size - 1)), { maxLength: size * 3 }).map((pairs) => {
    const graph: Graph = new Map();
    for (let i = 0; i < size; i++) graph.set(`n${i}`, []);
    for (const [x, y] of pairs) {
      if (x !== y) graph.get(`n${Math.max(x, y)}`)!.push(`n${Math.min(x, y)}`);
    }
    return graph;
  }),
);

function reachableFrom(graph: Graph, start: string): string[] {
  const seen = new Set<string>();
  const todo = [...graph.get(start)!];
  while (todo.length > 0) {
    const id = todo.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    todo.push(...graph.get(id)!);
  }
  return [...seen];
}

describe("findCycle", () => {
  it("returns undefined for an empty graph and for a DAG", () => {
    expect(cycleIn(new Map())).toBeUndefined();
    const diamond: Graph = new Map([
      ["d", ["b", "c"]],
      ["b", ["a"]],
      ["c", ["a"]],
      ["a", []],
    ]);
    expect(cycleIn(diamond)).toBeUndefined();
  });

  it("returns a cycle whose first id equals the last", () => {
    const graph: Graph = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
    ]);
    expect(cycleIn(graph)).toEqual(["a", "b", "c", "a"]);
  });

  it("finds a self-dependency", () => {
    expect(cycleIn(new Map([["a", ["a"]]]))).toEqual(["a", "a"]);
  });

  it("returns only the cycle, not the path that led to it", () => {
    const graph: Graph = new Map([
      ["root", ["x"]],
      ["x", ["y"]],
      ["y", ["z"]],
      ["z", ["x"]],
    ]);
    expect(cycleIn(graph)).toEqual(["x", "y", "z", "x"]);
  });

  it("ignores deps that are not in the graph", () => {
    const graph: Graph = new Map([
      ["a", ["gone", "b"]],
      ["b", ["gone"]],
    ]);
    expect(cycleIn(graph)).toBeUndefined();
  });

  it("handles a chain of 100,000 nodes without growing the stack", () => {
    const graph: Graph = new Map();
    const size = 100_000;
    for (let i = 0; i < size; i++) graph.set(`n${i}`, i + 1 < size ? [`n${i + 1}`] : []);
    expect(cycleIn(graph)).toBeUndefined();
    graph.set(`n${size - 1}`, ["n0"]);
    const cycle = cycleIn(graph);
    expect(cycle).toHaveLength(size + 1);
    expectRealCycle(graph, cycle);
  });

  it("returns undefined for every DAG", () => {
    fc.assert(fc.property(dags, (graph) => cycleIn(graph) === undefined));
  });

  it("returns a real cycle once a back edge closes one", () => {
    fc.assert(
      fc.property(dags, fc.nat(), fc.nat(), (graph, pickFrom, pickTo) => {
        const from = `n${pickFrom % graph.size}`;
        const reachable = reachableFrom(graph, from);
        fc.pre(reachable.length > 0);
        graph.get(reachable[pickTo % reachable.length]!)!.push(from);
        expectRealCycle(graph, cycleIn(graph));
      }),
    );
  });
});
