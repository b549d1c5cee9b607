import { accessSync, constants, statSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import { isPermissionDenied } from "../runtime/fileOwner.ts";

/**
 * The ssh_config file `--ssh-config` names, resolved against the working directory, or
 * undefined when the flag is absent. One that does not exist, is a directory or that this
 * user may not read is a `ConfigError` saying so, before anything is done: ssh would only
 * fail on it once a remote rank is reached (or never, with no remote rank to reach).
 *
 * @example
 * ```ts
 * sshConfigFlag("ops/ssh_config"); // "/srv/app/ops/ssh_config"
 * sshConfigFlag("ops/ssh_confg"); // ConfigError: --ssh-config ops/ssh_confg does not exist: …
 * ```
 */
export function sshConfigFlag(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  const file = resolve(path);
  const where = file === path ? "" : ` (${file})`;
  const refuse = (what: string) =>
    new ConfigError(`--ssh-config ${path}${where} ${what}: give the path of an ssh_config file`);
  try {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (stat === undefined) throw refuse("does not exist");
    if (stat.isDirectory()) throw refuse("is a directory");
    accessSync(file, constants.R_OK);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if (isPermissionDenied(error)) throw refuse("cannot be read by this user");
    if ((error as NodeJS.ErrnoException).code === "ENOTDIR") {
      throw refuse("is under a file, not a directory");
    }
    throw error;
  }
  return file;
}
