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
});
