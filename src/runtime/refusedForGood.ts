/**
 * Whether a file-system error is one the same call meets again until a person changes the
 * file system: permission denied (`EACCES`, `EPERM`), a read-only file system (`EROFS`), a
 * file where a directory belongs (`ENOTDIR`). A launch refused so is not retried; a full disk
 * (`ENOSPC`), an I/O error or a network file system that went away may clear, and is.
 *
 * @example
 * ```ts
 * await files.mkdirp(dir).catch((error) => {
 *   throw refusedForGood(error) ? new ConfigError(`${dir} cannot be written`) : error;
 * });
 * ```
 */
export function refusedForGood(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "EACCES" || code === "EPERM" || code === "EROFS" || code === "ENOTDIR";
}
