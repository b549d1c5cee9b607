import type { AnyStateMachine } from "xstate";
import { ConfigError } from "../errors.ts";
import { type MachineName, machineCatalog } from "../machines/catalog.ts";

/**
 * The machine `toMermaid` or `machineJson` (`where`) is given: a machine, or the name of one of
 * baton's in `machineCatalog`, as `baton viz NAME` takes it. Anything else, an unknown name
 * among it, is a `ConfigError` that lists the names (it used to be a TypeError from inside,
 * "Cannot read properties of undefined").
 *
 * @example
 * ```ts
 * machineOf("toMermaid", "connection") === connectionMachine; // true
 * machineOf("toMermaid", "conection"); // ConfigError: toMermaid takes a state machine or the name of one of baton's: coordinator, connection, …; not "conection"
 * ```
 */
export function machineOf(where: string, machine: AnyStateMachine | MachineName): AnyStateMachine {
  if (typeof machine === "string" && Object.hasOwn(machineCatalog, machine)) {
    return machineCatalog[machine];
  }
  if (
    typeof machine === "object" &&
    machine !== null &&
    typeof (machine as { config?: unknown }).config === "object" &&
    typeof (machine as { root?: unknown }).root === "object"
  ) {
    return machine;
  }
  throw new ConfigError(
    `${where} takes a state machine or the name of one of baton's: ${Object.keys(machineCatalog).join(", ")}; not ${typeof machine === "string" ? JSON.stringify(machine) : String(machine)}`,
  );
}
