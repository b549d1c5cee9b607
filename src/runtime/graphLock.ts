import { hostname } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { StoreError } from "../errors.ts";
import { sha256Hex } from "../graph/sha256Hex.ts";
import { type AbandonedTempsLogger, removeAbandonedTemps } from "./abandonedTemps.ts";
import { atomicTempTarget } from "./atomicTempTarget.ts";
import { isPermissionDenied, ownerName } from "./fileOwner.ts";
import { isWithin } from "./isWithin.ts";
import { nodeFiles } from "./nodeFiles.ts";
import { nodeProcs } from "./nodeProcs.ts";
import type { Files } from "./ports.ts";
import { realPath } from "./realPath.ts";
import { storeOpenError } from "./storeErrors.ts";
import { checkStoreFormat } from "./storeFormat.ts";
import { userName } from "./userName.ts";
import { writeDeniedReason } from "./writeDeniedReason.ts";

/** The format of a lock file. */
const LOCK_FORMAT = "baton.graph-lock/1";
/** The holder renews its lock's modification time this often. */
export const LOCK_RENEW_MS = 10_000;
/**
 * A lock of another host (whose pid cannot be checked from here) that nobody renewed for
 * this long is stale: its run was killed, or its host went down.
 */
export const LOCK_STALE_MS = 60_000;

/** The lock files this process holds now, by when it took each: not gone to its own `readGraphLocks`. */
const heldHere = new Map<string, number>();

/**
 * What a lock file holds: who holds it, and what the run noted since it started
 * ({@link GraphLock.note}), for `baton status`.
 */
export interface LockHolder extends RunNotes {
  format: typeof LOCK_FORMAT;
  pid: number;
  host: string;
  /** The holder's argv, to tell it from another process that was given its pid later. */
  argv: string[];
  /** The graph module's real path. */
  graph: string;
  /** When the run took the lock, in ms since the epoch. */
  startedAt: number;
  /** The run's result store, and the folder of its logs (absolute; absent from an older baton's lock). */
  store?: string;
  logs?: string;
  /**
   * The flag with which the run takes no lock, for a run registered in place of one
   * (`registerRun`): it keeps no results, or only reads them.
   */
  withoutLock?: RunWithoutLock;
}

/** The flags of a `baton run` that takes no graph lock, and registers instead (`registerRun`). */
export type RunWithoutLock = "--no-store" | "--store-read-only";

/**
 * How far a run is, as its lock says: its jobs, those completed (stored results reused
 * among them), failed and running (or storing their results), as of the lock's last write.
 */
export interface LockedProgress {
  total: number;
  completed: number;
  failed: number;
  running: number;
}

/** What a run notes in its lock as it learns it, for `baton status`. */
export interface RunNotes {
  /**
   * Where workers join the run (`baton worker --connect`: this host's name in place of a
   * wildcard), the address it listens on when that is another (`ws://0.0.0.0:7000`), and its
   * secret file's path.
   */
  address?: string;
  listenAddress?: string;
  secretFile?: string;
  progress?: LockedProgress;
}

/**
 * The file by which `baton status` finds a running `baton run`: its graph lock
 * ({@link lockGraph}), or for a run that takes none, its registration (`registerRun`).
 */
export interface RunRecord {
  /** The file: `DIR/run/graph-<16 hex>.lock`, or a registration's `….run`. */
  readonly path: string;
  /**
   * Adds `notes` to what the lock says of its run (`baton status` reads it): written with the
   * next renewal, so a note made many times a second (progress) costs no write of its own; with
   * `now`, written at once (a lock no longer this process's is left alone). Resolves once written.
   */
  note(notes: RunNotes, options?: { now?: boolean }): Promise<void>;
  /** Stops renewing the file and removes it, if it is still this process's. */
  release(): Promise<void>;
}

/** A lock taken by {@link lockGraph}. */
export interface GraphLock extends RunRecord {
  /** The stale lock this one replaced, said for a log line: whose it was and why it was stale. */
  readonly tookOver?: string;
}

