import { ConfigError } from "../errors.ts";

/** What to do about the errors a server's `listen` gives, by code. */
const ADVICE: Readonly<Record<string, string>> = {
  EADDRINUSE: "the port is in use; pick another, or port 0 for any free one",
  EADDRNOTAVAIL: "this machine has no such address; give one of its own (0.0.0.0 for every one)",
  EACCES:
    "no permission to listen there (ports below 1024 need privileges); pick a port above 1024",
  ENOTFOUND: "no such host name; give an address or a name this machine resolves",
};

/**
 * The error for a server that could not listen at `address`: a `ConfigError` saying what to
 * do, with the system's error as its cause. `server`, when given, names which of a command's
 * servers it is, and the flag that set its address: a run listens for workers and may serve a
 * dashboard, and a taken `--ui-port` was said as if it were `--listen`'s.
 *
 * @example
 * ```ts
 * server.once("error", (error) => reject(cannotListen("127.0.0.1:7000", error)));
 * // CONFIG: cannot listen at 127.0.0.1:7000: the port is in use; pick another, or port 0 for any free one
 * cannotListen("127.0.0.1:8080", error, "the dashboard (--ui-port)");
 * // CONFIG: the dashboard (--ui-port) cannot listen at 127.0.0.1:8080: the port is in use; …
 * ```
 */
export function cannotListen(address: string, error: Error, server?: string): ConfigError {
  const code = (error as NodeJS.ErrnoException).code;
  const why = (code !== undefined && ADVICE[code]) || error.message;
  const who = server === undefined ? "" : `${server} `;
  return new ConfigError(`${who}cannot listen at ${address}: ${why}`, { cause: error });
}
