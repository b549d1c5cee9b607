import { existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { permissionDenied } from "./permissionAdvice.ts";

/**
 * Why this user may not `syscall` `path` (`code`: `EACCES`, `EPERM` or `EROFS`), for a person:
 * the file system is read-only; an `EPERM` that the permissions of the nearest folder there
 * do not explain (is it immutable?); else what `permissionDenied` says this user may not do.
 * The one wording of a refused write, for a folder baton makes ({@link unwritableFolder}) and
 * a file of its own (a dead run's graph lock).
 *
 * @example
 * ```ts
 * writeDeniedReason("EACCES", "unlink", ".baton/run/x.run");
 * // "permission denied: this user (bob) may not remove or rename anything in /home/bob/.baton/run (root's, mode 755)"
 * ```
 */
export function writeDeniedReason(
  code: string | undefined,
  syscall: string | undefined,
  path: string,
): string {
  const folder = nearestFolder(path);
  return code === "EROFS"
    ? "the file system is read-only"
    : code === "EPERM" && modeLetsWrite(folder)
      ? `operation not permitted, though the permissions of ${folder} let this user write there (is it immutable? see lsattr -d ${folder})`
      : `permission denied: ${permissionDenied(syscall, path).problem}`;
}

/** The nearest folder above `path` that exists. */
function nearestFolder(path: string): string {
  let at = dirname(resolve(path));
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  return at;
}

/**
 * Whether the mode of the folder `dir` lets this user write in it, as its owner, a member of
 * its group or anyone (root always): an `EPERM` there is then no matter of permissions.
 */
function modeLetsWrite(dir: string): boolean {
  const uid = process.getuid?.();
  if (uid === undefined) return false;
  if (uid === 0) return true;
  const { mode, uid: owner, gid } = statSync(dir);
  if (owner === uid) return (mode & 0o200) !== 0;
  if (process.getgroups?.().includes(gid) || process.getgid?.() === gid)
    return (mode & 0o020) !== 0;
  return (mode & 0o002) !== 0;
}