export interface LockGraphOptions {
  /** Where the lock file is made, read, renewed and removed (default `nodeFiles()`). */
  files?: Files;
  /** The run's log folder, which the lock names for `baton status`. */
  logs?: string;
}

/**
 * Takes the lock of graph module `graph` in the result store `storeDir`, so that a second
 * `baton run` of the same graph on the same store fails at once instead of computing every
 * job the first one computes: the file `DIR/run/graph-<hash of the graph's real path>.lock`,
 * created exclusively (mode 0600) through the Files port, holding this process's pid, host,
 * argv and start time, the store and the run's log folder, and renewed (written again, while
 * it is still this process's, with what the run noted meanwhile: `note`) every
 * {@link LOCK_RENEW_MS}. `baton status` lists the runs from their locks (`readGraphLocks`).
 *
 * A lock that is already there is taken over when its holder is gone: on this host, when its
 * pid no longer exists or now belongs to another program (another argv); from another host,
 * whose pids mean nothing here, when nobody renewed it for {@link LOCK_STALE_MS}. Otherwise
 * this is a {@link StoreError} `STORE_LOCKED` naming the holder's pid and host. A lock, or a
 * `DIR/run/` folder, of another user that this one may not read, make or remove is
 * `STORE_LOCK_DENIED` naming the file and its owner; a directory where the lock file belongs is
 * `STORE_UNREADABLE` (it crashed the command with a bare `EISDIR`). A file in the way of `DIR/run/`, a
 * store that cannot be made (`STORE_NOT_WRITABLE`, whoever owns the folder above it), or one
 * that cannot be written, is a `StoreError` as well. A store a newer baton wrote (its format
 * marker) is `STORE_NEWER_FORMAT` before anything is made in it, the lock included.
 *
 * The store itself does not need the lock: writes are atomic and each result is the same
 * whoever computes it. Runs of different graphs share a store freely.
 *
 * @example
 * ```ts
 * const lock = await lockGraph(".baton", "pipeline.graph.ts");
 * try { await engine.run(graph); } finally { await lock.release(); }
 * ```
 */
export async function lockGraph(
  storeDir: string,
  graph: string,
  { files = nodeFiles(), logs }: LockGraphOptions = {},
): Promise<GraphLock> {
  const dir = join(storeDir, "run");
  const graphPath = realPath(graph);
  const path = join(dir, `${graphFileStem(graphPath)}.lock`);
  const holder = runHolder(graphPath, { store: storeDir, logs });
  const lock = { files, storeDir, path, graph: graphPath };
  await checkStoreFormat(storeDir, files);
  try {
    await files.mkdirp(dir);
  } catch (error) {
    throw await lockFileError(lock, dir, "make", error);
  }
  let tookOver: string | undefined;
  // Another run may take the lock between a stale one's removal and this one's creation.
  for (let attempt = 1; !(await create(lock, JSON.stringify(holder))); attempt++) {
    const other = await readHolder(lock);
    if (other === "gone") continue;
    const stale = await staleness(other, lock);
    if (stale === undefined || attempt === 3) throw lockedError(lock, other);
    await removeIfUnchanged(lock, other);
    tookOver =
      other === "unreadable"
        ? `an unreadable lock (${stale})`
        : `the lock of pid ${other.pid} on ${other.host}, started ${new Date(other.startedAt).toISOString()} (${stale})`;
  }
  return { ...keepRecord(lock, holder), ...(tookOver !== undefined && { tookOver }) };
}

/**
 * The start of a run's lock or registration file's name, `graph-<16 hex>`: a hash of the
 * graph module's real path.
 *
 * @example
 * ```ts
 * const lock = join(".baton/run", `${graphFileStem(realPath("pipeline.graph.ts"))}.lock`);
 * ```
 */
export function graphFileStem(graphPath: string): string {
  return `graph-${sha256Hex(graphPath).slice(0, 16)}`;
}

/**
 * What this process's lock or registration says of its run of the graph module at
 * `graphPath` (a real path) as it starts: pid, host, argv, start time, and its store and log
 * folder when it has them (made absolute).
 *
 * @example
 * ```ts
 * const holder = runHolder("/home/me/pipeline.graph.ts", { logs: ".baton/logs/x", withoutLock: "--no-store" });
 * ```
 */
