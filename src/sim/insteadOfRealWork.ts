import { realWorkKind } from "./realWorkKind.ts";

/**
 * What a handler does in a simulation instead of the real work it started (an async resource
 * as `async_hooks` names its type, as `describeRealWork` takes it): a timer waits with the
 * tools' `sleep`, a file is read synchronously (which takes no virtual time) or stood in for,
 * a module imported with `import()` (whose loader answers on a `MESSAGEPORT`, even for a
 * built-in) is imported at the top of the file, and a service on the network, a file watcher
 * or anything else is stood in for (by `realWorkKind`).
 *
 * @example
 * ```ts
 * insteadOfRealWork("FSREQPROMISE"); // "Read the file synchronously instead (readFileSync: …"
 * ```
 */
export function insteadOfRealWork(type: string): string {
  switch (realWorkKind(type)) {
    case "timer":
      return "Wait with the simulation tools' sleep instead";
    case "fileRead":
      return "Read the file synchronously instead (readFileSync: synchronous I/O takes no virtual time, so a simulation allows it), or stand in for the read: await the tools' sleep for as long as it would take and return what it would give";
    case "moduleLoad":
      return "If it is a dynamic import() (the module loader answers one on a MessagePort, in real time), import the module at the top of your file instead; else stand in for it: await the tools' sleep for as long as it would take and return what it would give";
    default:
      return "Stand in for it instead: await the tools' sleep for as long as it would take and return what it would give, keeping what a service holds across a crash with the tools' keep";
  }
}
