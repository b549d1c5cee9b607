import { ConfigError } from "../errors.ts";
import { preview } from "../graph/label.ts";
import { isLoopbackHost } from "./isLoopbackHost.ts";
import { parseListenAddress } from "./wsNet.ts";

/** Hosts that mean "every interface": a worker elsewhere must name this machine instead. */
export const WILDCARD_HOSTS: ReadonlySet<string> = new Set(["0.0.0.0", "::"]);

/**
 * The coordinator's address in `text` (HOST:PORT or ws://HOST:PORT, as `baton run` prints it)
 * as ws://HOST:PORT, or undefined when it names none: not such an address, or port 0, which
 * means "any free port" to a listener.
 *
 * @example
 * ```ts
 * coordinatorUrl("10.0.0.5:7000"); // "ws://10.0.0.5:7000"
 * coordinatorUrl("10.0.0.5:0"); // undefined
 * ```
 */
export function coordinatorUrl(text: string): string | undefined {
  try {
    const address = parseListenAddress(text);
    return address.port === 0 ? undefined : address.url;
  } catch {
    // parseListenAddress's own message is about listening (it offers port 0).
    return undefined;
  }
}

/**
 * What keeps `text`, which {@link coordinatorUrl} takes for no coordinator's address, from
 * being one, in parentheses after a space, where a person would not see it: a web address (the
 * coordinator's is a WebSocket one), a quote the shell kept, port 0 (`baton run --listen`'s
 * "any free port") or one past 65535, more after the port (a path, a comma), an IPv6 host
 * without its brackets, no host or no port at all; else "".
 *
 * @example
 * ```ts
 * whyNoCoordinator("ws://10.0.0.5:7000/run"); // ' (after its port 7000 comes "/run": the address ends at its port)'
 * whyNoCoordinator("10.0.0.5"); // " (it names no port)"
 * ```
 */