export function runHolder(
  graphPath: string,
  { store, logs, withoutLock }: { store?: string; logs?: string; withoutLock?: RunWithoutLock },
): LockHolder {
  return {
    format: LOCK_FORMAT,
    pid: process.pid,
    host: hostname(),
    // As the process table shows it (`process.argv` has the paths resolved).
    argv: nodeProcs().inspect(process.pid)?.argv ?? process.argv,
    graph: graphPath,
    startedAt: Date.now(),
    ...(store !== undefined && { store: resolve(store) }),
    ...(logs !== undefined && { logs: resolve(logs) }),
    ...(withoutLock !== undefined && { withoutLock }),
  };
}

/**
 * Keeps the lock or registration file `place.path`, just made holding `holder`, written
 * while this process runs: renewed every {@link LOCK_RENEW_MS} with what the run noted, while
 * it still holds this process's holder, and removed on release.
 *
 * @example
 * ```ts
 * const record = keepRecord({ files, storeDir, path, graph }, holder);
 * await record.release();
 * ```
 */
export function keepRecord(place: LockPlace, holder: LockHolder): RunRecord {
  const { files, path } = place;
  let notes: RunNotes = {};
  /** Whether the file still holds this process's holder. */
  const ours = async () => {
    const now = await readHolder(place);
    return now !== "gone" && now !== "unreadable" && isSame(now, holder);
  };
  let renewing: Promise<void> = Promise.resolve();
  /** Writes the file again, after any write under way, while it is still this process's. */
  const rewrite = () => {
    renewing = renewing
      .then(async () => {
        if (await ours()) await files.writeAtomic(path, JSON.stringify({ ...holder, ...notes }));
      })
      .catch(() => {
        // Removed by hand, or a disk that failed: the run goes on without it.
      });
    return renewing;
  };
  const renew = setInterval(rewrite, LOCK_RENEW_MS);
  renew.unref();
  heldHere.set(path, holder.startedAt);
  return {
    path,
    async note(news, { now = false } = {}) {
      notes = { ...notes, ...news };
      if (now) await rewrite();
    },
    async release() {
      clearInterval(renew);
      heldHere.delete(path);
      await renewing;
      if (await ours()) await files.remove(path);
    },
  };
}

/**
 * A lock file's name in a store's `run/` folder, or a registration's (`registerRun`):
 * `graph-<16 hex>-<pid>-<8 hex>.run`.
 */
const RECORD_FILE = /^graph-[0-9a-f]{16}(?:\.lock|-[1-9]\d*-[0-9a-f]{8}\.run)$/;

/** Whether the lock or registration file `path` is a registration (`registerRun`). */
function isRegistration(path: string): boolean {
  return path.endsWith(".run");
}

/** A `baton run` found by its graph lock or its registration ({@link readGraphLocks}). */
export interface LockedRun extends Omit<LockHolder, "format"> {
  /** The lock file, or the registration of a run that takes no lock (`withoutLock`). */
  path: string;
  /** How long ago the lock was last written (made, renewed or noted in): its progress is as of then. */
  renewedAgoMs: number;
  /**
   * Why its run is gone (its process is gone, its pid was reused, it was not renewed), as the
   * next run of its graph judges it to take the lock over and `removeGoneGraphLocks` to remove
   * it; absent while the run may still be going.
   */
  gone?: string;
}

/**
 * The runs that hold a graph lock in `dir` (a store's `run/` folder, the default state dir
 * `.baton/run`), and those that take none registered there (`registerRun`, `withoutLock`
 * says with which flag): living ones, and those killed before they could remove their file
 * (`gone` says why). One that cannot be read is a problem saying so (a lock appears whole, so
 * it is damaged), and so is one this user may not read (another user's, mode 0600), naming its
 * owner. Only reads.
 *
 * @example
 * ```ts
 * const { runs } = await readGraphLocks(".baton/run");
 * for (const run of runs) console.log(run.pid, run.graph, run.gone ?? "running");
 * ```
 */
