import type { AnyStateMachine } from "xstate";

/** A machine's definition as plain JSON: its config, with code replaced by named references. */
export type MachineJson = { id: string } & Record<string, unknown>;

/**
 * A machine's definition as JSON: the config it was created from, as Stately's inspector
 * receives it, with every function (an inline or builtin action, a params or delay function)
 * replaced by a reference `{ type }` naming it (`xstate.assign`, `closeWith`, ...) and the
 * context factory left out (context is run-time data, not structure). `createMachine` loads
 * it back with the same states and events as `machine.toJSON()` reports for the original.
 *
 * @example
 * ```ts
 * const json = machineJson(connectionMachine);
 * createMachine(json).root.events; // the same events as connectionMachine.root.events
 * ```
 */
export function machineJson(machine: AnyStateMachine): MachineJson {
  return JSON.parse(
    JSON.stringify(machine.config, function replace(this: unknown, key, value) {
      if (typeof value !== "function") return value;
      if (key === "context" && this === machine.config) return undefined;
      const type = (value as { type?: unknown }).type;
      return { type: typeof type === "string" ? type : value.name || "inline" };
    }),
  );
}
