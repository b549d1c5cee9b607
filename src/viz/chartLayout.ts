import { type ChartState, indexChart, type StateChart, transitionLabel } from "./stateChart.ts";

/** A state's box, in absolute coordinates. */
export interface LaidOutState {
  id: string;
  key: string;
  type: ChartState["type"];
  x: number;
  y: number;
  w: number;
  h: number;
  /** Nesting depth (top-level states are 1). */
  depth: number;
}

/** An arrow from one box to another, with the events that take it. */
export interface LaidOutEdge {
  source: string;
  target: string;
  label: string;
  /** An SVG path (`M x y C ...`). */
  path: string;
  labelX: number;
  labelY: number;
  /** Where the label sits against (labelX, labelY): centred, or starting there. */
  anchor: "middle" | "start";
}

/** A machine's chart, ready to draw as SVG: boxes, arrows, and what each state handles in place. */
export interface ChartLayout {
  machine: string;
  width: number;
  height: number;
  states: LaidOutState[];
  edges: LaidOutEdge[];
  /** Transitions that only run actions, by the state that handles them. */
  handlers: Record<string, string[]>;
  /** The initial top-level state. */
  initial: string | undefined;
}

const ATOM_H = 34;
const GAP_X = 150;
const GAP_Y = 26;
const PAD = 14;
const HEADER = 24;
const BAND_COLUMNS = 3;
const BAND_GAP = 70;

interface Box {
  w: number;
  h: number;
  /** Children's offsets inside this box. */
  place: Map<string, { x: number; y: number }>;
}

/**
 * Lays a chart out for the dashboard: each compound state's children in columns by their
 * distance from its initial state along transitions (breadth first), each nested box sized
 * to its children, arrows as curves between boxes labelled with their events. Pure and
 * deterministic, so the server computes it once per machine.
 *
 * @example
 * ```ts
 * const layout = chartLayout(stateChart(connectionMachine));
 * layout.states.find((s) => s.key === "busy"); // { x, y, w, h, ... }
 * ```
 */
export function chartLayout(chart: StateChart): ChartLayout {
  const { byId, parentOf } = indexChart(chart);
  /** The ancestor of `id` (or itself) that is a child of `parent`. */
  const childOf = (parent: string, id: string): string | undefined => {
    for (let s = byId.get(id); s; s = parentOf.get(s.id)) {
      if (parentOf.get(s.id)?.id === parent) return s.id;
    }
    return undefined;
  };
  const boxes = new Map<string, Box>();
  const size = (state: ChartState): Box => {
    if (state.children.length === 0) {
      const box = { w: Math.max(84, state.key.length * 8 + 28), h: ATOM_H, place: new Map() };
      boxes.set(state.id, box);
      return box;
    }
    const column = new Map<string, number>();
    if (state.type === "parallel") {
      for (const child of state.children) column.set(child.id, 0);
    } else {
      const start = state.initial ?? state.children[0]!.id;
      column.set(start, 0);
      const queue = [start];
      while (queue.length > 0) {
        const from = queue.shift()!;
        for (const t of chart.transitions) {
          if (childOf(state.id, t.source) !== from) continue;
          for (const target of t.targets) {
            const to = childOf(state.id, target);
            if (to === undefined || column.has(to)) continue;
            column.set(to, column.get(from)! + 1);
            queue.push(to);
          }
        }
      }
      const last = Math.max(...column.values());
      for (const child of state.children) if (!column.has(child.id)) column.set(child.id, last + 1);
    }
    const columns: ChartState[][] = [];
    for (const child of state.children) {
      const at = column.get(child.id)!;
      columns[at] = [...(columns[at] ?? []), child];
    }
    // Columns in bands of at most BAND_COLUMNS, one band under the other, so that a long
    // chain of states (teardown) stays readable instead of one very wide row.
    const place = new Map<string, { x: number; y: number }>();
    const filled = columns.filter((members) => members !== undefined);
    let top = HEADER;
    let width = 0;
    for (let band = 0; band * BAND_COLUMNS < filled.length; band++) {
      let x = PAD;
      let bottom = top;
      for (const members of filled.slice(band * BAND_COLUMNS, (band + 1) * BAND_COLUMNS)) {
        let y = top;
        let columnWidth = 0;
        for (const child of members) {
          const box = size(child);
          place.set(child.id, { x, y });
          y += box.h + GAP_Y;
          columnWidth = Math.max(columnWidth, box.w);
        }
        for (const child of members) {
          place.get(child.id)!.x += (columnWidth - boxes.get(child.id)!.w) / 2;
        }
        bottom = Math.max(bottom, y - GAP_Y);
        x += columnWidth + GAP_X;
      }
      width = Math.max(width, x - GAP_X + PAD);
      top = bottom + BAND_GAP;
    }
    const box = { w: width, h: top - BAND_GAP + PAD, place };
    boxes.set(state.id, box);
    return box;
  };
  const rootBox = size(chart.root);

  const states: LaidOutState[] = [];
  const absolute = new Map<string, LaidOutState>();
  const position = (state: ChartState, x: number, y: number, depth: number) => {
    const box = boxes.get(state.id)!;
    if (depth > 0) {
      const laid = {
        id: state.id,
        key: state.key,
        type: state.type,
        x,
        y,
        w: box.w,
        h: box.h,
        depth,
      };
      states.push(laid);
      absolute.set(state.id, laid);
    }
    for (const child of state.children) {
      const at = box.place.get(child.id)!;
      position(child, x + at.x, y + at.y, depth + 1);
    }
  };
  position(chart.root, 0, 0, 0);

  const labels = new Map<string, string[]>();
  const handlers: Record<string, string[]> = {};
  for (const t of chart.transitions) {
    if (t.targets.length === 0) {
      handlers[t.source] = [...(handlers[t.source] ?? []), transitionLabel(t)];
      continue;
    }
    for (const target of t.targets) {
      const key = `${t.source}\n${target}`;
      labels.set(key, [...(labels.get(key) ?? []), transitionLabel(t)]);
    }
  }
  const edges: LaidOutEdge[] = [];
  let bend = 0;
  for (const [key, list] of labels) {
    const [source, target] = key.split("\n") as [string, string];
    const a = absolute.get(source);
    const b = absolute.get(target);
    if (!a || !b) {
      handlers[source] = [...(handlers[source] ?? []), ...list.map((l) => `${l} → ${target}`)];
      continue;
    }
    edges.push(curve(a, b, list.join(", "), bend++, states));
  }
  return {
    machine: chart.id,
    width: rootBox.w,
    height: rootBox.h + 40,
    states,
    edges,
    handlers,
    initial: chart.root.initial,
  };
}

