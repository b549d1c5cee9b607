/**
 * What a handler does in a simulation instead of the real work it started (an async resource
 * as `async_hooks` names its type, as `describeRealWork` takes it): a timer waits with the
 * tools' `sleep`, a file is read synchronously (which takes no virtual time) or stood in for,
 * and a service on the network is stood in for.
 *
 * @example
 * ```ts
 * insteadOfRealWork("FSREQPROMISE"); // "Read the file synchronously instead (readFileSync: …"
 * ```
 */
export function insteadOfRealWork(type: string): string {
  if (type === "Timeout") return "Wait with the simulation tools' sleep instead";
  if (/^(FSREQ|FILEHANDLE)/.test(type)) {
    return "Read the file synchronously instead (readFileSync: synchronous I/O takes no virtual time, so a simulation allows it), or stand in for the read: await the tools' sleep for as long as it would take and return what it would give";
  }
  return "Stand in for it instead: await the tools' sleep for as long as it would take and return what it would give, keeping what a service holds across a crash with the tools' keep";
}
