/**
 * Where the dashboard draws its graph: each node's place, and by job each column's heading
 * (the kinds of its jobs). Drawn at its own size (one unit a pixel), never scaled down to
 * fit the panel, which scrolls instead: a heading is as legible for 300 jobs as for 3.
 */
export interface GraphLayout {
  width: number;
  height: number;
  /** By job, one per column: its jobs' kinds, left-aligned at `x`, cut to `room` by the page. */
  headings: { x: number; y: number; room: number; text: string }[];
}

/**
 * The sizes of each mode: a column's width (its heading's, by job), the distance between
 * two nodes, where the first row is, and the rows a column holds before it wraps into
 * another beside it, so that the graph stays about as tall as its panel (300 px) however
 * many jobs one column has.
 */
export const GRAPH_SIZES = {
  jobs: { column: 70, across: 22, down: 22, top: 34, rows: 12 },
  kinds: { column: 190, across: 190, down: 64, top: 16, rows: 4 },
} as const;

/** Left of the first column. */
const LEFT = 20;
/** A heading starts this far left of its column's nodes (a job's dot has a radius of 7). */
const HEADING_OFFSET = 7;

/**
 * Lays out `nodes`, in order, in their columns (`layer`: the longest chain of dependencies
 * before them), a column of more than `rows` nodes wrapping into as many sub-columns as it
 * needs, its nodes shared evenly among them (35 jobs: three sub-columns of 12, 12 and 11).
 * A column is as wide as its sub-columns need, and never narrower than its heading's room.
 *
 * @example
 * ```ts
 * const { layout, at } = graphLayout([{ id: "a", kind: "fetch", layer: 0 }], "jobs");
 * at.get("a"); // { x: 20, y: 34 }
 * layout.headings[0]!.text; // "fetch"
 * ```
 */
export function graphLayout(
  nodes: readonly { id: string; kind: string; layer: number }[],
  mode: "jobs" | "kinds",
): { layout: GraphLayout; at: Map<string, { x: number; y: number }> } {
  const size = GRAPH_SIZES[mode];
  const columns = new Map<number, { id: string; kind: string }[]>();
  for (const node of nodes) {
    const column = columns.get(node.layer) ?? [];
    column.push(node);
    columns.set(node.layer, column);
  }
  const at = new Map<string, { x: number; y: number }>();
  const headings: GraphLayout["headings"] = [];
  let x = LEFT;
  let rows = 0;
  for (const layer of [...columns.keys()].sort((a, b) => a - b)) {
    const column = columns.get(layer)!;
    const across = Math.ceil(column.length / size.rows);
    const down = Math.ceil(column.length / across);
    rows = Math.max(rows, down);
    column.forEach((node, i) => {
      at.set(node.id, {
        x: x + Math.floor(i / down) * size.across,
        y: size.top + (i % down) * size.down,
      });
    });
    const width = (across - 1) * size.across + size.column;
    if (mode === "jobs") {
      const text = [...new Set(column.map((node) => node.kind))].sort().join(", ");
      headings.push({ x: x - HEADING_OFFSET, y: 14, room: width - 6, text });
    }
    x += width;
  }
  return {
    layout: { width: x, height: size.top + rows * size.down, headings },
    at,
  };
}
