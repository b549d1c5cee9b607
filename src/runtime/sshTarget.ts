import { ConfigError } from "../errors.ts";
import { preview } from "../graph/label.ts";
import { isLoopbackHost } from "./isLoopbackHost.ts";

/** A remote host reached with the system `ssh` client, as `ssh://user@host[:port]` names it. */
export interface SshTarget {
  kind: "ssh";
  user: string;
  /** A host name, an ssh_config alias, an IPv4 address or an IPv6 address without brackets. */
  host: string;
  /** Undefined: ssh's own default (22, or the `Port` of the user's ssh_config). */
  port: number | undefined;
  /** The canonical spec, `ssh://user@host[:port]`, for logs, errors and manifests. */
  spec: string;
}

/** Where a rank of a group runs: on the launcher's machine, or on a host reached over SSH. */
export type RankHost = { kind: "local"; spec: "local" } | SshTarget;

const USER = /^[A-Za-z_][A-Za-z0-9._-]{0,31}$/;
const HOST_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?$/;
const IPV6 = /^[0-9A-Fa-f:.]{2,45}$/;
const PORT = /^[1-9]\d{0,4}$/;

const FORM = "write `local` or `ssh://USER@HOST[:PORT]` (for example ssh://alice@gpu-2:2222)";

function refuse(spec: string, why: string): never {
  throw new ConfigError(`host ${JSON.stringify(spec)} is not valid: ${why}; ${FORM}`);
}

/**
 * Reads a rank group's host spec: `local`, or `ssh://user@host[:port]`. The user is required
 * (teardown must reach the ranks as the user that started them); passwords, paths, queries
 * and anything ssh could read as an option are refused with a `ConfigError` that says what to
 * write instead. Keys, known hosts and other settings come from the user's ssh configuration.
 *
 * @example
 * ```ts
 * parseRankHost("ssh://alice@10.0.0.7:2222"); // { kind: "ssh", user: "alice", host: "10.0.0.7", port: 2222, … }
 * parseRankHost("local");                      // { kind: "local", spec: "local" }
 * ```
 */
export function parseRankHost(spec: string): RankHost {
  if (spec === "local") return { kind: "local", spec: "local" };
  if (typeof spec !== "string") {
    throw new ConfigError(`a host must be a string, not ${preview(spec)}; ${FORM}`);
  }
  if (isLoopbackHost(spec)) {
    throw new ConfigError(
      `host ${JSON.stringify(spec)} is this machine's loopback, which a host list calls \`local\`: write \`local\` (as in local*2), or ssh://USER@${spec.includes(":") ? `[${spec}]` : spec} to start its ranks over ssh`,
    );
  }
  if (!spec.startsWith("ssh://")) refuse(spec, "it is neither `local` nor an ssh:// URL");
  const rest = spec.slice("ssh://".length);
  const at = rest.lastIndexOf("@");
  if (at === -1) refuse(spec, "the user is missing");
  const user = rest.slice(0, at);
  const address = rest.slice(at + 1);
  if (user.includes(":")) {
    refuse(spec, "passwords are never accepted in a host spec (use an SSH key and ssh-agent)");
  }
  if (!USER.test(user)) {
    refuse(spec, `user ${JSON.stringify(user)} must be 1–32 of letters, digits, ".", "_", "-"`);
  }
  let host: string;
  let portText: string | undefined;
  if (address.startsWith("[")) {
    const close = address.indexOf("]");
    if (close === -1) refuse(spec, "an IPv6 address opened with [ is not closed with ]");
    host = address.slice(1, close);
    const after = address.slice(close + 1);
    if (after !== "" && !after.startsWith(":")) refuse(spec, `unexpected ${JSON.stringify(after)}`);
    portText = after === "" ? undefined : after.slice(1);
    if (!IPV6.test(host) || !host.includes(":")) {
      refuse(spec, `${JSON.stringify(host)} is not an IPv6 address`);
    }
  } else {
    const colon = address.indexOf(":");
    host = colon === -1 ? address : address.slice(0, colon);
    portText = colon === -1 ? undefined : address.slice(colon + 1);
    if (!HOST_NAME.test(host)) {
      refuse(
        spec,
        `host ${JSON.stringify(host)} must be a name or address of letters, digits, ".", "_", "-" (no path, no spaces)`,
      );
    }
  }
  let port: number | undefined;
  if (portText !== undefined) {
    port = Number(portText);
    if (!PORT.test(portText) || port > 65_535) {
      refuse(spec, `port ${JSON.stringify(portText)} must be a number from 1 to 65535`);
    }
  }
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    kind: "ssh",
    user,
    host,
    port,
    spec: `ssh://${user}@${shown}${port === undefined ? "" : `:${port}`}`,
  };
}
