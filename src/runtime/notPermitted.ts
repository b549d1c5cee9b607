import { accessSync, constants, existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { nearestExisting } from "./nearestExisting.ts";
import { entryChange } from "./permissionAdvice.ts";
import { userName } from "./userName.ts";

/**
 * Why system call `syscall` on `path` (renaming it to `dest`, for a `rename`) met an `EPERM`
 * that is no matter of permissions, for a person: what is immutable (`chattr +i`) or
 * append-only (`chattr +a`), naming the file or the folder that refuses the call, whichever it
 * is; or, for removing or replacing another user's file in a sticky folder (/tmp and folders
 * shared as it is), whose it is, where the folder's mode would let this user. Undefined when
 * the permissions explain it (`permissionDenied` then says what this user may not do).
 *
 * Which one: a file or folder this user may not write though its mode lets it is immutable
 * (`access(W_OK)` answers `EPERM` for it, root's too), and named as such. Else (append-only,
 * which `access` does not tell) the one whose attributes can refuse that call: the folder, to
 * create an entry (`mkdir`, an `open` of a file not there); the file, to write one that is
 * there (an `open`); the file (a `rename`'s source and target that are there) or its folder,
 * to remove or rename one.
 *
 * @example
 * ```ts
 * notPermitted("unlink", ".baton/run/graph-0123456789abcdef.lock");
 * // "operation not permitted: /home/me/.baton/run/graph-0123456789abcdef.lock is immutable (lsattr -d … shows an i; chattr -i …, as root, lifts it)"
 * ```
 */
export function notPermitted(
  syscall: string | undefined,
  path: string,
  dest?: string,
): string | undefined {
  const file = resolve(path);
  const folder = nearestExisting(dirname(file));
  const change = entryChange(syscall, existsSync(file));
  const files = change === "create" ? [] : [file, ...(dest === undefined ? [] : [resolve(dest)])];
  const suspects = [...files.filter((at) => existsSync(at)), ...(change ? [folder] : [])];
  const immutable = suspects.filter(isImmutable);
  if (immutable.length > 0) {
    const paths = immutable.join(" ");
    return `operation not permitted: ${listed(immutable, "and")} ${immutable.length === 1 ? "is" : "are"} immutable (lsattr -d ${paths} shows an i; chattr -i ${paths}, as root, lifts it)`;
  }
  const sticky = change === "remove" ? stickyRefusal(folder, files.filter(existsSync)) : undefined;
  if (sticky !== undefined) return sticky;
  if (change === undefined) {
    return existsSync(file) && modeLetsWrite(file)
      ? `operation not permitted, though the permissions of ${file} let this user write it (is it immutable or append-only? see lsattr -d ${file})`
      : undefined;
  }
  if (!modeLetsWrite(folder)) return undefined;
  const which =
    change === "create"
      ? "is it immutable?"
      : `is ${listed(suspects, "or")} immutable or append-only?`;
  return `operation not permitted, though the permissions of ${folder} let this user write there (${which} see lsattr -d ${suspects.join(" ")})`;
}

/** The sticky bit of a mode (`S_ISVTX`, which Node's constants leave out). */
const STICKY = 0o1000;

/**
 * Why this user may not remove or replace `entries` (those still there) in `folder` when it is
 * sticky (mode 1777, as /tmp is): there only the owner of an entry, the folder's owner and root
 * may, whatever the folder's mode lets. Undefined when the folder is not sticky, or is this
 * user's, or every entry is this user's own.
 */
function stickyRefusal(folder: string, entries: string[]): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined || uid === 0) return undefined;
  const { mode, uid: folderOwner } = statSync(folder);
  if ((mode & STICKY) === 0 || folderOwner === uid) return undefined;
  const theirs = entries.find((at) => statSync(at).uid !== uid);
  if (theirs === undefined) return undefined;
  return `operation not permitted: ${folder} is sticky (mode ${(mode & 0o7777).toString(8)}, as /tmp is), where only an entry's owner, the folder's owner or root may remove or replace it, and ${theirs} is ${userName(statSync(theirs).uid)}'s`;
}

/** `a`, `a or b`, `a, b or c` (or `and`). */
function listed(items: string[], and: "and" | "or"): string {
  return items.length < 2
    ? items.join("")
    : `${items.slice(0, -1).join(", ")} ${and} ${items.at(-1)}`;
}

/** Whether `path` is immutable: one no user may write, root included, whatever its mode. */
function isImmutable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Whether the mode of `path` lets this user write it (a folder: in it), as its owner, a member
 * of its group or anyone (root always): an `EPERM` there is then no matter of permissions.
 */
function modeLetsWrite(path: string): boolean {
  const uid = process.getuid?.();
  if (uid === undefined) return false;
  if (uid === 0) return true;
  const { mode, uid: owner, gid } = statSync(path);
  if (owner === uid) return (mode & 0o200) !== 0;
  if (process.getgroups?.().includes(gid) || process.getgid?.() === gid)
    return (mode & 0o020) !== 0;
  return (mode & 0o002) !== 0;
}