export function whyNoCoordinator(text: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme === "wss") return " (wss://: a coordinator listens for ws://, without TLS)";
  if (scheme !== undefined && scheme !== "ws") {
    return ` (${scheme}://: a coordinator takes WebSocket connections, ws://)`;
  }
  const quote = /['"]/.exec(text)?.[0];
  if (quote !== undefined) {
    return ` (it holds the quote ${quote}: a shell's quotes are not part of the address; give it without them)`;
  }
  const hostAndPort = text.replace(/^ws:\/\//i, "");
  if (/^:?\d+$/.test(hostAndPort)) {
    return " (it names no host: put the coordinator machine's name or address before the port)";
  }
  const ipv6 = /^([0-9A-Fa-f]*:[0-9A-Fa-f:.]*):(\d+)$/.exec(hostAndPort);
  if (ipv6 !== null) return ` (an IPv6 host goes in brackets: [${ipv6[1]}]:${ipv6[2]})`;
  const port = /:(\d+)(\D[^:]*)?$/.exec(text);
  if (port === null) return " (it names no port)";
  const [, digits = "", after] = port;
  if (after !== undefined) {
    return ` (after its port ${digits} comes ${JSON.stringify(after)}: the address ends at its port)`;
  }
  if (Number(digits) === 0) {
    return " (port 0 is baton run --listen's any free port, and names no coordinator: give the port the run printed)";
  }
  return Number(digits) > 65_535 ? ` (port ${digits} is past 65535, the highest)` : "";
}

/**
 * Whether `address` (HOST:PORT or ws://HOST:PORT) names this machine's loopback (127.0.0.0/8,
 * ::1, localhost), which a worker on another machine takes for its own: only a worker on
 * this machine reaches a coordinator there. A host name is not resolved.
 *
 * @example
 * ```ts
 * isLoopback("ws://127.0.0.1:41234"); // true
 * isLoopback("ws://login1:7000"); // false
 * ```
 */
export function isLoopback(address: string): boolean {
  const url = coordinatorUrl(address);
  if (url === undefined) return false;
  return isLoopbackHost(parseListenAddress(url).host);
}

/**
 * Refuses, when a pool is made (`where`: `localPool`, `slurmPool`; `""` for `baton run`, whose
 * flag `name` is `--connect`), a `connect` option that names no coordinator a worker could reach: not a string, not HOST:PORT or ws://HOST:PORT
 * (saying why, as {@link whyNoCoordinator} does), port 0, or a wildcard host (0.0.0.0, ::), the
 * very address `connect` stands in for.
 *
 * @example
 * ```ts
 * checkConnect("slurmPool", "0.0.0.0:7000");
 * // ConfigError: slurmPool: connect 0.0.0.0:7000 names every interface of the coordinator's machine, which no worker elsewhere reaches; …
 * ```
 */
export function checkConnect(where: string, connect: unknown, name = "connect"): void {
  if (connect === undefined) return;
  const what = where === "" ? name : `${where}: ${name}`;
  const url = typeof connect === "string" ? coordinatorUrl(connect) : undefined;
  if (url === undefined) {
    throw new ConfigError(
      `${what} must be the coordinator's address as its workers reach it, HOST:PORT or ws://HOST:PORT such as login1.cluster:7000 (an IPv6 host in brackets, a port other than 0), not ${preview(connect)}${typeof connect === "string" ? whyNoCoordinator(connect) : ""}`,
    );
  }
  const { host } = parseListenAddress(url);
  if (WILDCARD_HOSTS.has(host)) {
    throw new ConfigError(
      `${what} ${connect} names every interface of the coordinator's machine, which no worker elsewhere reaches; give that machine's name or address as the workers reach it, such as login1.cluster:7000`,
    );
  }
}

/** How `connect` and `listen` are named where they are given: `baton run`'s flags or createEngine's options. */
const CONNECT_NAMING = {
  "baton run": {
    connect: "--connect",
    listen: "--listen",
    example: "--listen 0.0.0.0:7000 with --connect login1:7000",
  },
  createEngine: {
    connect: "createEngine: the pool's connect",
    listen: "listen",
    example:
      'createEngine({ listen: "0.0.0.0:7000", workers: localPool({ connect: "login1:7000", … }) })',
  },
} as const;

/**
 * Refuses a `connect` (the address workers reach the coordinator at by another name) without
 * a `listen`: the coordinator then listens on a free port of 127.0.0.1, which no `connect`
 * names, and every worker, the pool's own local ones too, was sent to `connect` and failed to
 * join until the pool gave up. `where` says how the two are named in the message: `baton run`'s
 * `--connect` and `--listen`, or createEngine's `listen` and its pool's `connect`.
 *
 * @example
 * ```ts
 * checkConnectListens("login1:7000", undefined, "createEngine");
 * // ConfigError: createEngine: the pool's connect login1:7000 is where workers reach this run's listen address by another name, …
 * ```
 */
export function checkConnectListens(
  connect: string | undefined,
  listen: string | undefined,
  where: keyof typeof CONNECT_NAMING,
): void {
  if (connect === undefined || listen !== undefined) return;
  const naming = CONNECT_NAMING[where];
  throw new ConfigError(
    `${naming.connect} ${connect} is where workers reach this run's ${naming.listen} address by another name, and without ${naming.listen} the run listens on a free port of 127.0.0.1: give ${naming.listen} too, such as ${naming.example}`,
  );
}

/**
 * The `--connect` a pool gives each of its workers: `connect` when given (checked by
 * {@link checkConnect} when the pool was made), else `address`, where the coordinator listens.
 * For workers elsewhere (`elsewhere`: this machine's host name, `os.hostname()`), a wildcard
 * `address` (0.0.0.0:7000, which on another machine means that machine) becomes this
 * machine's name with the same port, as a node of a cluster reaches its login node.
 *
 * @example
 * ```ts
 * workerConnect(undefined, "ws://0.0.0.0:7000", "login1"); // "ws://login1:7000"
 * workerConnect("login1.cluster:7000", "ws://0.0.0.0:7000", "login1"); // "login1.cluster:7000"
 * ```
 */
export function workerConnect(
  connect: string | undefined,
  address: string,
  elsewhere?: string | undefined,
): string {
  if (connect !== undefined) return connect;
  return elsewhere === undefined ? address : reachedFrom(address, elsewhere);
}

/**
 * Where a worker on another machine reaches a coordinator listening at `address`: a wildcard
 * host (0.0.0.0, ::), which there means that machine, becomes `thisHost` (this machine's
 * name, `os.hostname()`) with the same port; any other address, and one of another transport
 * (`memory://…`), is itself. What `listening` says and what a pool gives its workers elsewhere.
 *
 * @example
 * ```ts
 * reachedFrom("ws://0.0.0.0:7000", "login1"); // "ws://login1:7000"
 * reachedFrom("ws://10.0.0.5:7000", "login1"); // "ws://10.0.0.5:7000"
 * ```
 */
export function reachedFrom(address: string, thisHost: string): string {
  if (!address.startsWith("ws://")) return address;
  const { host, port } = parseListenAddress(address);
  return WILDCARD_HOSTS.has(host) ? `ws://${thisHost}:${port}` : address;
}
