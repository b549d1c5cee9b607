import { atomicWriteTarget } from "./atomicTempTarget.ts";
import { isDiskFull, noRoomReason } from "./diskFull.ts";
import { fileInTheWay } from "./fileInTheWay.ts";
import { folderNotMade } from "./folderNotMade.ts";
import { writeDeniedReason } from "./writeDeniedReason.ts";

/** Why a folder baton makes, or a file of its own in it, cannot be written (or listed). */
export interface UnwritableFolder {
  /** What is wrong: a folder not made (`ENOENT`), a file in the way, a write refused, no room. */
  kind: "notMade" | "fileInTheWay" | "denied" | "full";
  /** The path at fault: the symbolic link to nothing, the file in the way, the path refused. */
  path: string;
  /** What is wrong, for a person: "/srv/notes.txt is a file, not a directory". */
  why: string;
  /** The target of a symbolic link to nothing on the way: making it is one way out. */
  target?: string;
}

/**
 * What a file-system error met while making the folder `dir` or writing in it means, in the
 * one wording the store, the state dir of rank groups, the folders of logs and `.baton` beside
 * the graph module share: a folder that cannot be made though the one above it is there
 * ({@link folderNotMade}: a symbolic link to nothing on the way, a file system that makes no
 * folders); a file in the way (`ENOTDIR`, `EEXIST`, naming the file: {@link fileInTheWay});
 * a write refused (`EACCES`, `EPERM`, `EROFS`: "cannot SYSCALL PATH: " and
 * {@link writeDeniedReason}; an `access` of a folder that is there is a write to it, a
 * `scandir` reads "cannot list": the reaper lists a state dir before a launch); no
 * room (`ENOSPC`, `EDQUOT`: "cannot SYSCALL PATH: " and {@link noRoomReason}). Undefined for
 * any other error. `dir` stands for the path when the error names none. An error of the temp
 * file of a `Files.writeAtomic` (`.NAME.PID.RANDOM.tmp`, which a user never sees and cannot
 * look for) is said of the file it was to become, "cannot write PATH", and judged on the temp
 * file all the same (whether this user may create an entry in its folder).
 *
 * @example
 * ```ts
 * unwritableFolder(error, "/srv/out"); // error: EACCES from accessSync("/srv/out", W_OK)
 * // { kind: "denied", path: "/srv/out", why: "cannot write /srv/out: permission denied: this user (bob) may not write it (root's, mode 755)" }
 * ```
 */
export function unwritableFolder(error: unknown, dir: string): UnwritableFolder | undefined {
  const notMade = folderNotMade(error, dir);
  if (notMade !== undefined) return { kind: "notMade", ...notMade };
  const {
    code,
    path = dir,
    syscall: call = "write",
    dest,
  } = error as NodeJS.ErrnoException & {
    /** A `rename`'s target. */
    dest?: string;
  };
  if (code === "ENOTDIR" || code === "EEXIST") {
    const file = fileInTheWay(path);
    return { kind: "fileInTheWay", path: file, why: `${file} is a file, not a directory` };
  }
  const syscall = call === "access" ? "write" : call;
  const shown = atomicWriteTarget(path);
  // What a person calls it: a directory read (the reaper's, before a launch) is listed, and
  // any step of an atomic write is a write of the file it makes.
  const verb =
    shown !== path ? "write" : syscall === "scandir" || syscall === "opendir" ? "list" : syscall;
  if (isDiskFull(error)) {
    return {
      kind: "full",
      path: shown,
      why: `cannot ${verb} ${shown}: ${noRoomReason(dir, error)}`,
    };
  }
  if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") return undefined;
  return {
    kind: "denied",
    path: shown,
    why: `cannot ${verb} ${shown}: ${writeDeniedReason(code, syscall, path, dest)}`,
  };
}

/** The folders baton makes, and how a user gives each one another place. */
const ANOTHER_PLACE = {
  /** The result store. */
  store: "give the store (--store) another directory",
  /** A rank group's state dir (`baton launch`). */
  stateDir: "give the state dir (--state-dir, or stateDir) another directory",
  /** The folder of `baton run`'s own log. */
  log: "keep the logs in another directory",
  /** The folder of a pool's worker logs. */
  workerLogs: "give the workers' logs (logsDir) another directory",
} as const;

/** A folder baton makes, for {@link unwritableFolderAdvice}. */
export type MadeFolder = keyof typeof ANOTHER_PLACE;

/**
 * What to do about `folder` that cannot be written ({@link unwritableFolder}), `unwritable`
 * undefined for an error of another kind: make the target of a symbolic link to nothing, or
 * move the file in the way aside, or free some space; or else give the folder another place
 * (on a disk that makes folders, one this user can write, or another disk).
 *
 * @example
 * ```ts
 * unwritableFolderAdvice({ kind: "notMade", path: "/scratch", target: "/lus/alice", why: "…" }, "store");
 * // "make /lus/alice, or give the store (--store) another directory"
 * ```
 */
export function unwritableFolderAdvice(
  unwritable: UnwritableFolder | undefined,
  folder: MadeFolder,
): string {
  const elsewhere = ANOTHER_PLACE[folder];
  switch (unwritable?.kind) {
    case "notMade":
      return unwritable.target === undefined
        ? `${elsewhere}, on a disk you can write to`
        : `make ${unwritable.target}, or ${elsewhere}`;
    case "fileInTheWay":
      return `move it aside, or ${elsewhere}`;
    case "denied":
      return `${elsewhere}, one you can write to`;
    case "full":
      return `free some space, or ${elsewhere}, on another disk`;
    default:
      return elsewhere;
  }
}
