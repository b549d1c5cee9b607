import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { StoreError } from "../errors.ts";
import { fileInTheWay } from "./fileInTheWay.ts";
import { isWithin } from "./isWithin.ts";
import { shellQuote } from "./shellQuote.ts";
import { unwritableFolder, unwritableFolderAdvice } from "./unwritableFolder.ts";

/**
 * What a file-system error met while making the result store in `dir` (its folders, or a
 * file of its own in them) means to the user: a {@link StoreError} naming the path at fault
 * and what to do, in the words every folder baton makes shares ({@link unwritableFolder}):
 * `STORE_NOT_DIRECTORY` for a file in the way (`ENOTDIR`, `EEXIST`) or a symbolic link to
 * nothing on the way (`ENOENT`: a scratch disk not mounted, named with its target);
 * `STORE_NOT_WRITABLE` for a folder in a file system that makes no folders (`/proc`), a write
 * refused (`EACCES`, `EPERM`: what this user may not do there and whose it is, or, for an
 * `EPERM` its permissions do not explain, that the folder may be immutable; `EROFS`), or a
 * disk that is full (`ENOSPC`, `EDQUOT`). A store that cannot be written but holds results
 * is refused all the same, saying how to reuse them ({@link reuseAdvice}). Any other error
 * (an I/O error) is returned as it is.
 *
 * @example
 * ```ts
 * try { await files.mkdirp(join(dir, "results")); }
 * catch (error) { throw storeOpenError(dir, error); }
 * ```
 */
export function storeOpenError(dir: string, error: unknown): unknown {
  const unwritable = unwritableFolder(error, dir);
  if (unwritable !== undefined) {
    const { kind } = unwritable;
    const made = kind === "notMade" || kind === "fileInTheWay";
    const inTheWay = kind === "fileInTheWay" || unwritable.target !== undefined;
    return new StoreError(
      inTheWay ? "STORE_NOT_DIRECTORY" : "STORE_NOT_WRITABLE",
      `the result store ${dir} cannot be ${made ? "made" : "written"}: ${unwritable.why}; ${(kind === "denied" && reuseAdvice(dir)) || unwritableFolderAdvice(unwritable, "store")}`,
      dir,
      unwritable.path,
      { cause: error },
    );
  }
  return error;
}

/**
 * What an error reading `path` of the store in `dir` (an entry, or the folder of a shard)
 * means to the user: a {@link StoreError} (`STORE_UNREADABLE`) for one that is not this
 * user's to read (`EACCES`, `EPERM`: entries are mode 0600), a directory where an entry
 * belongs (`EISDIR`) or a file where a shard's folder belongs (`ENOTDIR`); a file where the
 * store itself, or a folder above it, belongs is `STORE_NOT_DIRECTORY`, as when it is opened
 * (a dry run reads a store without making it). Any other error is returned as it is.
 *
 * @example
 * ```ts
 * try { await files.read(path); }
 * catch (error) { throw storeReadError(dir, path, error); }
 * ```
 */
export function storeReadError(dir: string, path: string, error: unknown): unknown {
  const { code } = error as NodeJS.ErrnoException;
  // A file that is the store itself, or one of its parents, is no entry to move out of it.
  const inTheWay = code === "ENOTDIR" ? fileInTheWay(path) : undefined;
  if (inTheWay !== undefined && (resolve(inTheWay) === resolve(dir) || !isWithin(inTheWay, dir)))
    return storeOpenError(dir, error);
  const advice =
    code === "EISDIR" || code === "ENOTDIR"
      ? `it is a ${code === "EISDIR" ? "directory where a stored result" : "file where a folder of stored results"} belongs; move it out of the store (what it stood for is then computed again)`
      : code === "EACCES" || code === "EPERM"
        ? "permission denied: entries are readable by the user who stored them only (mode 0600); give this run a store (--store) of its own"
        : undefined;
  if (advice === undefined) return error;
  return new StoreError(
    "STORE_UNREADABLE",
    `cannot read ${path} in the result store ${dir}: ${advice}`,
    dir,
    path,
    { cause: error },
  );
}

/**
 * What to do with a store in `dir` that cannot be written but holds results (a colleague's, a
 * read-only mount, a folder made read-only); undefined when it holds none. A run stores each
 * result as it completes, so it refuses a store it cannot write to rather than compute results
 * it would lose: it says to reuse them from a copy, or as they are without storing what the
 * run computes (`--store-read-only`, which the run must be asked for), or to keep no results.
 *
 * @example
 * ```ts
 * reuseAdvice("/mnt/shared/.baton");
 * // "a run does not start on a store it cannot write to, even to reuse the results it holds (…): to reuse them, copy them … (--store COPY), or reuse them without storing what the run computes (--store-read-only), or keep no results (--no-store)"
 * ```
 */
export function reuseAdvice(dir: string): string | undefined {
  const results = join(dir, "results");
  let names: string[];
  try {
    names = readdirSync(results);
  } catch {
    return undefined;
  }
  if (!names.some((name) => /^[0-9a-f]{2}$/.test(name))) return undefined;
  const copy = `mkdir -p COPY && cp -r ${shellWord(results)} COPY/`;
  return `a run does not start on a store it cannot write to, even to reuse the results it holds (what the run computed would be lost): to reuse them, copy them to a folder you can write to and give that (${copy}, then --store COPY), or reuse them without storing what the run computes (--store-read-only), or keep no results (--no-store)`;
}

/** `text` as one word for a shell, quoted only when it must be. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : shellQuote(text);
}