export async function readGraphLocks(
  dir: string,
  files: Files = nodeFiles(),
): Promise<{ runs: LockedRun[]; problems: string[] }> {
  const runs: LockedRun[] = [];
  const problems: string[] = [];
  for (const found of await findGraphLocks(dir, files)) {
    if ("problem" in found) {
      problems.push(found.problem);
      continue;
    }
    runs.push(lockedRun(found));
  }
  return { runs, problems };
}

/**
 * Removes from `dir` the graph locks and registrations of runs that are gone
 * (`readGraphLocks`'s `gone`): a run killed with SIGKILL leaves its file (a lock the next run
 * of its graph would take over), which `baton status` lists as a dead run until then. A lock
 * another run took meanwhile stays. With `registrationsOnly`, the locks stay too (a run
 * starting removes the registrations only: `removeGoneRegistrations`). Then it removes the
 * temp files of locks and registrations whose creators were killed mid-create, before their
 * `link` (no lock of theirs holds their pid) or right after it (`removeAbandonedTemps`: a
 * writer gone from this host, and untouched for {@link LOCK_STALE_MS}), and tells `logger`.
 * Returns the runs whose files it removed, and those whose files it may not remove (`failed`,
 * each with its `StoreError` saying whose it is and who can): one such file does not keep it
 * from the rest.
 *
 * @example
 * ```ts
 * const { removed, failed } = await removeGoneGraphLocks(".baton/run");
 * for (const run of removed) console.log(run.pid, run.gone);
 * ```
 */
export async function removeGoneGraphLocks(
  dir: string,
  files: Files = nodeFiles(),
  {
    registrationsOnly = false,
    logger,
  }: { registrationsOnly?: boolean; logger?: AbandonedTempsLogger | undefined } = {},
): Promise<GoneLocksRemoval> {
  const removal: GoneLocksRemoval = { removed: [], failed: [] };
  for (const found of await findGraphLocks(dir, files)) {
    if ("problem" in found || found.gone === undefined) continue;
    if (registrationsOnly && !isRegistration(found.place.path)) continue;
    try {
      if (await removeIfUnchanged(found.place, found.holder, "reap")) {
        removal.removed.push(lockedRun(found));
      }
    } catch (error) {
      removal.failed.push({ run: lockedRun(found), error: error as Error });
    }
  }
  await removeAbandonedTemps(dir, {
    files,
    staleMs: LOCK_STALE_MS,
    of: (target) => RECORD_FILE.test(target),
    logger,
  });
  return removal;
}

/** What `removeGoneGraphLocks` did: the dead runs' files it removed, and those it may not. */
export interface GoneLocksRemoval {
  removed: LockedRun[];
  failed: { run: LockedRun; error: Error }[];
}

/** A lock found in a store's `run/` folder: its holder, when it was written, why it is stale. */
interface FoundLock {
  place: LockPlace;
  holder: LockHolder;
  renewedAgoMs: number;
  gone: string | undefined;
}

/** What `readGraphLocks` says of a lock found. */
function lockedRun({ place, holder, renewedAgoMs, gone }: FoundLock): LockedRun {
  const { format: _, ...named } = holder;
  return { ...named, path: place.path, renewedAgoMs, ...(gone !== undefined && { gone }) };
}

