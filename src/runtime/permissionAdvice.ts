import { accessSync, constants, statSync } from "node:fs";
import { dirname, parse, resolve } from "node:path";
import { userName } from "./userName.ts";

/** System calls that list a directory. */
const LISTING = new Set(["scandir", "opendir"]);
/** System calls that read a file (an `open` is told apart by what the path lets this user do). */
const READING = new Set(["read", "readlink"]);
/** System calls that change a file (an `open` is told apart as for reading). */
const WRITING = new Set(["write", "copyfile", "truncate", "ftruncate", "chmod", "chown", "utime"]);
/** System calls that create an entry in the directory the path is in. */
const CREATING = new Set(["mkdir", "mkdtemp", "link", "symlink"]);
/** System calls that remove or rename an entry of the directory the path is in. */
const REMOVING = new Set(["rmdir", "unlink", "rename"]);

/**
 * What an `EACCES` from system call `syscall` on `path` means for this user, and what to do,
 * as the operation it was and as the path's permissions now say: a directory on the way to the
 * path that this user may not enter (any call); a directory it may not list (`scandir`); a
 * file it may not read or write (`read`, `write`, or an `open`, told apart by which of the two
 * the file allows); a directory it may not write in (creating an entry: `mkdir`, an `open` of
 * a file not there; removing or renaming one: `unlink`, `rename`). Each names whose the path
 * is and its mode, where it can tell, and says to run the command as its owner (or, for this
 * user's own, to change its mode).
 *
 * @example
 * ```ts
 * permissionAdvice("scandir", "/srv/graphs"); // as bob, on root's 0700 directory:
 * // "this user (bob) may not list that directory (root's, mode 700); give a directory you can read, or run the command as root"
 * permissionAdvice("mkdir", "/srv/out/.baton");
 * // "this user (bob) may not create anything in /srv/out (root's, mode 755); give a path in a directory you can write to, or run the command as root"
 * ```
 */
export function permissionAdvice(syscall: string | undefined, path: string): string {
  const { problem, advice } = permissionDenied(syscall, path);
  return `${problem}; ${advice}`;
}

/**
 * {@link permissionAdvice} in its parts, for a message that gives advice of its own: what
 * this user may not do (`problem`), what to do about it (`advice`), and of that only the way
 * out through the owner of the directory or file at fault (`asOwner`: ", or run the command as
 * alice", ", or change its mode (chmod)" for this user's own, "" when it cannot be looked at),
 * for a message whose own way out goes first.
 *
 * @example
 * ```ts
 * permissionDenied("mkdir", "/srv/out/.baton").problem;
 * // "this user (bob) may not create anything in /srv/out (root's, mode 755)"
 * permissionDenied("scandir", "/home/alice/.baton/run").asOwner; // ", or run the command as alice"
 * ```
 */
export function permissionDenied(
  syscall: string | undefined,
  path: string,
): { problem: string; advice: string; asOwner: string } {
  const absolute = resolve(path);
  const uid = process.getuid?.() ?? -1;
  const user = `this user (${userName(uid)})`;
  const closed = closedDirectory(absolute);
  if (closed !== undefined) {
    const { whose, or } = ownership(closed, uid);
    return {
      problem: `${user} may not enter ${closed}${whose}, a directory on that path`,
      advice: `give a path outside it${or}`,
      asOwner: or,
    };
  }
  const exists = statSync(absolute, { throwIfNoEntry: false }) !== undefined;
  if (LISTING.has(syscall ?? "")) {
    const { whose, or } = ownership(absolute, uid);
    return {
      problem: `${user} may not list that directory${whose}`,
      advice: `give a directory you can read${or}`,
      asOwner: or,
    };
  }
  // Creating, removing or renaming an entry needs the right to write in its directory.
  const change = entryChange(syscall, exists);
  if (change !== undefined) {
    const parent = dirname(absolute);
    const { whose, or } = ownership(parent, uid);
    const what = change === "create" ? "create anything" : "remove or rename anything";
    return {
      problem: `${user} may not ${what} in ${parent}${whose}`,
      advice: `give a path in a directory you can write to${or}`,
      asOwner: or,
    };
  }
  const { whose, or } = ownership(absolute, uid);
  const mayRead = allowed(absolute, constants.R_OK);
  if (
    READING.has(syscall ?? "") ||
    (syscall === "open" && !mayRead && allowed(absolute, constants.W_OK))
  ) {
    return {
      problem: `${user} may not read it${whose}`,
      advice: `give a file you can read${or}`,
      asOwner: or,
    };
  }
  if (syscall === "open" && !mayRead) {
    return {
      problem: `${user} may neither read nor write it${whose}`,
      advice: `give another path${or}`,
      asOwner: or,
    };
  }
  if (syscall === "open" || WRITING.has(syscall ?? "")) {
    return {
      problem: `${user} may not write it${whose}`,
      advice: `give a path you can write to${or}`,
      asOwner: or,
    };
  }
  return {
    problem: `${user} may not ${syscall ?? "use"} it${whose}`,
    advice: `check its permissions${or}`,
    asOwner: or,
  };
}

/**
 * Which entry of the directory it is in system call `syscall` on a path (which `exists` now, or
 * not) changes: it creates one (`mkdir`, `link`, an `open` of a file not there), removes or
 * renames one (`unlink`, `rmdir`, `rename`); undefined for a call that changes no entry (it
 * reads or writes the file that is there), for which the path's own permissions count, not
 * its directory's.
 *
 * @example
 * ```ts
 * entryChange("open", false); // "create"
 * entryChange("open", true); // undefined: it writes the file
 * ```
 */
export function entryChange(
  syscall: string | undefined,
  exists: boolean,
): "create" | "remove" | undefined {
  if (CREATING.has(syscall ?? "") || (syscall === "open" && !exists)) return "create";
  return REMOVING.has(syscall ?? "") ? "remove" : undefined;
}

/** The first directory above `path` (from the root down) this user may not enter, if any. */
function closedDirectory(path: string): string | undefined {
  const above: string[] = [];
  for (let dir = dirname(path); dir !== parse(dir).root; dir = dirname(dir)) above.unshift(dir);
  return above.find(
    (dir) =>
      statSync(dir, { throwIfNoEntry: false })?.isDirectory() && !allowed(dir, constants.X_OK),
  );
}

/** Whether this user may do `mode` (`R_OK`, `W_OK`, `X_OK`) to `path`. */
function allowed(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whose `path` is and its mode (` (alice's, mode 700)`), and the other way out: run the command
 * as its owner, or, when it is this user's own (`uid`), change its mode; nothing of either when
 * it cannot be looked at.
 */
function ownership(path: string, uid: number): { whose: string; or: string } {
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats === undefined) return { whose: "", or: "" };
  const mode = (stats.mode & 0o777).toString(8);
  if (stats.uid === uid)
    return { whose: ` (yours, mode ${mode})`, or: ", or change its mode (chmod)" };
  const owner = userName(stats.uid);
  return { whose: ` (${owner}'s, mode ${mode})`, or: `, or run the command as ${owner}` };
}
