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
 * do, with the system's error as its cause.
 *
 * @example
 * ```ts
 * server.once("error", (error) => reject(cannotListen("127.0.0.1:7000", error)));
 * // CONFIG: cannot listen at 127.0.0.1:7000: the port is in use; pick another, or port 0 for any free one
 * ```
 */
export function cannotListen(address: string, error: Error): ConfigError {
  const code = (error as NodeJS.ErrnoException).code;
  const why = (code !== undefined && ADVICE[code]) || error.message;
  return new ConfigError(`cannot listen at ${address}: ${why}`, { cause: error });
}
