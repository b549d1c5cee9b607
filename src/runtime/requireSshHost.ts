import { ConfigError } from "../errors.ts";
import { requireMethods } from "./requireMethods.ts";
import type { SshHost } from "./sshHost.ts";

/** What a host must be, as a refusal of anything else says. */
const AN_SSH_HOST = "an SshHost, such as sshHost(target)";

/**
 * Refuses, with {@link requireMethods}' `ConfigError`, a `value` for `name` of `where` that is
 * no {@link SshHost} with the `methods` the function calls and a `target.spec` its messages
 * name: a spec given as text, or a target where its host was asked for, was taken and failed
 * at the first call with `host.run is not a function`, long after the call that took it.
 *
 * @example
 * ```ts
 * requireSshHost("remoteFiles", "host", "ssh://alice@gpu-2", ["run"]);
 * // ConfigError: remoteFiles: host must be an SshHost, such as sshHost(target), not "ssh://alice@gpu-2"
 * ```
 */
export function requireSshHost(
  where: string,
  name: string,
  value: unknown,
  methods: readonly (keyof SshHost)[],
): void {
  requireMethods(where, name, value, methods, AN_SSH_HOST);
  if (typeof (value as { target?: { spec?: unknown } }).target?.spec !== "string") {
    throw new ConfigError(`${where}: ${name} must be ${AN_SSH_HOST}; it has no target.spec`);
  }
}