/** Each readable lock in `dir` (`FoundLock`), or why one cannot be read. */
async function findGraphLocks(
  dir: string,
  files: Files,
): Promise<(FoundLock | { problem: string })[]> {
  const found: (FoundLock | { problem: string })[] = [];
  for (const name of await files.list(dir)) {
    if (!RECORD_FILE.test(name)) continue;
    const path = join(dir, name);
    let text: string | undefined;
    try {
      text = await files.read(path);
    } catch (error) {
      if (!isPermissionDenied(error)) throw error;
      const owner = await ownerName(files, path);
      found.push({
        problem: `${path}: the lock of ${owner === undefined ? "another user" : owner}'s run, which this user may not read (their baton status shows it)`,
      });
      continue;
    }
    const holder = text === undefined ? "gone" : parseHolder(text);
    if (holder === "gone") continue;
    if (holder === "unreadable") {
      found.push({ problem: unreadableRecord(path) });
      continue;
    }
    const place = { files, storeDir: dirname(dir), path, graph: holder.graph };
    const renewedAgoMs = Date.now() - ((await files.modifiedAt(path)) ?? 0);
    // Staleness judges a lock with this process's pid as a caller that holds none yet would.
    const ours = holder.pid === process.pid && heldHere.get(path) === holder.startedAt;
    const gone = ours ? undefined : await staleness(holder, place);
    found.push({ place, holder, renewedAgoMs, gone });
  }
  return found;
}

/** What the lock's functions share: where it is, and for which graph. */
export interface LockPlace {
  files: Files;
  storeDir: string;
  path: string;
  graph: string;
}

/**
 * Creates the lock file with `text`; false when it exists already. Not synced to the disk
 * (`durable: false`): after a power loss its holder is gone whatever it says, one found empty
 * is taken over once {@link LOCK_STALE_MS} old, and it is written again whole and synced
 * (`writeAtomic`) by the run's first note (`baton run`'s first progress, as its jobs start) or
 * at the latest by its first renewal.
 */
async function create(lock: LockPlace, text: string): Promise<boolean> {
  try {
    return await lock.files.createExclusive(lock.path, text, 0o600, { durable: false });
  } catch (error) {
    throw await lockFileError(lock, lock.path, "create", error);
  }
}

/** The lock's holder; "unreadable" when it is empty or damaged, "gone" when there is none. */
async function readHolder(lock: LockPlace): Promise<LockHolder | "unreadable" | "gone"> {
  let text: string | undefined;
  try {
    text = await lock.files.read(lock.path);
  } catch (error) {
    throw await lockFileError(lock, lock.path, "read", error);
  }
  return text === undefined ? "gone" : parseHolder(text);
}

/**
 * A lock file's text as its holder; "unreadable" when it is empty or damaged. A lock (or a
 * registration) appears whole (`Files.createExclusive`) and is renewed whole (`writeAtomic`),
 * so one that cannot be read was damaged or edited by hand, or is of an older baton killed
 * between making it and writing it, or is caught being made on a file system without hard
 * links, or (a lock, made without a sync) was cut short by a power loss as it was made; it is
 * taken over once nobody has written it for {@link LOCK_STALE_MS}.
 */
function parseHolder(text: string): LockHolder | "unreadable" {
  try {
    const holder = JSON.parse(text) as LockHolder;
    if (holder.format === LOCK_FORMAT && Number.isInteger(holder.pid)) return holder;
  } catch {
    // Not JSON: damaged (see above).
  }
  return "unreadable";
}

/** Why the lock is stale (its holder is gone), or undefined when its holder may still run. */
async function staleness(
  holder: LockHolder | "unreadable",
  lock: LockPlace,
): Promise<string | undefined> {
  const renewedAgo = Date.now() - ((await lock.files.modifiedAt(lock.path)) ?? 0);
  if (holder === "unreadable") {
    return renewedAgo > LOCK_STALE_MS ? "unreadable and not renewed" : undefined;
  }
  if (holder.host !== hostname()) {
    return renewedAgo > LOCK_STALE_MS ? "not renewed" : undefined;
  }
  // This process holds no lock yet, so a lock with its pid is a dead process's (a container
  // whose runs all get the same pid).
  if (holder.pid === process.pid) return "its pid is this process's";
  const procs = nodeProcs();
  if (procs.signal(holder.pid, 0) === "ESRCH") return "its process is gone";
  const info = procs.inspect(holder.pid);
  if (info === undefined) return undefined;
  if (info.state === "zombie" || info.state === "dead") return "its process is gone";
  return info.argv.join("\0") === holder.argv.join("\0") ? undefined : "its pid was reused";
}

/**
 * Removes a stale lock, unless another run replaced it meanwhile: whether it removed it. `by`
 * says for the error whether a run about to start takes it over (`"remove"`) or a dead run's
 * file is being reaped (`"reap"`).
 */
