import type { AnyStateMachine } from "xstate";
import type { MachineName } from "../machines/catalog.ts";
import { machineOf } from "./machineOf.ts";
import {
  type ChartState,
  type ChartTransition,
  indexChart,
  stateChart,
  transitionLabel,
} from "./stateChart.ts";

/**
 * A machine as a Mermaid `stateDiagram-v2`: nested states as composite states, `[*]` arrows
 * for initial and final states, and one arrow per source and target labelled with the
 * events that take it (`HELLO [notAuthentic]` for a guarded transition, `after helloTimeout`
 * for a delayed one, `always [runComplete]` for an eventless one). Transitions that only run
 * actions are drawn as a loop on their state; machine-wide ones are listed in a note on the
 * initial state. The output depends only on the definition, so it can be committed and
 * checked. It takes any machine, or the name of one of baton's (`machineCatalog`).
 *
 * @example
 * ```ts
 * toMermaid(connectionMachine).split("\n")[0]; // "stateDiagram-v2"
 * toMermaid("coordinator") === toMermaid(coordinatorMachine); // true
 * ```
 */
export function toMermaid(machine: AnyStateMachine | MachineName): string {
  const chart = stateChart(machineOf("toMermaid", machine));
  const { parentOf } = indexChart(chart);
  const names = mermaidNames(chart.root);
  const name = (id: string) => names.get(id)!;

  // Arrows by the composite state they are drawn in, merged by source and target.
  const arrows = new Map<string, Map<string, string[]>>();
  const machineWide: string[] = [];
  for (const t of chart.transitions) {
    if (t.source === chart.root.id) {
      machineWide.push(describeWide(t, name));
      continue;
    }
    const targets = t.targets.length === 0 ? [t.source] : t.targets;
    for (const target of targets) {
      const home = commonAncestor(t.source, target, parentOf, chart.root);
      const edges = arrows.get(home.id) ?? new Map<string, string[]>();
      arrows.set(home.id, edges);
      const key = `${name(t.source)} --> ${name(target)}`;
      edges.set(key, [...(edges.get(key) ?? []), transitionLabel(t)]);
    }
  }

  const lines = ["stateDiagram-v2"];
  const title = (state: ChartState) =>
    name(state.id) === state.key
      ? name(state.id)
      : `"${mermaidText(state.key).replace(/"/g, "#quot;")}" as ${name(state.id)}`;
  const block = (state: ChartState, indent: string) => {
    if (state.initial !== undefined) lines.push(`${indent}[*] --> ${name(state.initial)}`);
    state.children.forEach((child, i) => {
      if (state.type === "parallel" && i > 0) lines.push(`${indent}--`);
      const titled = title(child);
      if (child.children.length > 0) {
        lines.push(`${indent}state ${titled} {`);
        block(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else if (titled !== child.key) {
        lines.push(`${indent}state ${titled}`);
      }
      if (child.type === "final") lines.push(`${indent}${name(child.id)} --> [*]`);
    });
    for (const [edge, labels] of arrows.get(state.id) ?? []) {
      lines.push(`${indent}${edge} : ${mermaidText(labels.join(", "))}`);
    }
  };
  // Mermaid draws regions (`--`) only inside a composite state: a parallel machine is one.
  const parallel = chart.root.type === "parallel";
  if (parallel) {
    lines.push(`  [*] --> ${name(chart.root.id)}`, `  state ${title(chart.root)} {`);
    block(chart.root, "    ");
    lines.push("  }");
  } else {
    block(chart.root, "  ");
  }
  const noted = parallel ? chart.root.id : chart.root.initial;
  if (machineWide.length > 0 && noted !== undefined) {
    lines.push(`  note right of ${name(noted)}`);
    for (const line of machineWide) lines.push(`    ${mermaidText(line)}`);
    lines.push("  end note");
  }
  return `${lines.join("\n")}\n`;
}

/**
 * Mermaid's words that cannot name a state: its parser takes `a --> note` or `state style {`
 * as the keyword (checked against mermaid 11's parser, in any case).
 */
const MERMAID_WORDS = new Set([
  "state",
  "note",
  "default",
  "class",
  "classdef",
  "style",
  "click",
  "acctitle",
  "accdescr",
]);

/**
 * Each state's name in the diagram, by id: its path of keys joined with `_`
 * (`registered_idle`), the root `[*]` (a parallel root, drawn as a composite state, the
 * machine's id). XState's ids will not do: a state given an `id` of its own (`#custom`) has
 * no path in it. A key that is not a Mermaid name (`waiting for input`,
 * `parsing-json`, `1st`, a keyword such as `note`) has its other characters as `_` and, like a
 * name that another state already has, a suffix that makes it one (`note_`, `a_b_2`); the
 * diagram shows the key itself as the state's description.
 */
function mermaidNames(root: ChartState): Map<string, string> {
  const paths: [id: string, path: string][] = [];
  const visit = (state: ChartState, prefix: string) => {
    for (const child of state.children) {
      paths.push([child.id, `${prefix}${child.key}`]);
      visit(child, `${prefix}${child.key}_`);
    }
  };
  visit(root, "");
  const plain = (path: string) =>
    /^[A-Za-z_][A-Za-z0-9_]*$/.test(path) && !MERMAID_WORDS.has(path.toLowerCase());
  // A path that is a name already keeps it, whichever state comes first.
  const names = new Map<string, string>();
  if (root.type === "parallel") paths.push([root.id, root.key]);
  else names.set(root.id, "[*]");
  const taken = new Set<string>();
  for (const [id, path] of paths) {
    if (plain(path) && !taken.has(path)) {
      names.set(id, path);
      taken.add(path);
    }
  }
  for (const [id, path] of paths) {
    if (names.has(id)) continue;
    let base = path.replace(/[^A-Za-z0-9_]/g, "_");
    if (!/^[A-Za-z_]/.test(base)) base = `_${base}`;
    if (MERMAID_WORDS.has(base.toLowerCase())) base = `${base}_`;
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
    taken.add(name);
    names.set(id, name);
  }
  return names;
}

/**
 * `text` as Mermaid shows it in a label or note: `;` would end the statement (`x;y` drew `x`
 * and a state `;y`), `<` and `>` would be read as HTML, a line break would end the line; each
 * is written as an entity code, `#` too so that a `#59;` of the text stays as it is.
 */
function mermaidText(text: string): string {
  return text.replace(/[#;<>\n\r]/g, (c) => `#${c.charCodeAt(0)};`);
}

function describeWide(t: ChartTransition, name: (id: string) => string): string {
  const label = `in every state: ${transitionLabel(t)}`;
  return t.targets.length === 0 ? label : `${label} goes to ${t.targets.map(name).join(", ")}`;
}

/** The innermost state that contains both (the root when none does). */
function commonAncestor(
  a: string,
  b: string,
  parentOf: Map<string, ChartState>,
  root: ChartState,
): ChartState {
  const ancestors = new Set<string>();
  for (let p = parentOf.get(a); p; p = parentOf.get(p.id)) ancestors.add(p.id);
  for (let p = parentOf.get(b); p; p = parentOf.get(p.id)) {
    if (ancestors.has(p.id)) return p;
  }
  return root;
}
