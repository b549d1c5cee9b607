import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { basename, join, resolve } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { StoreError } from "../../src/errors.ts";
import {
  LOCK_RENEW_MS,
  LOCK_STALE_MS,
  lockGraph,
  readGraphLocks,
  removeGoneGraphLocks,
} from "../../src/runtime/graphLock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { STORE_FORMAT } from "../../src/runtime/storeFormat.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { forgeRunRecord } from "../fixtures/forgeRunRecord.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const children: ChildProcess[] = [];

afterEach(() => {
  vi.useRealTimers();
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

function storeDir(): string {
  return join(tempDir(), "store");
}

/** A live process other than this one, with its argv as the process table shows it. */
async function liveProcess(): Promise<{ pid: number; argv: string[] }> {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  children.push(child);
  await new Promise((resolve) => child.once("spawn", resolve));
  return { pid: child.pid as number, argv: nodeProcs().inspect(child.pid as number)!.argv };
}

/**
 * Writes the lock of the graph module `graph` (default `g.graph.ts`) in `store` as another
 * process would, its mtime `ageMs` ago.
 */
function forgeLock(
  store: string,
  holder: object | string,
  ageMs = 0,
  graph = resolve("g.graph.ts"),
): string {
  const name = createHash("sha256").update(graph).digest("hex").slice(0, 16);
  const path = join(store, "run", `graph-${name}.lock`);
  mkdirSync(join(store, "run"), { recursive: true });
  writeFileSync(
    path,
    typeof holder === "string"
      ? holder
      : JSON.stringify({
          format: "baton.graph-lock/1",
          host: hostname(),
          argv: ["node", "baton", "run", "g.graph.ts"],
          graph: "g.graph.ts",
          startedAt: 1_700_000_000_000,
          ...holder,
        }),
  );
  const at = new Date(Date.now() - ageMs);
  utimesSync(path, at, at);
  return path;
}

describe("lockGraph", () => {
  it("creates DIR/run/graph-<hash>.lock (0600) naming this process, and removes it on release", async () => {
    const store = storeDir();
    const lock = await lockGraph(store, "g.graph.ts");
    expect(lock.path).toMatch(/\/run\/graph-[0-9a-f]{16}\.lock$/);
    expect(lock.tookOver).toBeUndefined();
    expect(JSON.parse(readFileSync(lock.path, "utf8"))).toMatchObject({
      format: "baton.graph-lock/1",
      pid: process.pid,
      host: hostname(),
      graph: join(process.cwd(), "g.graph.ts"),
    });
    // Another graph on the same store has a lock of its own.
    const other = await lockGraph(store, "other.graph.ts");
    expect(other.path).not.toBe(lock.path);
    await lock.release();
    await other.release();
    expect(readdirSync(join(store, "run"))).toEqual([]);
  });

  it("refuses, naming the pid, while another live process on this host holds the lock", async () => {
    const store = storeDir();
    const holder = await liveProcess();
    const path = forgeLock(store, holder);
    let error: unknown;
    try {
      await lockGraph(store, "g.graph.ts");
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({
      code: "STORE_LOCKED",
      dir: store,
      path,
      message: `another baton run of ${join(process.cwd(), "g.graph.ts")} is using the result store ${store}: pid ${holder.pid}, started 2023-11-14T22:13:20.000Z; wait for it to finish or stop it (kill ${holder.pid}), or give this run another --store`,
    });
    expect(existsSync(path)).toBe(true);
  });

  it("a store whose disk is full says so, instead of crashing on Node's bare ENOSPC", async () => {
    const store = storeDir();
    const files: Files = {
      ...nodeFiles(),
      createExclusive: async () => {
        throw Object.assign(new Error("ENOSPC: no space left on device, write"), {
          code: "ENOSPC",
          syscall: "write",
        });
      },
    };
    await expect(lockGraph(store, "g.graph.ts", { files })).rejects.toMatchObject({
      name: "StoreError",
      code: "STORE_NOT_WRITABLE",
      // The free space its disk reports follows the reason: "(3.4 GiB free)".
      message: expect.stringMatching(
        /^the result store .+ cannot be written: cannot write .+: no space left on its disk \(\d+(\.\d)? [KMGT]?i?B free\); free some space, or give the store \(--store\) another directory, on another disk$/,
      ),
    });
  });

  it("a directory where the lock file belongs is a StoreError naming it, not a bare EISDIR", async () => {
    const store = storeDir();
    const first = await lockGraph(store, "g.graph.ts");
    await first.release();
    mkdirSync(first.path);
    await expect(lockGraph(store, "g.graph.ts")).rejects.toMatchObject({
      name: "StoreError",
      code: "STORE_UNREADABLE",
      path: first.path,
      message: `cannot take the lock of ${join(process.cwd(), "g.graph.ts")} on the result store ${store}: ${first.path} is a directory, where the lock file of that graph's runs belongs; remove it (rmdir ${first.path}) once no run of that graph uses the store, or give this run another --store`,
    });
  });

  it("takes the lock of a graph module's real path: a run of it through a symbolic link is refused too", async () => {
    const store = storeDir();
    const graph = join(store, "..", "real.graph.ts");
    writeFileSync(graph, "export default [];\n");
    const link = join(store, "..", "link.graph.ts");
    symlinkSync(graph, link);
    const path = forgeLock(store, await liveProcess(), 0, graph);
    await expect(lockGraph(store, link)).rejects.toMatchObject({ code: "STORE_LOCKED", path });
  });

  it("takes over the lock of a process that is gone or whose pid now runs another program", async () => {
    const store = storeDir();
    const dead = await deadPid();
    forgeLock(store, { pid: dead });
    const lock = await lockGraph(store, "g.graph.ts");
    expect(lock.tookOver).toMatch(
      new RegExp(`^the lock of pid ${dead} on .+ \\(its process is gone\\)$`),
    );
    expect(JSON.parse(readFileSync(lock.path, "utf8")).pid).toBe(process.pid);
    await lock.release();

    const reused = await liveProcess();
    forgeLock(store, { pid: reused.pid, argv: ["node", "baton", "run", "g.graph.ts"] });
    const again = await lockGraph(store, "g.graph.ts");
    expect(again.tookOver).toMatch(/\(its pid was reused\)$/);
    await again.release();
  });

  it("respects another host's lock while it is renewed, and takes it over once it is not", async () => {
    const store = storeDir();
    const foreign = { pid: 4242, host: "login2.example" };
    forgeLock(store, foreign, LOCK_STALE_MS / 2);
    await expect(lockGraph(store, "g.graph.ts")).rejects.toThrow(
      /pid 4242 on login2\.example, started .*; wait for it to finish, or give this run another --store \(a lock that is not renewed for 60 s/,
    );
    forgeLock(store, foreign, LOCK_STALE_MS + 5_000);
    expect((await lockGraph(store, "g.graph.ts")).tookOver).toMatch(
      /^the lock of pid 4242 on login2\.example, .* \(not renewed\)$/,
    );
  });

  it("refuses a damaged lock while it is fresh, saying it cannot be read and what to do, and takes it over once it is old", async () => {
    const store = storeDir();
    const path = forgeLock(store, "");
    // Not "being written": a lock appears whole, so an empty one was damaged.
    await expect(lockGraph(store, "g.graph.ts")).rejects.toThrow(
      expect.objectContaining({
        code: "STORE_LOCKED",
        message: `cannot take the lock of ${resolve("g.graph.ts")} on the result store ${store}: ${path} cannot be read (empty, or not what baton writes: baton writes it whole, so it was damaged, edited by hand, or cut short by a power loss as it was made); remove it once no run of its graph uses the store, or the next run of its graph takes it over once nobody has written it for 60 s`,
      }),
    );
    forgeLock(store, '{"format":"baton.gra', LOCK_STALE_MS + 5_000);
    expect((await lockGraph(store, "g.graph.ts")).tookOver).toBe(
      "an unreadable lock (unreadable and not renewed)",
    );
  });

  it("does not remove a lock another run took over meanwhile", async () => {
    const store = storeDir();
    const lock = await lockGraph(store, "g.graph.ts");
    forgeLock(store, { pid: 4242, host: "login2.example" });
    await lock.release();
    expect(existsSync(lock.path)).toBe(true);
  });

  it("is a StoreError when a file is in the way of the store's run folder", async () => {
    const store = storeDir();
    mkdirSync(store);
    writeFileSync(join(store, "run"), "");
    await expect(lockGraph(store, "g.graph.ts")).rejects.toThrow(
      expect.objectContaining({ code: "STORE_NOT_DIRECTORY", path: join(store, "run") }),
    );
  });

  it("refuses a store a newer baton wrote before it makes anything in it, the lock included", async () => {
    const store = storeDir();
    mkdirSync(store);
    writeFileSync(join(store, "format.json"), `{"format":${STORE_FORMAT + 1}}`);
    await expect(lockGraph(store, "g.graph.ts")).rejects.toThrow(
      expect.objectContaining({
        name: "StoreError",
        code: "STORE_NEWER_FORMAT",
        path: join(store, "format.json"),
      }),
    );
    expect(readdirSync(store)).toEqual(["format.json"]);
    // This baton's format, or none (a store made before the marker), is locked as before.
    for (const marker of [`{"format":${STORE_FORMAT}}`, undefined]) {
      if (marker === undefined) rmSync(join(store, "format.json"));
      else writeFileSync(join(store, "format.json"), marker);
      await (await lockGraph(store, "g.graph.ts")).release();
    }
  });

  it("makes, reads, renews and removes the lock through the Files port it is given", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const store = storeDir();
    const calls: string[] = [];
    const real = nodeFiles();
    const files: Files = {
      ...real,
      createExclusive: (path, data, mode) => {
        calls.push(`create ${path}`);
        return real.createExclusive(path, data, mode);
      },
      // Counted once written: a lock forged while the renewal still writes would be written over.
      writeAtomic: async (path, data, mode) => {
        await real.writeAtomic(path, data, mode);
        calls.push(`write ${path}`);
      },
      remove: (path) => {
        calls.push(`remove ${path}`);
        return real.remove(path);
      },
    };
    const lock = await lockGraph(store, "g.graph.ts", { files });
    const renewedBefore = Date.now();
    await vi.advanceTimersByTimeAsync(LOCK_RENEW_MS);
    await vi.waitFor(() => expect(calls).toHaveLength(2));
    expect(statSync(lock.path).mtimeMs).toBeGreaterThanOrEqual(renewedBefore - 1_000);
    // A lock another run took over meanwhile is never written over, nor removed.
    forgeLock(store, { pid: 4242, host: "login2.example" });
    await vi.advanceTimersByTimeAsync(LOCK_RENEW_MS);
    await lock.release();
    expect(JSON.parse(readFileSync(lock.path, "utf8")).pid).toBe(4242);
    rmSync(lock.path);
    expect(calls).toEqual([`create ${lock.path}`, `write ${lock.path}`]);
    const again = await lockGraph(store, "g.graph.ts", { files });
    await again.release();
    expect(calls.slice(2)).toEqual([`create ${lock.path}`, `remove ${lock.path}`]);
    expect(readdirSync(join(store, "run"))).toEqual([]);
  });

  it("names its store and logs, and writes what the run notes at once or with the next renewal only", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const store = storeDir();
    const lock = await lockGraph(store, "g.graph.ts", { logs: join(store, "logs", "r1") });
    const read = () => JSON.parse(readFileSync(lock.path, "utf8"));
    expect(read()).toMatchObject({ store, logs: join(store, "logs", "r1") });
    const progress = { total: 40, completed: 12, failed: 1, running: 3 };
    // Noted many times a second, progress costs no write of its own: the renewal writes it.
    await lock.note({ progress });
    expect(read().progress).toBeUndefined();
    await lock.note({ address: "ws://127.0.0.1:7000" }, { now: true });
    expect(read()).toMatchObject({ address: "ws://127.0.0.1:7000", progress });
    await lock.note({ progress: { ...progress, completed: 20 } });
    await vi.advanceTimersByTimeAsync(LOCK_RENEW_MS);
    await vi.waitFor(() => expect(read().progress.completed).toBe(20));
    const { runs } = await readGraphLocks(join(store, "run"));
    expect(runs).toEqual([
      expect.objectContaining({
        pid: process.pid,
        store,
        address: "ws://127.0.0.1:7000",
        progress: { ...progress, completed: 20 },
        path: lock.path,
      }),
    ]);
    expect(runs[0]!.gone).toBeUndefined();
    await lock.release();
  });

  it("lists the runs of a store by their locks, says which are gone, and removes only those", async () => {
    const store = storeDir();
    const live = await liveProcess();
    const dead = await deadPid();
    const liveLock = forgeLock(store, { pid: live.pid, argv: live.argv }, 0, resolve("a.graph.ts"));
    const deadLock = forgeLock(store, { pid: dead }, 0, resolve("b.graph.ts"));
    // A renewal the dead run was killed in the middle of, and a temp file of another writer.
    const tornRenewal = join(store, "run", `.${basename(deadLock)}.${dead}.0123456789ab.tmp`);
    const othersWrite = join(store, "run", `.${basename(deadLock)}.${live.pid}.0123456789ab.tmp`);
    writeFileSync(tornRenewal, '{"format":"baton.lock');
    writeFileSync(othersWrite, '{"format":"baton.lock');
    const foreignLock = forgeLock(
      store,
      { pid: 4242, host: "login2.example" },
      LOCK_STALE_MS + 5_000,
      resolve("c.graph.ts"),
    );
    // Not a lock, and a damaged one (a lock appears whole): neither is a run; the damaged one
    // is a problem saying so.
    writeFileSync(join(store, "run", "notes.txt"), "x");
    const damaged = forgeLock(store, "", 0, resolve("d.graph.ts"));
    const { runs, problems } = await readGraphLocks(join(store, "run"));
    expect(problems).toEqual([
      `${damaged} cannot be read (empty, or not what baton writes: baton writes it whole, so it was damaged, edited by hand, or cut short by a power loss as it was made); remove it once no run of its graph uses the store, or the next run of its graph takes it over once nobody has written it for 60 s`,
    ]);
    const byPath = new Map(runs.map((run) => [run.path, run]));
    expect(byPath.size).toBe(3);
    expect(byPath.get(liveLock)).toMatchObject({ pid: live.pid });
    expect(byPath.get(liveLock)!.gone).toBeUndefined();
    expect(byPath.get(deadLock)).toMatchObject({ pid: dead, gone: "its process is gone" });
    expect(byPath.get(foreignLock)).toMatchObject({ host: "login2.example", gone: "not renewed" });
    const { removed, failed } = await removeGoneGraphLocks(join(store, "run"));
    expect(removed.map((run) => run.path).sort()).toEqual([deadLock, foreignLock].sort());
    expect(failed).toEqual([]);
    expect(existsSync(liveLock)).toBe(true);
    expect(existsSync(deadLock) || existsSync(foreignLock)).toBe(false);
    expect(existsSync(tornRenewal)).toBe(false);
    expect(existsSync(othersWrite)).toBe(true);
  });

  it("removes the temp files of locks and registrations whose creators were killed mid-create, once untouched for LOCK_STALE_MS, a run starting too", async () => {
    const store = storeDir();
    const run = join(store, "run");
    const dead = await deadPid();
    const live = await liveProcess();
    // A lock's creator killed before its link (no lock holds its pid), a registration's right
    // after it (a second name of a registration gone since), one being written now, one of a
    // creator still running, and a temp of a file that is no lock or registration.
    const lock = basename(forgeLock(store, { pid: live.pid, argv: live.argv }));
    const beforeLink = `.${lock}.${dead}.0123456789ab.tmp`;
    const afterLink = `.graph-0123456789abcdef-${dead}-89abcdef.run.${dead}.0123456789ab.tmp`;
    const beingWritten = `.${lock}.${dead}.fedcba987654.tmp`;
    const creatorRuns = `.${lock}.${live.pid}.0123456789ab.tmp`;
    const notALock = `.notes.txt.${dead}.0123456789ab.tmp`;
    for (const [name, ageMs] of [
      [beforeLink, LOCK_STALE_MS + 5_000],
      [afterLink, LOCK_STALE_MS + 5_000],
      [beingWritten, 1_000],
      [creatorRuns, LOCK_STALE_MS + 5_000],
      [notALock, LOCK_STALE_MS + 5_000],
    ] as const) {
      writeFileSync(join(run, name), '{"format":"baton.graph-lock/1"');
      const at = new Date(Date.now() - ageMs);
      utimesSync(join(run, name), at, at);
    }
    const info = vi.fn();
    const { removed } = await removeGoneGraphLocks(run, nodeFiles(), {
      registrationsOnly: true,
      logger: { info },
    });
    expect(removed).toEqual([]);
    expect(readdirSync(run).sort()).toEqual([beingWritten, creatorRuns, notALock, lock].sort());
    expect(info).toHaveBeenCalledWith(
      { dir: run, files: [afterLink, beforeLink].sort() },
      expect.stringContaining("removed temp files that writers killed while writing left behind"),
    );
  });

  it("leaves, and does not report as removed, a dead run's lock that a new run took meanwhile", async () => {
    const store = storeDir();
    const dead = await deadPid();
    const path = forgeLock(store, { pid: dead });
    const live = await liveProcess();
    const real = nodeFiles();
    let reads = 0;
    // The new run of the same graph takes the lock over between the reap's look and its removal.
    const files: Files = {
      ...real,
      read: async (file) => {
        const text = await real.read(file);
        if (file === path && ++reads === 1) {
          forgeLock(store, { pid: live.pid, argv: live.argv, startedAt: 1_700_000_060_000 });
        }
        return text;
      },
    };
    expect(await removeGoneGraphLocks(join(store, "run"), files)).toEqual({
      removed: [],
      failed: [],
    });
    expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({ pid: live.pid });
  });

  it("names another user's lock it may not read, that user, and what to do (STORE_LOCK_DENIED)", async () => {
    const store = storeDir();
    const path = forgeLock(store, { pid: 4242 });
    const real = nodeFiles();
    // As a user other than root finds a lock root's run left in a shared store (mode 0600).
    const files: Files = {
      ...real,
      read: async (file) => {
        if (file === path) throw denied("open", file);
        return real.read(file);
      },
      owner: async (file) => (file === path ? { uid: 0, self: false } : real.owner(file)),
    };
    const error = await lockGraph(store, "g.graph.ts", { files }).catch((thrown) => thrown);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({
      code: "STORE_LOCK_DENIED",
      dir: store,
      path,
      message: `cannot take the lock of ${resolve("g.graph.ts")} on the result store ${store}: the lock ${path} belongs to root (uid 0), and this user may not read it (a run of theirs may be using this store); give this run a store of its own (--store DIR), or ask root to remove ${path} once no run of theirs uses the store`,
    });
    expect(existsSync(path)).toBe(true);
  });

  it("a dead run's registration it may not remove is named as a registration, whose it is and who can remove it: not as a lock it cannot take; the other dead runs' files go all the same", async () => {
    const run = join(storeDir(), "run");
    mkdirSync(run, { recursive: true });
    const path = forgeRunRecord(run, { pid: await deadPid() });
    const other = forgeRunRecord(run, { pid: await deadPid(), graph: "/home/me/h.graph.ts" });
    const real = nodeFiles();
    // As baton reap finds a dead run's registration of root's in a folder shared with root.
    const files: Files = {
      ...real,
      remove: async (file) => {
        if (file === path) throw denied("unlink", file);
        return real.remove(file);
      },
      owner: async (file) => (file === path ? { uid: 0, self: false } : real.owner(file)),
    };
    const head = `cannot remove the registration ${path} of a dead run of /home/me/g.graph.ts (baton status lists that run until it is removed)`;
    const removal = await removeGoneGraphLocks(run, files);
    expect(removal.removed.map(({ path }) => path)).toEqual([other]);
    expect(existsSync(other)).toBe(false);
    expect(removal.failed).toEqual([
      {
        run: expect.objectContaining({ path, graph: "/home/me/g.graph.ts" }),
        error: expect.objectContaining({
          code: "STORE_LOCK_DENIED",
          path,
          message: `${head}: it belongs to root (uid 0), and this user may not remove it; ask root to run \`baton reap --state-dir ${run}\`, or to remove it (rm ${path})`,
        }),
      },
    ]);
    // This user's own, in a folder it may not remove anything from.
    const mode = (statSync(run).mode & 0o777).toString(8);
    const own = await removeGoneGraphLocks(run, { ...files, owner: real.owner });
    expect(own.failed.map(({ error }) => error)).toEqual([
      expect.objectContaining({
        code: "STORE_NOT_WRITABLE",
        path,
        message: `${head}: permission denied: this user (root) may not remove or rename anything in ${run} (yours, mode ${mode}); let this user write to ${run}, or run \`baton reap --state-dir ${run}\` as a user who may`,
      }),
    ]);
    expect(existsSync(path)).toBe(true);
  });

  it("a dead run's graph lock it may not remove is named as a dead run's lock to reap, not as a lock a run about to start cannot take", async () => {
    const store = storeDir();
    const run = join(store, "run");
    const path = forgeLock(store, { pid: await deadPid() });
    const real = nodeFiles();
    const files: Files = {
      ...real,
      remove: async (file) => {
        throw denied("unlink", file);
      },
      owner: async (file) => (file === path ? { uid: 0, self: false } : real.owner(file)),
    };
    const { removed, failed } = await removeGoneGraphLocks(run, files);
    expect(removed).toEqual([]);
    expect(failed.map(({ error }) => error)).toEqual([
      expect.objectContaining({
        code: "STORE_LOCK_DENIED",
        path,
        message: `cannot remove the graph lock ${path} of a dead run of g.graph.ts (baton status lists that run until it is removed): it belongs to root (uid 0), and this user may not remove it; ask root to run \`baton reap --state-dir ${run}\`, or to remove it (rm ${path})`,
      }),
    ]);
    expect(existsSync(path)).toBe(true);
  });

  it("names the folder of another user that it may not make the lock in", async () => {
    const store = storeDir();
    const run = join(store, "run");
    mkdirSync(run, { recursive: true });
    const real = nodeFiles();
    const files: Files = {
      ...real,
      createExclusive: async (file) => {
        throw denied("open", file);
      },
      owner: async (file) => (file === run ? { uid: 0, self: false } : real.owner(file)),
    };
    await expect(lockGraph(store, "g.graph.ts", { files })).rejects.toMatchObject({
      code: "STORE_LOCK_DENIED",
      path: run,
      message: expect.stringContaining(
        `: the folder ${run} belongs to root (uid 0), and this user may not write to it; give this run a store of its own (--store DIR), or ask root to let you write to ${run} (chmod 1777, as /tmp is, for a store shared by several users)`,
      ),
    });
    // A uid the user database does not know is named by its number, once.
    const unknown: Files = {
      ...files,
      owner: async (file) => (file === run ? { uid: 4_242_424, self: false } : real.owner(file)),
    };
    await expect(lockGraph(store, "g.graph.ts", { files: unknown })).rejects.toMatchObject({
      message: expect.stringContaining(
        `: the folder ${run} belongs to uid 4242424, and this user may not write to it; give this run a store of its own (--store DIR), or ask uid 4242424 to let you write`,
      ),
    });
    // Permission denied on this user's own folder is no other user's doing.
    const own: Files = { ...files, owner: real.owner };
    await expect(lockGraph(store, "g.graph.ts", { files: own })).rejects.toMatchObject({
      code: "STORE_NOT_WRITABLE",
    });
  });

  it("a store that is not there and cannot be made in another user's folder cannot be made: no lock of theirs is in the way", async () => {
    const store = storeDir();
    const above = join(store, "..");
    const real = nodeFiles();
    const files: Files = {
      ...real,
      mkdirp: async () => {
        throw denied("mkdir", store);
      },
      owner: async (file) => (file === above ? { uid: 0, self: false } : real.owner(file)),
    };
    await expect(lockGraph(store, "g.graph.ts", { files })).rejects.toMatchObject({
      code: "STORE_NOT_WRITABLE",
      path: store,
      message: expect.stringMatching(
        new RegExp(
          `^the result store ${store} cannot be written: cannot mkdir ${store}: permission denied: `,
        ),
      ),
    });
    expect(existsSync(store)).toBe(false);
  });
});

/** The error node:fs throws when permission is denied. */
function denied(syscall: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`EACCES: permission denied, ${syscall} '${path}'`), {
    code: "EACCES",
    syscall,
    path,
  });
}
