import { accessSync, constants, statSync } from "node:fs";
import { ConfigError } from "../errors.ts";
import { fileInTheWay } from "../runtime/fileInTheWay.ts";
import { isPermissionDenied } from "../runtime/fileOwner.ts";
import { permissionDenied } from "../runtime/permissionAdvice.ts";

/**
 * Whether the state dir `baton status`, `baton reap` or `baton launch` was given
 * (`--state-dir`) exists: false when it does not (nothing was launched there), and a
 * `ConfigError` saying what is wrong and what to do when it cannot be used, the same from each
 * command: it is a file, not a directory; it is under a file (named); or this user may not
 * list it (another user's 0700 directory, or one under such: in `permissionDenied`'s words,
 * as for any path, naming the closed directory above it).
 *
 * @example
 * ```ts
 * stateDirExists("/srv/app/.baton/run"); // true
 * stateDirExists("/tmp/typo"); // false
 * stateDirExists("/srv/notes.txt");
 * // ConfigError "the state dir /srv/notes.txt is a file, not a directory: give --state-dir the
 * // directory your launches use (default .baton/run), or move the file aside"
 * stateDirExists("/home/alice/.baton/run");
 * // as bob: ConfigError "cannot list the state dir /home/alice/.baton/run: permission denied:
 * // this user (bob) may not list that directory (alice's, mode 700); give --state-dir the
 * // directory your launches use (default .baton/run), or run the command as alice"
 * ```
 */
export function stateDirExists(stateDir: string): boolean {
  const giveAnother = "give --state-dir the directory your launches use (default .baton/run)";
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(stateDir, { throwIfNoEntry: false });
    if (stat?.isDirectory()) accessSync(stateDir, constants.R_OK | constants.X_OK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOTDIR") {
      throw new ConfigError(
        `the state dir ${stateDir} is under a file, ${fileInTheWay(stateDir)}, not a directory: ${giveAnother}, or move the file aside`,
      );
    }
    if (!isPermissionDenied(error)) throw error;
    // In the words of any path this user may not list: whose it is, or the one above closed.
    const { problem, asOwner } = permissionDenied("scandir", stateDir);
    throw new ConfigError(
      `cannot list the state dir ${stateDir}: permission denied: ${problem}; ${giveAnother}${asOwner}`,
    );
  }
  if (stat !== undefined && !stat.isDirectory()) {
    throw new ConfigError(
      `the state dir ${stateDir} is a file, not a directory: ${giveAnother}, or move the file aside`,
    );
  }
  return stat !== undefined;
}
