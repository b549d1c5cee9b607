import { accessSync, constants, lstatSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { ConfigError, StoreError } from "../errors.ts";
import { isWithin } from "../runtime/isWithin.ts";
import { makeDirs } from "../runtime/makeDirs.ts";
import { realPath } from "../runtime/realPath.ts";
import { reuseAdvice, storeOpenError } from "../runtime/storeErrors.ts";
import { unwritableFolder } from "../runtime/unwritableFolder.ts";

/** Where `baton run` without `--store` keeps its files. */
export interface BatonDir {
  dir: string;
  /**
   * Why `.baton` beside the graph module could not be used, when `dir` is this user's folder
   * in the system's temp directory instead (with `--no-store` or `--store-read-only` only).
   */
  instead?: string;
}

/** What the run does with results, which decides where its own files may go. */
export interface BatonDirUse {
  /** It keeps them: `.baton` is the store, and must be usable. */
  keepsResults: boolean;
  /** The store a `--store-read-only` run reuses them from, where nothing is written. */
  readsOnly?: string | undefined;
}

/**
 * The folder `baton run` keeps its files in when `--store` is not given: `.baton` beside the
 * graph module (made here when missing), the result store, or with `--no-store` or
 * `--store-read-only` (`keepsResults` false) the folder of its logs and run files. A graph module in a folder this
 * user may not write in (another user's, a read-only checkout or file system, a package
 * installed for the whole machine) made `baton run` fail on the store's lock, naming that
 * folder's owner and asking them to chmod it, and `--no-store` fail on its log, with no flag
 * to put that elsewhere. Now a run that keeps results fails with a `StoreError`
 * (`STORE_NOT_WRITABLE`) that says why and to give `--store DIR` or `--no-store`; a
 * `--no-store` run keeps its files in `baton-<uid>` in the system's temp directory instead, a
 * folder that must be this user's and closed to others (as `tmux` keeps its sockets), else a
 * `ConfigError`. So does a `--store-read-only` run whose store is `.baton` beside the graph
 * module, or holds it: nothing is written in a store only read, not even a log (a run's logs
 * in the store's `logs/` would also prune the logs of the runs that wrote it).
 *
 * @example
 * ```ts
 * batonDirBesideGraph("/opt/pipelines/graph.ts", { keepsResults: false });
 * // { dir: "/tmp/baton-1000", instead: "cannot mkdir /opt/pipelines/.baton: permission denied: this user (bob) may not create anything in /opt/pipelines (root's, mode 755)" }
 * ```
 */
export function batonDirBesideGraph(graphPath: string, use: BatonDirUse): BatonDir {
  const beside = besideGraph(graphPath);
  const { readsOnly } = use;
  const flag = readsOnly === undefined ? "--no-store" : "--store-read-only";
  // Asked before `.baton` is made: a store only read gets no folder either.
  if (readsOnly !== undefined && isWithin(realPath(beside), realPath(readsOnly))) {
    const why = `${realPath(beside) === realPath(readsOnly) ? "it is" : "it is in"} the store this run only reads`;
    return { dir: ownTempDir(flag, why), instead: why };
  }
  const problem = cannotWriteIn(beside);
  if (problem === undefined) return { dir: beside };
  if (use.keepsResults) {
    // A folder that cannot be made is the store's to name, as for --store.
    if (problem.notMade) throw storeOpenError(beside, problem.cause);
    throw new StoreError(
      "STORE_NOT_WRITABLE",
      `the result store ${beside} (by default .baton beside the graph module) cannot be used: ${problem.why}; ${reuseAdvice(beside) ?? "give this run a store you can write to (--store DIR), or keep no results (--no-store)"}`,
      beside,
      problem.path,
    );
  }
  return { dir: ownTempDir(flag, problem.why), instead: problem.why };
}

/**
 * `baton-<uid>` in the system's temp directory, made 0700 when missing; a `ConfigError` when
 * it is not a directory of this user's closed to others, as anyone may make it first in a
 * shared `/tmp`. `flag` and `why` say why the run's files go there.
 */
function ownTempDir(flag: string, why: string): string {
  const uid = process.getuid?.();
  const own = join(tmpdir(), `baton-${uid ?? "user"}`);
  try {
    mkdirSync(own, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const stats = lstatSync(own);
  if (!stats.isDirectory() || (uid !== undefined && stats.uid !== uid) || stats.mode & 0o077) {
    throw new ConfigError(
      `${flag} keeps this run's logs in .baton beside the graph module, which cannot be used (${why}), or else in ${own}, which is not a folder of this user's closed to others (it must be a directory of yours, mode 700); move that aside, or run a copy of the graph module from a folder you can write to`,
    );
  }
  return own;
}

/** `.baton` beside the graph module, as it is (a dry run looks there without making it). */
export function besideGraph(graphPath: string): string {
  return join(dirname(resolve(graphPath)), ".baton");
}

/**
 * Why this user cannot make `dir` or write in it, in the store's words (`unwritableFolder`: a
 * write refused, `notMade` for a symbolic link to nothing or a file system that makes no
 * folders), and the path at fault; undefined when it can, or when what is wrong is for the
 * store to say (a file in the way, a full disk).
 */
function cannotWriteIn(
  dir: string,
): { why: string; path: string; notMade: boolean; cause: unknown } | undefined {
  try {
    makeDirs(dir);
    accessSync(dir, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (error) {
    const unwritable = unwritableFolder(error, dir);
    if (unwritable?.kind !== "denied" && unwritable?.kind !== "notMade") return undefined;
    return { ...unwritable, notMade: unwritable.kind === "notMade", cause: error };
  }
}
