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
  /** How wide its name may be drawn: inside its box, or a compound's title in its place. */
  room: number;
}

/** An arrow from one box to another, with the events that take it. */
export interface LaidOutEdge {
  source: string;
  target: string;
  /** The events that take it, in full (the arrow's tooltip). */
  label: string;
  /** The label as drawn: cut to {@link LABEL_CHARS} characters, ending `…`. */
  text: string;
  /** An SVG path (`M x y C ...`). */
  path: string;
  labelX: number;
  labelY: number;
  /** Where the label sits against (labelX, labelY): centred, or starting there. */
  anchor: "middle" | "start";
  /** How wide the label may be drawn: the place kept free for it, from an estimate of its width. */
  room: number;
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
/** Height of a line of label text, and how far a loop on a state reaches out of its box. */
const LINE = 13;
const LOOP = 26;
/** Labels longer than this are cut (the whole label is the arrow's tooltip). */
const LABEL_CHARS = 34;
/** Where a compound state's name starts, from its box's left side (the page draws it there). */
const TITLE_X = 8;
/** A state's name is drawn at 11 px, a label at 10. */
const TITLE_SCALE = 1.1;
/** Space kept on either side of a state's name inside its box. */
const NAME_PAD = 4;

interface Box {
  w: number;
  h: number;
  /** Children's offsets inside this box. */
  place: Map<string, { x: number; y: number }>;
}

/**
 * Lays a chart out for the dashboard: each compound state's children in columns by their
 * distance from its initial state along transitions (breadth first), each nested box sized
 * to its children, arrows as curves between boxes labelled with their events, a transition
 * that re-enters its own state as a loop outside its box. Each label goes where no box,
 * compound state's title or other label is: its usual place, else the first free place
 * along its arrow or a line or more above or below (shortest arrows first, as they have
 * the least room); the chart is as wide as its labels reach. Pure and deterministic, so
 * the server computes it once per machine.
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
      const compound = state.type === "compound" || state.type === "parallel";
      const laid = {
        id: state.id,
        key: state.key,
        type: state.type,
        x,
        y,
        w: box.w,
        h: box.h,
        depth,
        room: compound ? titleWidth(state.key) : box.w - 2 * NAME_PAD,
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
  const arrows: { source: string; target: string; label: string; text: string; arrow: Arrow }[] =
    [];
  let bend = 0;
  for (const [key, list] of labels) {
    const [source, target] = key.split("\n") as [string, string];
    const a = absolute.get(source);
    const b = absolute.get(target);
    if (!a || !b) {
      // A machine-wide transition (the root has no box): listed with where it goes.
      const to = target.slice(chart.id.length + 1);
      handlers[source] = [...(handlers[source] ?? []), ...list.map((l) => `${l} → ${to}`)];
      continue;
    }
    const label = list.join(", ");
    const text = label.length > LABEL_CHARS ? `${label.slice(0, LABEL_CHARS - 1)}…` : label;
    arrows.push({
      source,
      target,
      label,
      text,
      arrow: a === b ? loop(a) : curve(a, b, bend++, states),
    });
  }
  // What a label must not cover: every box but a compound's (whose inside holds its
  // children), a compound's title, and the labels placed before it. Short arrows, which
  // have the least room beside them, are labelled first.
  const taken: Rect[] = states.map((s) =>
    s.type === "compound" || s.type === "parallel"
      ? { x: s.x + TITLE_X - 2, y: s.y + 3, w: s.room + 4, h: 16 }
      : { x: s.x, y: s.y, w: s.w, h: s.h },
  );
  const placed = new Map<Arrow, ReturnType<typeof placeLabel>>();
  for (const { arrow, text } of [...arrows].sort((a, b) => reach(a.arrow) - reach(b.arrow))) {
    const at = placeLabel(arrow, textWidth(text), taken);
    taken.push(at.rect);
    placed.set(arrow, at);
  }
  const edges: LaidOutEdge[] = arrows.map(({ arrow, ...edge }) => {
    const at = placed.get(arrow)!;
    return {
      ...edge,
      path: pathOf(arrow.points),
      labelX: r(at.x),
      labelY: r(at.y),
      anchor: at.anchor,
      room: r(at.rect.w),
    };
  });
  const right = Math.max(rootBox.w, ...taken.map((t) => t.x + t.w));
  const bottom = Math.max(rootBox.h, ...taken.map((t) => t.y + t.h));
  return {
    machine: chart.id,
    width: Math.ceil(right),
    height: Math.ceil(bottom) + 40,
    states,
    edges,
    handlers,
    initial: chart.root.initial,
  };
}

type Point = readonly [number, number];

interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A cubic curve (start, two control points, end) and where its label goes unless taken. */
interface Arrow {
  points: readonly [Point, Point, Point, Point];
  label: { x: number; y: number; anchor: "middle" | "start" };
}

/**
 * An arrow between two boxes: side to side when one is beside the other (bending below
 * when it goes back to the left), top to bottom when one is above the other, around on
 * the right when another box sits between them in a column.
 */
function curve(
  a: LaidOutState,
  b: LaidOutState,
  n: number,
  states: readonly LaidOutState[],
): Arrow {
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
    sx = a.x + a.w;
    tx = b.x + b.w;
    sy = a.y + a.h / 2;
    ty = b.y + b.h / 2;
    const out = Math.max(sx, tx) + 40 + (n % 3) * 14;
    return {
      points: [
        [sx, sy],
        [out, sy],
        [out, ty],
        [tx, ty],
      ],
      label: { x: out + 4, y: (sy + ty) / 2, anchor: "start" },
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
  const flat = sag === 0 && sx !== tx && sy !== ty && Math.abs(tx - sx) > Math.abs(ty - sy);
  return {
    points: flat
      ? [
          [sx, sy],
          [midX, sy],
          [midX, ty],
          [tx, ty],
        ]
      : [
          [sx, sy],
          [sx, sy + sag],
          [tx, ty + sag],
          [tx, ty],
        ],
    // Beside a vertical arrow the text is centred on it; above any other.
    label: {
      x: vertical ? midX + 6 : midX,
      y: (sy + ty) / 2 + (vertical ? 4 : sag * 0.75 - 4),
      anchor: vertical ? "start" : "middle",
    },
  };
}

/**
 * A transition that leaves a state and enters it again (`reenter`): a loop out of the
 * box's top near its right corner and back into its right side, outside the box.
 */
function loop(a: LaidOutState): Arrow {
  const sx = a.x + a.w - 18;
  const ty = a.y + 10;
  return {
    points: [
      [sx, a.y],
      [sx, a.y - LOOP],
      [a.x + a.w + LOOP, ty],
      [a.x + a.w, ty],
    ],
    label: { x: a.x + a.w + 8, y: a.y - 6, anchor: "start" },
  };
}

/**
 * Where an arrow's label goes: its usual place if nothing is there, else the first free
 * place along the curve (its middle first) or a line above or below one; its usual place
 * when none is free.
 */
function placeLabel(
  arrow: Arrow,
  width: number,
  taken: readonly Rect[],
): { x: number; y: number; anchor: "middle" | "start"; rect: Rect } {
  const [p0, c1, c2, p3] = arrow.points;
  const along = (t: number): Point => {
    const u = 1 - t;
    const at = (i: 0 | 1) =>
      u * u * u * p0[i] + 3 * u * u * t * c1[i] + 3 * u * t * t * c2[i] + t * t * t * p3[i];
    return [at(0), at(1)];
  };
  const candidates = [arrow.label];
  for (const t of [0.5, 0.35, 0.65, 0.2, 0.8]) {
    const [x, y] = along(t);
    candidates.push({ x, y: y - 4, anchor: "middle" }, { x: x + 6, y: y + 4, anchor: "start" });
  }
  const onCurve = candidates.length;
  for (let lines = 1; lines <= 6; lines++) {
    for (const shift of [-lines * LINE, lines * LINE]) {
      for (const c of candidates.slice(0, onCurve)) candidates.push({ ...c, y: c.y + shift });
    }
  }
  const rectOf = (c: Arrow["label"]): Rect => ({
    x: c.anchor === "middle" ? c.x - width / 2 : c.x,
    y: c.y - 10,
    w: width,
    h: 13,
  });
  const free = candidates.find((c) => {
    const rect = rectOf(c);
    return rect.x >= -8 && rect.y >= -8 && !taken.some((t) => overlaps(rect, t));
  });
  const chosen = free ?? arrow.label;
  return { ...chosen, rect: rectOf(chosen) };
}

/** How wide a compound state's name may be: its text at the page's 11 px. */
function titleWidth(key: string): number {
  return textWidth(key) * TITLE_SCALE + 2;
}

/**
 * About how wide a text is at the page's 10 px: capitals, digits and `_` about 6.6 px, lower
 * case 5.4, the rest (spaces, commas, brackets) 3.4. An estimate: a browser's font may draw
 * it wider (DejaVu Sans, Linux's usual one, up to 6 % wider, a serif or monospaced one 13 %),
 * so the page squeezes a text into its `room` when it measures it wider.
 */
function textWidth(text: string): number {
  let width = 4;
  for (const c of text) width += /[A-Z0-9_…]/.test(c) ? 6.6 : /[a-z]/.test(c) ? 5.4 : 3.4;
  return width;
}

function overlaps(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/** How far an arrow goes, end to end. */
function reach({ points: [from, , , to] }: Arrow): number {
  return Math.hypot(to[0] - from[0], to[1] - from[1]);
}

function pathOf([p0, c1, c2, p3]: Arrow["points"]): string {
  const at = ([x, y]: Point) => `${r(x)} ${r(y)}`;
  return `M ${at(p0)} C ${at(c1)} ${at(c2)} ${at(p3)}`;
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
