import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Why a folder baton makes could not be made though the folder above it is there. */
export interface FolderNotMade {
  /** The path at fault: the symbolic link to nothing, or the folder that could not be made. */
  path: string;
  /** What is wrong, for a person: "/scratch is a symbolic link to /lus/x, which does not exist (…)". */
  why: string;
  /** The target of the symbolic link to nothing: making it is one way out. */
  target?: string;
}

/**
 * What an `ENOENT` met while making a folder (`makeDirs`) means, for every folder baton makes
 * (one of the kinds of `unwritableFolder`): a symbolic link on the way whose target is gone (a scratch
 * disk not mounted), named with its target, or a folder that cannot be made though its parent
 * is there (a file system that makes no folders, such as `/proc`). Undefined for any other
 * error. `dir` stands for the path when the error names none.
 *
 * @example
 * ```ts
 * folderNotMade(error, "/scratch/run");
 * // { path: "/scratch", target: "/lus/alice", why: "/scratch is a symbolic link to /lus/alice, which does not exist (a disk not mounted?)" }
 * ```
 */
export function folderNotMade(error: unknown, dir: string): FolderNotMade | undefined {
  const { code, path = dir, syscall = "mkdir" } = error as NodeJS.ErrnoException;
  if (code !== "ENOENT") return undefined;
  const link = danglingLink(path);
  return link === undefined
    ? {
        path,
        why: `cannot ${syscall} ${path}: no such file or directory, though the folder above it is there (a file system that makes no folders, such as /proc?)`,
      }
    : {
        path: link.path,
        why: `${link.path} is a symbolic link to ${link.target}, which does not exist (a disk not mounted?)`,
        target: link.target,
      };
}

/** The nearest of `path` and its parents that is a symbolic link to nothing, and its target. */
function danglingLink(path: string): { path: string; target: string } | undefined {
  for (let at = resolve(path); dirname(at) !== at; at = dirname(at)) {
    if (existsSync(at)) return undefined;
    try {
      if (lstatSync(at).isSymbolicLink()) {
        return { path: at, target: resolve(dirname(at), readlinkSync(at)) };
      }
    } catch {
      // Not there at all: its parent may be the link.
    }
  }
  return undefined;
}
