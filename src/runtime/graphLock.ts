import { createHash } from "node:crypto";
import {
  closeSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeSync,
} from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { StoreError } from "../errors.ts";
import { makeDirs } from "./makeDirs.ts";
import { nodeProcs } from "./nodeProcs.ts";
import { storeOpenError } from "./storeErrors.ts";

/** The format of a lock file. */
const LOCK_FORMAT = "baton.graph-lock/1";
/** The holder renews its lock's modification time this often. */
export const LOCK_RENEW_MS = 10_000;
/**
 * A lock of another host (whose pid cannot be checked from here) that nobody renewed for
 * this long is stale: its run was killed, or its host went down.
 */
export const LOCK_STALE_MS = 60_000;

/** What a lock file holds: who holds it. */
interface LockHolder {
  format: typeof LOCK_FORMAT;
  pid: number;
  host: string;
  /** The holder's argv, to tell it from another process that was given its pid later. */
  argv: string[];
  graph: string;
  startedAt: number;
}

/** A lock taken by {@link lockGraph}. */
export interface GraphLock {
  /** The lock file: `DIR/run/graph-<16 hex>.lock`. */
  readonly path: string;
  /** The stale lock this one replaced, said for a log line: whose it was and why it was stale. */
  readonly tookOver?: string;
  /** Stops renewing the lock and removes its file, if it is still this process's. */
  release(): void;
}

/**
 * Takes the lock of graph module `graph` in the result store `storeDir`, so that a second
 * `baton run` of the same graph on the same store fails at once instead of computing every
 * job the first one computes: the file `DIR/run/graph-<hash of the graph's path>.lock`,
 * created exclusively (mode 0600), holding this process's pid, host, argv and start time, and
 * renewed (its modification time) every {@link LOCK_RENEW_MS}.
 *
 * A lock that is already there is taken over when its holder is gone: on this host, when its
 * pid no longer exists or now belongs to another program (another argv); from another host,
 * whose pids mean nothing here, when nobody renewed it for {@link LOCK_STALE_MS}. Otherwise
 * this is a {@link StoreError} `STORE_LOCKED` naming the holder's pid and host. A file in the
 * way of `DIR/run/`, or one that cannot be written, is a `StoreError` as well.
 *
 * The store itself does not need the lock: writes are atomic and each result is the same
 * whoever computes it. Runs of different graphs share a store freely.
 *
 * @example
 * ```ts
 * const lock = lockGraph(".baton", "pipeline.graph.ts");
 * try { await engine.run(graph); } finally { lock.release(); }
 * ```
 */
export function lockGraph(storeDir: string, graph: string): GraphLock {
  const dir = join(storeDir, "run");
  const graphPath = resolve(graph);
  const name = createHash("sha256").update(graphPath).digest("hex").slice(0, 16);
  const path = join(dir, `graph-${name}.lock`);
  const holder: LockHolder = {
    format: LOCK_FORMAT,
    pid: process.pid,
    host: hostname(),
    // As the process table shows it (`process.argv` has the paths resolved).
    argv: nodeProcs().inspect(process.pid)?.argv ?? process.argv,
    graph: graphPath,
    startedAt: Date.now(),
  };
  try {
    makeDirs(dir);
  } catch (error) {
    throw storeOpenError(storeDir, error);
  }
  let tookOver: string | undefined;
  // Another run may take the lock between a stale one's removal and this one's creation.
  for (let attempt = 1; !create(storeDir, path, holder); attempt++) {
    const other = readHolder(path);
    if (other === "gone") continue;
    const stale = staleness(other, path);
    if (stale === undefined || attempt === 3) throw lockedError(storeDir, path, graphPath, other);
    removeIfUnchanged(path, other);
    tookOver =
      other === "being written"
        ? `an unreadable lock (${stale})`
        : `the lock of pid ${other.pid} on ${other.host}, started ${new Date(other.startedAt).toISOString()} (${stale})`;
  }
  const renew = setInterval(() => {
    try {
      const now = new Date();
      utimesSync(path, now, now);
    } catch {
      // Removed by hand, or a disk that failed: the run goes on without its lock.
    }
  }, LOCK_RENEW_MS);
  renew.unref();
  return {
    path,
    ...(tookOver !== undefined && { tookOver }),
    release() {
      clearInterval(renew);
      const now = readHolder(path);
      if (now !== "gone" && now !== "being written" && isSame(now, holder)) removeQuietly(path);
    },
  };
}

/** Creates the lock file with `holder`; false when it exists already. */
function create(storeDir: string, path: string, holder: LockHolder): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw storeOpenError(storeDir, error);
  }
  try {
    writeSync(fd, JSON.stringify(holder));
  } finally {
    closeSync(fd);
  }
  return true;
}

/** The lock's holder; "being written" while it is empty or torn, "gone" when there is none. */
function readHolder(path: string): LockHolder | "being written" | "gone" {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "gone";
    throw error;
  }
  try {
    const holder = JSON.parse(text) as LockHolder;
    if (holder.format === LOCK_FORMAT && Number.isInteger(holder.pid)) return holder;
  } catch {
    // Torn: read between its creation and its write, or left by a run killed right there.
  }
  return "being written";
}

/** Why the lock is stale (its holder is gone), or undefined when its holder may still run. */
function staleness(holder: LockHolder | "being written", path: string): string | undefined {
  const renewedAgo = Date.now() - (modifiedAt(path) ?? 0);
  if (holder === "being written") {
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

/** Removes a stale lock, unless another run replaced it meanwhile. */
function removeIfUnchanged(path: string, stale: LockHolder | "being written"): void {
  const now = readHolder(path);
  if (now === "gone") return;
  if (
    now === "being written"
      ? stale === "being written"
      : stale !== "being written" && isSame(now, stale)
  ) {
    removeQuietly(path);
  }
}

function isSame(a: LockHolder, b: LockHolder): boolean {
  return a.pid === b.pid && a.host === b.host && a.startedAt === b.startedAt;
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

function modifiedAt(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** The `STORE_LOCKED` error: who holds the lock, and what to do. */
function lockedError(
  storeDir: string,
  path: string,
  graph: string,
  holder: LockHolder | "being written",
): StoreError {
  const wait = "wait for it to finish";
  const elsewhere = "or give this run another --store";
  const message =
    holder === "being written"
      ? `another baton run of ${graph} is starting on the result store ${storeDir} right now (its lock ${path} is being written): ${wait}, ${elsewhere}`
      : holder.host === hostname()
        ? `another baton run of ${graph} is using the result store ${storeDir}: pid ${holder.pid}, started ${new Date(holder.startedAt).toISOString()}; ${wait} or stop it (kill ${holder.pid}), ${elsewhere}`
        : `another baton run of ${graph} is using the result store ${storeDir}: pid ${holder.pid} on ${holder.host}, started ${new Date(holder.startedAt).toISOString()}; ${wait}, ${elsewhere} (a lock that is not renewed for ${LOCK_STALE_MS / 1000} s, as when that run was killed, is taken over: ${path})`;
  return new StoreError("STORE_LOCKED", message, storeDir, path);
}
