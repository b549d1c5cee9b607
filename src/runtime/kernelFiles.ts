import { statfsSync, statSync } from "node:fs";
import { nearestExisting } from "./nearestExisting.ts";

/**
 * The file systems that hold the kernel's own files, by the type `statfs` tells (Linux's
 * `magic.h`), and the name a person knows each by.
 */
const KERNEL_FILE_SYSTEMS = new Map([
  [0x9fa0, "procfs"],
  [0x62656572, "sysfs"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
]);

/**
 * Why nothing of a user's can be written at `path` when it is in a file system of the
 * kernel's own files (`/proc`, `/sys`, a cgroup file system), for a person: there the kernel
 * refuses (`EACCES` or `EPERM`, root too) whatever the modes say, so neither "is it
 * immutable?" nor "change its mode" is true. In a cgroup file system a folder made is a cgroup,
 * which root, or a user the cgroup is delegated to, may make; a new file, no one; a cgroup's
 * own file (`cgroup.procs`, which a move writes), root or that user may write (`syscall`:
 * `open` or `write` of a file that is there). Undefined for
 * any other file system, or when `statfs` cannot tell.
 *
 * @example
 * ```ts
 * kernelFilesReason("/sys/baton-state");
 * // "/sys is in sysfs, which holds the kernel's own files: no one, root included, makes a file or folder there"
 * ```
 */
export function kernelFilesReason(path: string, syscall?: string): string | undefined {
  const at = nearestExisting(path);
  let type: number;
  try {
    type = statfsSync(at).type;
  } catch {
    return undefined;
  }
  const name = KERNEL_FILE_SYSTEMS.get(type);
  if (name === undefined) return undefined;
  if (!name.startsWith("cgroup")) {
    return `${at} is in ${name}, which holds the kernel's own files: no one, root included, makes a file or folder there`;
  }
  return (syscall === "open" || syscall === "write") && at === path && isFile(at)
    ? `${at} is a file of a cgroup (${name}), which only root or a user the cgroup is delegated to may write`
    : `${at} is in a cgroup file system (${name}), which holds the kernel's cgroup files: no one, root included, makes a file there, and a folder made there is a cgroup, which only root or a user the cgroup is delegated to may make or change`;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
