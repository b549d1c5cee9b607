/**
 * A deployment's folder that its clear left in place though nothing is left in it: its
 * `rmdir` failed for another reason than what is in it (a state dir this user may not write
 * to, a folder that is a symbolic link or a mount point). Nothing needs the folder any more:
 * the deployment has ended and its control files are gone.
 */
export interface FolderNotRemoved {
  /** The folder, on `host` when that is set. */
  dir: string;
  /** Its ssh host's spec; absent on this machine. */
  host?: string;
  /** Why its `rmdir` failed, as the system said it. */
  reason: string;
}

/**
 * The warning a folder not removed is told with, naming it, why, and what to do.
 *
 * @example
 * ```ts
 * folderNotRemovedLine({ dir: "/srv/run/train", reason: "EACCES: permission denied, rmdir '/srv/run/train'" });
 * // "the empty folder /srv/run/train of the ended deployment was not removed (EACCES: …); …"
 * ```
 */
export function folderNotRemovedLine({ dir, host, reason }: FolderNotRemoved): string {
  const where = host === undefined ? dir : `${dir} on ${host}`;
  return `the empty folder ${where} of the ended deployment was not removed (${reason}); nothing needs it any more: once what refused it is fixed (the folder above it not writable by you, a symbolic link or a mount point in its place), remove it with \`rmdir ${dir}\`${host === undefined ? "" : " there"}`;
}
