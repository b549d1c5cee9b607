import { statfsSync } from "node:fs";

/**
 * Whether `error` is a write refused for want of room: a full disk (`ENOSPC`) or this user's
 * used-up disk quota (`EDQUOT`). Room can come back (a file removed, a quota raised), so a
 * result refused so is held and written again, where any other error fails its attempt.
 */
export function isDiskFull(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

/**
 * Why a write in `dir` (the store, or another folder baton makes) found no room
 * ({@link isDiskFull}), for a person: "no space left on its disk (12 KiB free)", the free
 * space as the file system tells it to this user (left out when it cannot say), or "this
 * user's disk quota is used up".
 *
 * @example
 * ```ts
 * noRoomReason("/scratch/.baton", error); // "no space left on its disk (0 B free)"
 * ```
 */
export function noRoomReason(dir: string, error: unknown): string {
  if ((error as NodeJS.ErrnoException).code === "EDQUOT")
    return "this user's disk quota is used up";
  let free = "";
  try {
    const { bavail, bsize } = statfsSync(dir);
    free = ` (${bytesText(bavail * bsize)} free)`;
  } catch {
    // No file system to ask (a store on the simulation's files): the reason stands alone.
  }
  return `no space left on its disk${free}`;
}

/** A size in bytes as a person reads it: `512 B`, `12 KiB`, `3.4 MiB`, `1.2 GiB`. */
function bytesText(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = bytes;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit++;
  }
  return `${unit === 0 || size >= 10 ? Math.round(size) : size.toFixed(1)} ${units[unit]}`;
}
