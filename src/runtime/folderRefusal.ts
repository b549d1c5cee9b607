import { BatonError } from "../errors.ts";
import { errnoReason } from "./errnoReason.ts";
import {
  type MadeFolder,
  type UnwritableFolder,
  unwritableFolder,
  unwritableFolderAdvice,
} from "./unwritableFolder.ts";

/** What {@link folderRefusal} says of an error. */
export interface FolderRefusal {
  /** What went wrong, naming the path: "/srv/state: i/o error (EIO)". */
  why: string;
  /** What to do: free space, move a file aside, check the disk, or use another folder. */
  advice: string;
  /** The folder that cannot be made or written, when that is what it is. */
  unwritable: UnwritableFolder | undefined;
  /** Whether it is the system's error (else baton's own, or a program's, said as it is). */
  system: boolean;
}

/**
 * Why `dir`, a folder baton makes (`folder`: a launch's state dir, the workers' logs…), or a
 * file in it refused to be listed, made or written, and what to do, for a person: a folder
 * that cannot be made or written in `unwritableFolder`'s words, with its way out; any other
 * system error (an I/O error) as the path it names and what the system said (`errnoReason`),
 * never Node's message repeating the system call (for an I/O error, with a look at the disk
 * first). An error that is not the system's (no `code`, or baton's own) is said as it is.
 *
 * @example
 * ```ts
 * folderRefusal(eio, "/srv/state", "stateDir"); // error: EIO from readdir("/srv/state")
 * // { why: "/srv/state: i/o error (EIO)", advice: "check the disk it is on, or give the state dir (--state-dir, or stateDir) another directory", unwritable: undefined, system: true }
 * ```
 */
export function folderRefusal(error: unknown, dir: string, folder: MadeFolder): FolderRefusal {
  const unwritable = unwritableFolder(error, dir);
  const advice = unwritableFolderAdvice(unwritable, folder);
  if (unwritable !== undefined) return { why: unwritable.why, advice, unwritable, system: true };
  const { code, path = dir } = error as NodeJS.ErrnoException;
  if (code === undefined || error instanceof BatonError) {
    return { why: errnoReason(error), advice, unwritable, system: false };
  }
  return {
    why: `${path}: ${errnoReason(error)}`,
    advice: code === "EIO" ? `check the disk it is on, or ${advice}` : advice,
    unwritable,
    system: true,
  };
}
