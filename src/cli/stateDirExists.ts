import { accessSync, constants, statSync } from "node:fs";
import { ConfigError } from "../errors.ts";
import { isPermissionDenied } from "../runtime/fileOwner.ts";
import { userName } from "../runtime/userName.ts";

/**
 * Whether the state dir `baton status` or `baton reap` was given (`--state-dir`) exists: false
 * when it does not (nothing was launched there), and a `ConfigError` saying what is wrong and
 * what to do when it cannot be used: it is a file, not a directory; part of its path is a
 * file; or this user may not list it (another user's 0700 directory, or one under such).
 *
 * @example
 * ```ts
 * stateDirExists("/srv/app/.baton/run"); // true
 * stateDirExists("/tmp/typo"); // false
 * stateDirExists("/home/alice/.baton/run"); // as bob: ConfigError "this user (bob) may not list…"
 * ```
 */
export function stateDirExists(stateDir: string): boolean {
  const giveAnother = "give --state-dir the directory your launches used (default .baton/run)";
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(stateDir, { throwIfNoEntry: false });
    if (stat?.isDirectory()) accessSync(stateDir, constants.R_OK | constants.X_OK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOTDIR") {
      throw new ConfigError(
        `the state dir ${stateDir} is under a file, not a directory: ${giveAnother}`,
      );
    }
    if (!isPermissionDenied(error)) throw error;
    throw new ConfigError(
      `this user (${userName(process.getuid?.() ?? -1)}) may not list the state dir ${stateDir}${whose(stateDir)}, or ${giveAnother}`,
    );
  }
  if (stat !== undefined && !stat.isDirectory()) {
    throw new ConfigError(`the state dir ${stateDir} is a file, not a directory: ${giveAnother}`);
  }
  return stat !== undefined;
}

/**
 * Whose the directory is, its mode and who to run the command as (` (alice's, mode 700): run
 * the command as alice`), or that a directory above it is closed to this user.
 */
function whose(dir: string): string {
  try {
    const { uid, mode } = statSync(dir);
    const owner = userName(uid);
    return ` (${owner}'s, mode ${(mode & 0o777).toString(8)}): run the command as ${owner}`;
  } catch {
    return ": a directory above it is closed to this user; run the command as the user who launched there";
  }
}
