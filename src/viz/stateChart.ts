import type { AnyStateMachine, AnyStateNode } from "xstate";
import { inlineGuard } from "./inlineGuard.ts";

/**
 * One state of a machine's chart, with its children (a compound or parallel state has some);
 * the dashboard draws each as a `LaidOutState` of its `type`.
 */
export interface ChartState {
  /** The state's id, as XState names it (`connection.registered.idle`). */
  id: string;
  /** Its key inside its parent (`idle`). */
  key: string;
  type: "atomic" | "compound" | "parallel" | "final" | "history";
  /** A compound state's initial child, by id. */
  initial?: string;
  children: ChartState[];
}

/** One transition: an event (or a delay, or eventless), an optional guard, and its targets. */
export interface ChartTransition {
  /** The id of the state that handles it (the machine's id for machine-wide ones). */
  source: string;
  /** Target state ids; empty for a transition that only runs actions. */
  targets: string[];
  kind: "event" | "delayed" | "eventless";
  /** The event type, the delay (`helloTimeout`, `5000`), or `always`. */
  trigger: string;
  guard?: string;
}

/** A machine's structure: what the exporters draw and the dashboard lays out. */
export interface StateChart {
  id: string;
  root: ChartState;
  transitions: ChartTransition[];
}

const AFTER_PREFIX = "xstate.after.";

/**
 * The structure of a machine, read from its resolved state nodes: every state (nested),
 * every transition with its trigger, guard and targets, in definition order.
 *
 * @example
 * ```ts
 * const chart = stateChart(connectionMachine);
 * chart.root.children.map((s) => s.key); // ["handshaking", "registered", ...]
 * ```
 */
export function stateChart(machine: AnyStateMachine): StateChart {
  const transitions: ChartTransition[] = [];
  const visit = (node: AnyStateNode): ChartState => {
    for (const [eventType, list] of node.transitions) {
      if (eventType.startsWith(AFTER_PREFIX)) continue;
      for (const t of list) transitions.push(transitionOf(node, "event", eventType, t));
    }
    for (const t of node.after) transitions.push(transitionOf(node, "delayed", String(t.delay), t));
    for (const t of node.always ?? [])
      transitions.push(transitionOf(node, "eventless", "always", t));
    const children = Object.values(node.states).map(visit);
    const initial = node.type === "compound" ? node.initial?.target[0]?.id : undefined;
    return {
      id: node.id,
      key: node.key,
      type: node.type,
      ...(initial !== undefined && { initial }),
      children,
    };
  };
  const root = visit(machine.root);
  return { id: machine.id, root, transitions };
}

function transitionOf(
  node: AnyStateNode,
  kind: ChartTransition["kind"],
  trigger: string,
  t: { target?: readonly AnyStateNode[] | undefined; guard?: unknown },
): ChartTransition {
  const guard = guardName(t.guard);
  return {
    source: node.id,
    targets: (t.target ?? []).map((target) => target.id),
    kind,
    trigger,
    ...(guard !== undefined && { guard }),
  };
}

/**
 * A guard as diagrams write it: its name (`ready`, a `{ type, params }` object's type), XState's
 * higher-order guards with their operands (`not("a")` is `!a`, `and(["a", not("b")])` is
 * `a && !b`, `or` joins with `||`, in brackets inside another; `stateIn("#m.b")` is
 * `in #m.b`), a function by its name, one written in place by what it returns (`inlineGuard`:
 * `GO [context.n > 2]`, or `GO [inline guard]`), else `guarded`. Until an audit a higher-order
 * guard was drawn by its builder's name alone (`GO [not]`, `GO [and]`), and an inline one
 * `[guard]`, the name JavaScript gives a function written as the `guard` property.
 */
function guardName(guard: unknown, inner = false): string | undefined {
  if (guard === undefined) return undefined;
  if (typeof guard === "string") return guard;
  const { type, name, guards, stateValue } = guard as {
    type?: unknown;
    name?: string;
    guards?: unknown;
    stateValue?: unknown;
  };
  if (typeof type === "string") return type;
  if (typeof guard === "function" && Array.isArray(guards)) {
    const operands = guards.map((g) => guardName(g, true) ?? "guarded");
    if (name === "not") return `!${operands[0]}`;
    const joined = operands.join(name === "and" ? " && " : " || ");
    return inner && operands.length > 1 ? `(${joined})` : joined;
  }
  if (typeof guard === "function" && name === "stateIn" && stateValue !== undefined) {
    return `in ${typeof stateValue === "string" ? stateValue : JSON.stringify(stateValue)}`;
  }
  if (typeof guard === "function") {
    const inline = inlineGuard(guard);
    if (inline === undefined) return guard.name;
    return inner && /\s/.test(inline) ? `(${inline})` : inline;
  }
  return name || "guarded";
}

/**
 * How a transition is labelled in diagrams: `EVENT`, `after helloTimeout`, `always`, each
 * followed by `[guard]` when guarded.
 *
 * @example
 * ```ts
 * transitionLabel({ source: "a", targets: [], kind: "delayed", trigger: "5000" }); // "after 5000 ms"
 * ```
 */
export function transitionLabel(t: ChartTransition): string {
  const trigger =
    t.kind === "delayed"
      ? `after ${/^\d+$/.test(t.trigger) ? `${t.trigger} ms` : t.trigger}`
      : t.trigger;
  return t.guard === undefined ? trigger : `${trigger} [${t.guard}]`;
}

/**
 * Every state of a chart by id, and each state's parent, for walking up and down the tree.
 *
 * @example
 * ```ts
 * const { byId, parentOf } = indexChart(stateChart(connectionMachine));
 * parentOf.get("connection.registered.busy")?.id; // "connection.registered"
 * ```
 */
export function indexChart(chart: StateChart): {
  byId: Map<string, ChartState>;
  parentOf: Map<string, ChartState>;
} {
  const byId = new Map<string, ChartState>();
  const parentOf = new Map<string, ChartState>();
  const index = (state: ChartState) => {
    byId.set(state.id, state);
    for (const child of state.children) {
      parentOf.set(child.id, state);
      index(child);
    }
  };
  index(chart.root);
  return { byId, parentOf };
}
