import type { AnyStateMachine } from "xstate";
import type { MachineName } from "../machines/catalog.ts";
import { inlineGuard } from "./inlineGuard.ts";
import { machineOf } from "./machineOf.ts";

/** A machine's definition as plain JSON: its config, with code replaced by named references. */
export type MachineJson = { id: string } & Record<string, unknown>;

/**
 * A machine's definition as JSON: the config it was created from, as Stately's inspector
 * receives it, with every function (an inline or builtin action, a params or delay function)
 * replaced by a reference `{ type }` naming it (`xstate.assign`, `closeWith`, ...; XState's
 * `and`, `or` and `not` guards as `{ type: "and", guards: [...] }`, `stateIn` with its
 * `stateValue`, a guard written in place as diagrams draw it, `inlineGuard`) and the
 * context factory left out (context is run-time data, not structure). `createMachine` loads
 * it back with the same states and events as `machine.toJSON()` reports for the original.
 * It takes any machine, or the name of one of baton's (`machineCatalog`).
 *
 * @example
 * ```ts
 * const json = machineJson(connectionMachine);
 * createMachine(json).root.events; // the same events as connectionMachine.root.events
 * ```
 */
export function machineJson(given: AnyStateMachine | MachineName): MachineJson {
  const machine = machineOf("machineJson", given);
  const guardLists = new WeakSet<unknown[]>();
  return JSON.parse(
    JSON.stringify(machine.config, function replace(this: unknown, key, value) {
      if (typeof value !== "function") return value;
      if (key === "context" && this === machine.config) return undefined;
      const { type, guards, stateValue } = value as {
        type?: unknown;
        guards?: unknown;
        stateValue?: unknown;
      };
      // XState's higher-order guards keep what they combine (replaced in turn) or test.
      if (Array.isArray(guards)) {
        guardLists.add(guards);
        return { type: value.name, guards };
      }
      if (value.name === "stateIn" && stateValue !== undefined) {
        return { type: "stateIn", stateValue };
      }
      const inline =
        key === "guard" || guardLists.has(this as unknown[]) ? inlineGuard(value) : undefined;
      if (inline !== undefined) return { type: inline };
      return { type: typeof type === "string" ? type : value.name || "inline" };
    }),
  );
}
