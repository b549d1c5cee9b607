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
  const name = (id: string) =>
    id === chart.root.id ? "[*]" : id.slice(chart.root.id.length + 1).replace(/\./g, "_");

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
  const block = (state: ChartState, indent: string) => {
    if (state.initial !== undefined) lines.push(`${indent}[*] --> ${name(state.initial)}`);
    state.children.forEach((child, i) => {
      if (state.type === "parallel" && i > 0) lines.push(`${indent}--`);
      if (child.children.length > 0) {
        lines.push(`${indent}state ${name(child.id)} {`);
        block(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else if (name(child.id) !== child.key) {
        lines.push(`${indent}state "${child.key}" as ${name(child.id)}`);
      }
      if (child.type === "final") lines.push(`${indent}${name(child.id)} --> [*]`);
    });
    for (const [edge, labels] of arrows.get(state.id) ?? []) {
      lines.push(`${indent}${edge} : ${labels.join(", ")}`);
    }
  };
  block(chart.root, "  ");
  if (machineWide.length > 0 && chart.root.initial !== undefined) {
    lines.push(`  note right of ${name(chart.root.initial)}`);
    for (const line of machineWide) lines.push(`    ${line}`);
    lines.push("  end note");
  }
  return `${lines.join("\n")}\n`;
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
