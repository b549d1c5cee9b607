import { argumentError } from "../argumentError.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireObject } from "../requireObject.ts";
import { requirePositiveMs } from "./requirePositiveMs.ts";
import type { SshHostOptions } from "./sshHost.ts";
import { parseRankHost, type SshTarget } from "./sshTarget.ts";

/** Every option `sshHost` takes (the compiler holds this to `SshHostOptions`). */
const SSH_HOST_OPTIONS: Record<keyof SshHostOptions, true> = {
  configFile: true,
  options: true,
  connectTimeoutMs: true,
  timeoutMs: true,
  multiplex: true,
  controlPersistMs: true,
  program: true,
};

const A_TARGET = 'an SshTarget, as parseRankHost("ssh://USER@HOST[:PORT]") gives it';

/**
 * Refuses, with a `ConfigError`, what `sshHost` (and so `openRemoteSite` and a launch's
 * `remote.ssh`) cannot take as a JavaScript caller may give it, before it makes its control
 * directory: a target that is not one `parseRankHost` gives (a spec as a string ran
 * `ssh -l undefined`; a hand-made one skipped the checks that keep a host from reading as an
 * ssh option), an option it does not know, a timeout that is no positive number of ms, a
 * `multiplex` that is no boolean, a program or config file that is no path, and `options`
 * that is no list (one string was read letter by letter). A target given as text is not shown:
 * it may hold a password.
 *
 * @example
 * ```ts
 * checkSshHostArguments("ssh://alice@gpu-2" as never, {});
 * // ConfigError: sshHost: target must be an SshTarget, as parseRankHost("ssh://USER@HOST[:PORT]") gives it, not a string: give parseRankHost(spec)
 * ```
 */
export function checkSshHostArguments(target: SshTarget, options: SshHostOptions): void {
  const where = "sshHost";
  if (typeof target === "string") {
    throw argumentError(where, "target", A_TARGET, target, "a string: give parseRankHost(spec)");
  }
  requireObject(where, "target", A_TARGET, target);
  let parsed: ReturnType<typeof parseRankHost> | undefined;
  try {
    parsed = parseRankHost(target.spec);
  } catch {
    parsed = undefined;
  }
  if (
    parsed?.kind !== "ssh" ||
    parsed.user !== target.user ||
    parsed.host !== target.host ||
    parsed.port !== target.port
  ) {
    throw argumentError(
      where,
      "target",
      `${A_TARGET}, whose spec names its user, host and port`,
      target,
    );
  }
  checkOptionNames(where, options, SSH_HOST_OPTIONS, {
    shape: "{ configFile, options, timeoutMs, … }",
  });
  for (const name of ["connectTimeoutMs", "timeoutMs", "controlPersistMs"] as const) {
    if (options[name] !== undefined) requirePositiveMs(where, name, options[name]);
  }
  if (options.multiplex !== undefined && typeof options.multiplex !== "boolean") {
    throw argumentError(where, "multiplex", "true or false", options.multiplex);
  }
  for (const name of ["program", "configFile"] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== "string" || value === "")) {
      throw argumentError(where, name, "a path", value);
    }
  }
  if (options.options !== undefined && !Array.isArray(options.options)) {
    throw argumentError(
      where,
      "options",
      'a list of ssh settings, each Key=Value (["IdentityFile=~/.ssh/lab"])',
      options.options,
    );
  }
}
