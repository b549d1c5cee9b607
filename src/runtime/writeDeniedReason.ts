import { kernelFilesReason } from "./kernelFiles.ts";
import { notPermitted } from "./notPermitted.ts";
import { permissionDenied } from "./permissionAdvice.ts";

/**
 * Why this user may not `syscall` `path` (`code`: `EACCES`, `EPERM` or `EROFS`; `dest`, what a
 * `rename` renamed it to), for a person: the file system is read-only; it is one of the
 * kernel's own files, which the kernel refuses whatever the modes say (`/proc`, `/sys`, a
 * cgroup file system: {@link kernelFilesReason}); an `EPERM` that is no matter of permissions,
 * naming the file or folder that is immutable or may be ({@link notPermitted}); else what
 * `permissionDenied` says this user may not do. The one
 * wording of a refused write, for a folder baton makes ({@link unwritableFolder}) and a file
 * of its own (a dead run's graph lock).
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
  dest?: string,
): string {
  if (code === "EROFS") return "the file system is read-only";
  const kernel = kernelFilesReason(path, syscall);
  if (kernel !== undefined) {
    return `${code === "EPERM" ? "operation not permitted" : "permission denied"}: ${kernel}`;
  }
  const immutable = code === "EPERM" ? notPermitted(syscall, path, dest) : undefined;
  return immutable ?? `permission denied: ${permissionDenied(syscall, path).problem}`;
}