async function removeIfUnchanged(
  lock: LockPlace,
  stale: LockHolder | "unreadable",
  by: "remove" | "reap" = "remove",
): Promise<boolean> {
  const now = await readHolder(lock);
  if (now === "gone") return false;
  if (
    now === "unreadable" ? stale !== "unreadable" : stale === "unreadable" || !isSame(now, stale)
  ) {
    return false;
  }
  try {
    await lock.files.remove(lock.path);
    if (stale !== "unreadable") await removeTornRenewals(lock, stale.pid);
    return true;
  } catch (error) {
    throw await lockFileError(lock, lock.path, by, error);
  }
}

/**
 * Removes what the gone holder `pid` left of a renewal it was killed in the middle of: the
 * temp file of its `Files.writeAtomic` of the lock (`.NAME.PID.RANDOM.tmp`), never renamed.
 * Only its own: the lock it renewed was its until just now, so no one else writes that name.
 */
async function removeTornRenewals(lock: LockPlace, pid: number): Promise<void> {
  const dir = dirname(lock.path);
  const name = basename(lock.path);
  const prefix = `.${name}.${pid}.`;
  for (const entry of await lock.files.list(dir)) {
    if (entry.startsWith(prefix) && atomicTempTarget(entry) === name) {
      await lock.files.remove(join(dir, entry));
    }
  }
}

function isSame(a: LockHolder, b: LockHolder): boolean {
  return a.pid === b.pid && a.host === b.host && a.startedAt === b.startedAt;
}

/**
 * What an error making, reading or removing the lock (`path`: the file, or its `run/` folder)
 * means to the user: permission denied by another user's file or folder (a store shared with
 * them) is `STORE_LOCK_DENIED`, naming that file or folder, its owner and what to do; for a
 * registration (only a dead run's is removed here, by `baton reap` or a run starting) or a
 * dead run's lock being reaped (`"reap"`), any permission denied is said in the words of a dead
 * run's file (`deadRunFileDenied`). Anything else, a store that does not exist and cannot be
 * made among them, is what `storeOpenError` makes of it.
 */
async function lockFileError(
  lock: LockPlace,
  path: string,
  action: "make" | "create" | "read" | "remove" | "reap",
  error: unknown,
): Promise<unknown> {
  if ((error as NodeJS.ErrnoException).code === "EISDIR") {
    return new StoreError(
      "STORE_UNREADABLE",
      `cannot take the lock of ${lock.graph} on the result store ${lock.storeDir}: ${path} is a directory, where the lock file of that graph's runs belongs; remove it (rmdir ${path}) once no run of that graph uses the store, or give this run another --store`,
      lock.storeDir,
      path,
      { cause: error },
    );
  }
  if (!isPermissionDenied(error)) return storeOpenError(lock.storeDir, error);
  // The file itself or, for one not made yet, the nearest folder above it that is there.
  let owned = path;
  let owner = await lock.files.owner(owned).catch(() => undefined);
  while (owner === undefined && dirname(owned) !== owned) {
    owned = dirname(owned);
    owner = await lock.files.owner(owned).catch(() => undefined);
  }
  const name = owner && userName(owner.uid);
  const uid = `uid ${owner?.uid}`;
  const who = name === undefined ? "another user" : name === uid ? name : `${name} (${uid})`;
  const verb =
    action === "read" ? action : action === "make" || action === "create" ? "write to" : "remove";
  if (isRegistration(lock.path) || action === "reap") {
    const theirs = owner?.self === false && owned === lock.path && name !== undefined;
    return deadRunFileDenied(lock, verb, error, theirs ? { who, name } : undefined);
  }
  // A store that is not there yet and cannot be made (no folder of it exists to be shared)
  // is no other user's lock or folder: nothing of the store is in the way.
  if (owner?.self || !isWithin(owned, lock.storeDir)) return storeOpenError(lock.storeDir, error);
  const isLock = owned === lock.path;
  const ask = isLock
    ? `remove ${owned} once no run of theirs uses the store`
    : `let you write to ${owned} (chmod 1777, as /tmp is, for a store shared by several users)`;
  return new StoreError(
    "STORE_LOCK_DENIED",
    `cannot take the lock of ${lock.graph} on the result store ${lock.storeDir}: ${isLock ? "the lock" : "the folder"} ${owned} belongs to ${who}, and this user may not ${verb} it${isLock ? " (a run of theirs may be using this store)" : ""}; give this run a store of its own (--store DIR), or ask ${name ?? "its owner"} to ${ask}`,
    lock.storeDir,
    owned,
    { cause: error },
  );
}