/**
 * An arrow between two boxes: side to side when one is beside the other (bending below
 * when it goes back to the left), top to bottom when one is above the other.
 */
function curve(
  a: LaidOutState,
  b: LaidOutState,
  label: string,
  n: number,
  states: readonly LaidOutState[],
): LaidOutEdge {
  let sx: number;
  let sy: number;
  let tx: number;
  let ty: number;
  let sag = 0;
  if (b.x >= a.x + a.w || b.x + b.w <= a.x) {
    const right = b.x >= a.x + a.w;
    sx = right ? a.x + a.w : a.x;
    tx = right ? b.x : b.x + b.w;
    sy = a.y + a.h / 2;
    ty = b.y + b.h / 2;
    sag = right ? 0 : 40 + (n % 3) * 14;
  } else if (between(a, b, states)) {
    // Another box sits between them in the column: go around it on the right.
    sx = a.x + a.w;
    tx = b.x + b.w;
    sy = a.y + a.h / 2;
    ty = b.y + b.h / 2;
    const out = Math.max(sx, tx) + 40 + (n % 3) * 14;
    return {
      source: a.id,
      target: b.id,
      label,
      path: `M ${r(sx)} ${r(sy)} C ${r(out)} ${r(sy)} ${r(out)} ${r(ty)} ${r(tx)} ${r(ty)}`,
      labelX: r(out + 4),
      labelY: r((sy + ty) / 2),
      anchor: "start",
    };
  } else {
    const down = b.y >= a.y + a.h;
    sx = a.x + a.w / 2 + (down ? 6 : -6);
    tx = b.x + b.w / 2 + (down ? 6 : -6);
    sy = down ? a.y + a.h : a.y;
    ty = down ? b.y : b.y + b.h;
  }
  const midX = (sx + tx) / 2;
  const vertical = Math.abs(tx - sx) < 20;
  const path =
    sag === 0 && sx !== tx && sy !== ty && Math.abs(tx - sx) > Math.abs(ty - sy)
      ? `M ${r(sx)} ${r(sy)} C ${r(midX)} ${r(sy)} ${r(midX)} ${r(ty)} ${r(tx)} ${r(ty)}`
      : `M ${r(sx)} ${r(sy)} C ${r(sx)} ${r(sy + sag)} ${r(tx)} ${r(ty + sag)} ${r(tx)} ${r(ty)}`;
  return {
    source: a.id,
    target: b.id,
    label,
    path,
    labelX: r(vertical ? midX + 6 : midX),
    labelY: r((sy + ty) / 2 + sag * 0.75 - 4),
    anchor: vertical ? "start" : "middle",
  };
}

/** Whether a box other than the two (and their ancestors) lies between them vertically. */
function between(a: LaidOutState, b: LaidOutState, states: readonly LaidOutState[]): boolean {
  const top = Math.min(a.y + a.h, b.y + b.h);
  const bottom = Math.max(a.y, b.y);
  const x = (Math.max(a.x, b.x) + Math.min(a.x + a.w, b.x + b.w)) / 2;
  return states.some(
    (s) =>
      s !== a &&
      s !== b &&
      !a.id.startsWith(`${s.id}.`) &&
      !b.id.startsWith(`${s.id}.`) &&
      s.x < x &&
      x < s.x + s.w &&
      s.y >= top &&
      s.y + s.h <= bottom,
  );
}

function r(n: number): number {
  return Math.round(n * 10) / 10;
}
