/**
 * What a piece of real work a handler started is, by its async resource type: the one
 * classification that `describeRealWork` (its name in a failure) and `insteadOfRealWork` (what
 * to do instead) each put in their own words. A file watcher is file I/O to describe, but
 * nothing a synchronous read replaces: the two consumers differ there, on purpose.
 */
export type RealWorkKind = "timer" | "fileRead" | "fileWatch" | "network" | "moduleLoad" | "other";

/**
 * Async resource types, as `async_hooks` names them (a type starts with the prefix), and their
 * kind; a type no prefix starts is `other` (a child process, crypto's thread-pool work, …).
 */
const KINDS: readonly (readonly [prefix: string, kind: RealWorkKind])[] = [
  ["Timeout", "timer"],
  // fs.readFile, fs/promises and its FileHandle: a request a synchronous call makes at once.
  ["FSREQ", "fileRead"],
  ["FILEHANDLE", "fileRead"],
  // fs.watch and fs.watchFile: they wait on changes, which no synchronous call gives.
  ["FSEVENTWRAP", "fileWatch"],
  ["STATWATCHER", "fileWatch"],
  ...["TCP", "UDP", "PIPE", "HTTP", "TLS", "GETADDRINFO", "GETNAMEINFO", "QUERY"].map(
    (prefix) => [prefix, "network"] as const,
  ),
  // A dynamic import(): the module loader answers it on a MessagePort, even for a built-in.
  ["MESSAGEPORT", "moduleLoad"],
];

/**
 * The kind of the real work of async resource type `type`.
 *
 * @example
 * ```ts
 * realWorkKind("FSREQPROMISE"); // "fileRead"
 * realWorkKind("STATWATCHER"); // "fileWatch"
 * ```
 */
export function realWorkKind(type: string): RealWorkKind {
  return KINDS.find(([prefix]) => type.startsWith(prefix))?.[1] ?? "other";
}