/**
 * The error of a dead run's registration (`registerRun`) or graph lock this user may not read
 * or remove, as `baton reap` removing it meets it, naming the file and its graph: another user's
 * is `STORE_LOCK_DENIED`, naming them (`owner`: who, for the message, and their name) to remove
 * it; this user's own is `STORE_NOT_WRITABLE`, as a lock is, saying why it may not
 * (`writeDeniedReason`: what it may not do in its folder, or an immutable file) and to let it,
 * or to reap as a user who may.
 */
function deadRunFileDenied(
  { storeDir, path, graph }: LockPlace,
  verb: string,
  error: unknown,
  owner: { who: string; name: string } | undefined,
): StoreError {
  const { code, syscall } = error as NodeJS.ErrnoException;
  const dir = dirname(path);
  const reap = `baton reap --state-dir ${dir}`;
  const file = isRegistration(path) ? "registration" : "graph lock";
  const head = `cannot ${verb} the ${file} ${path} of a dead run of ${graph} (baton status lists that run until it is removed)`;
  if (owner === undefined) {
    return new StoreError(
      "STORE_NOT_WRITABLE",
      `${head}: ${writeDeniedReason(code, syscall, path)}; let this user write to ${dir}, or run \`${reap}\` as a user who may`,
      storeDir,
      path,
      { cause: error },
    );
  }
  return new StoreError(
    "STORE_LOCK_DENIED",
    `${head}: it belongs to ${owner.who}, and this user may not ${verb} it; ask ${owner.name} to run \`${reap}\`, or to remove it (rm ${path})`,
    storeDir,
    path,
    { cause: error },
  );
}

/** What is said of the lock or registration `path` that cannot be read, and what to do. */
function unreadableRecord(path: string): string {
  // A lock is made without syncing it to the disk (`create`), a registration synced.
  const how = isRegistration(path)
    ? "damaged or edited by hand"
    : "damaged, edited by hand, or cut short by a power loss as it was made";
  const damaged = `${path} cannot be read (empty, or not what baton writes: baton writes it whole, so it was ${how})`;
  return isRegistration(path)
    ? `${damaged}; remove it`
    : `${damaged}; remove it once no run of its graph uses the store, or the next run of its graph takes it over once nobody has written it for ${LOCK_STALE_MS / 1000} s`;
}

/** The `STORE_LOCKED` error: who holds the lock, and what to do. */
function lockedError(
  { storeDir, path, graph }: LockPlace,
  holder: LockHolder | "unreadable",
): StoreError {
  const wait = "wait for it to finish";
  const elsewhere = "or give this run another --store";
  const message =
    holder === "unreadable"
      ? `cannot take the lock of ${graph} on the result store ${storeDir}: ${unreadableRecord(path)}`
      : holder.host === hostname()
        ? `another baton run of ${graph} is using the result store ${storeDir}: pid ${holder.pid}, started ${new Date(holder.startedAt).toISOString()}; ${wait} or stop it (kill ${holder.pid}), ${elsewhere}`
        : `another baton run of ${graph} is using the result store ${storeDir}: pid ${holder.pid} on ${holder.host}, started ${new Date(holder.startedAt).toISOString()}; ${wait}, ${elsewhere} (a lock that is not renewed for ${LOCK_STALE_MS / 1000} s, as when that run was killed, is taken over: ${path})`;
  return new StoreError("STORE_LOCKED", message, storeDir, path);
}
