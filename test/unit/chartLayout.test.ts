/** The dashboard's chart layout: nested boxes inside their parents, siblings apart, every transition drawn. */
import { describe, expect, it } from "vitest";
import type { AnyStateMachine } from "xstate";
import { machineCatalog } from "../../src/machines/catalog.ts";
import { chartLayout, type LaidOutState } from "../../src/viz/chartLayout.ts";
import { stateChart } from "../../src/viz/stateChart.ts";

const inside = (a: LaidOutState, b: LaidOutState) =>
  a.x >= b.x && a.y >= b.y && a.x + a.w <= b.x + b.w && a.y + a.h <= b.y + b.h;
const overlap = (a: LaidOutState, b: LaidOutState) =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

describe("chartLayout", () => {
  it.each(Object.entries(machineCatalog) as [string, AnyStateMachine][])(
    "%s: boxes nest, siblings do not overlap, every transition is drawn or listed",
    (_, machine) => {
      const chart = stateChart(machine);
      const layout = chartLayout(chart);
      const byId = new Map(layout.states.map((s) => [s.id, s]));
      for (const state of layout.states) {
        const parent = byId.get(state.id.slice(0, state.id.lastIndexOf(".")));
        if (parent) expect(inside(state, parent), state.id).toBe(true);
        expect(state.x + state.w).toBeLessThanOrEqual(layout.width);
        expect(state.y + state.h).toBeLessThanOrEqual(layout.height);
        for (const other of layout.states) {
          const siblings =
            other !== state &&
            other.id.slice(0, other.id.lastIndexOf(".")) ===
              state.id.slice(0, state.id.lastIndexOf("."));
          if (siblings) expect(overlap(state, other), `${state.id} / ${other.id}`).toBe(false);
        }
      }
      expect(layout.states.length).toBe(byId.size);
      for (const t of chart.transitions) {
        if (t.source === chart.root.id) continue;
        if (t.targets.length === 0) expect(layout.handlers[t.source]?.length).toBeGreaterThan(0);
        for (const target of t.targets) {
          expect(layout.edges.some((e) => e.source === t.source && e.target === target)).toBe(true);
        }
      }
    },
  );

  it.each(Object.entries(machineCatalog) as [string, AnyStateMachine][])(
    "%s: each text's room is free of every other text's room and of every state's box",
    (_, machine) => {
      const layout = chartLayout(stateChart(machine));
      // A label's text is drawn 10 px above to 3 px below its baseline; the page keeps each
      // text within its room, squeezing it when the browser's font draws it wider.
      const labels = layout.edges.map((e) => ({
        what: e.text,
        x: e.anchor === "middle" ? e.labelX - e.room / 2 : e.labelX,
        y: e.labelY - 10,
        w: e.room,
        h: 13,
      }));
      const boxes = layout.states.map((s) =>
        s.type === "compound" || s.type === "parallel"
          ? { what: `title ${s.id}`, x: s.x + 8, y: s.y + 4, w: s.room, h: 14 }
          : { what: `box ${s.id}`, ...s },
      );
      for (const s of layout.states) {
        if (s.type !== "compound" && s.type !== "parallel") {
          // Its name, centred in its box, fits inside it.
          expect(s.room, s.id).toBeGreaterThanOrEqual(s.key.length * 5.4);
          expect(s.room, s.id).toBeLessThan(s.w);
        } else expect(s.x + 8 + s.room, s.id).toBeLessThanOrEqual(s.x + s.w);
      }
      const clashes: string[] = [];
      labels.forEach((label, i) => {
        expect(label.w, label.what).toBeGreaterThanOrEqual(label.what.length * 3.4);
        for (const other of [...labels.slice(i + 1), ...boxes]) {
          if (overlap(label as unknown as LaidOutState, other as unknown as LaidOutState)) {
            clashes.push(`${label.what} / ${other.what}`);
          }
        }
        expect(label.x + label.w, label.what).toBeLessThanOrEqual(layout.width);
      });
      expect(clashes).toEqual([]);
    },
  );

  it("draws a transition that re-enters its own state as a loop outside the state's box", () => {
    const layout = chartLayout(stateChart(machineCatalog.connection));
    const idle = layout.states.find((s) => s.id === "connection.registered.idle")!;
    const loop = layout.edges.find((e) => e.source === idle.id && e.target === idle.id)!;
    expect(loop.label).toBe("GRANT [tooLargeForWorker]");
    const [from, c1, c2, to] = [...loop.path.matchAll(/(-?[\d.]+) (-?[\d.]+)/g)].map((m) => ({
      x: Number(m[1]),
      y: Number(m[2]),
    }));
    const within = (p: { x: number; y: number }) =>
      p.x >= idle.x && p.x <= idle.x + idle.w && p.y >= idle.y && p.y <= idle.y + idle.h;
    const onEdge = (p: { x: number; y: number }) =>
      within(p) && (p.x === idle.x + idle.w || p.y === idle.y);
    expect(onEdge(from!) && onEdge(to!), loop.path).toBe(true);
    expect(within(c1!) || within(c2!), loop.path).toBe(false);
    expect(loop.labelX).toBeGreaterThan(idle.x + idle.w);
    expect(loop.labelY).toBeLessThan(idle.y);
  });
});
