import { posix } from "node:path";
import type { Files } from "../runtime/ports.ts";
import type { ClockScope } from "./simClock.ts";
import type { SimEntropy } from "./simEntropy.ts";

interface FileEntry {
  data: string;
  mode: number;
  /** Virtual time of the write that left this content. */
  modifiedAt: number;
}

/** A `writeAtomic` in progress, and how far it got: each stage is a step in virtual time. */
interface PendingWrite {
  owner: ClockScope;
  path: string;
  temp: string;
  data: string;
  /** written: the temp file has the data, not fsynced; synced: it is durable; renamed: the
   * target shows the data, the directory is not fsynced yet. */
  stage: "written" | "synced" | "renamed";
  /** The target before the rename (undefined: it did not exist). */
  previous: FileEntry | undefined;
}

/** Virtual ms each stage of a write takes (inclusive bounds). */
const STAGE_MS: readonly [number, number] = [0, 3];

/**
 * An in-memory file tree behind the Files port, shared by every simulated process and
 * surviving their crashes. `writeAtomic` goes through the stages of the Node port (temp file,
 * fsync, rename, directory fsync), each taking virtual time on its caller's clock scope, so a
 * process can crash in between. `crash(owner, { torn })` is that crash: the owner's writes
 * stop where they are; with `torn`, a temp file not yet fsynced keeps only a prefix of its
 * data and a rename whose directory was not fsynced may be undone. The target of a write is
 * therefore always either the old content or the new, whole: atomicity is what is tested.
 * `commits` counts the renames that stayed, per path (a result stored twice shows here).
 *
 * @example
 * ```ts
 * const files = new SimFiles(entropy.fork("files"));
 * const scope = clock.scope();
 * const port = files.port(scope);
 * await port.writeAtomic("store/a.json", "{}"); // needs the runner to advance the clock
 * files.crash(scope, { torn: true });
 * ```
 */
export class SimFiles {
  private readonly files = new Map<string, FileEntry>();
  private readonly dirs = new Set<string>(["."]);
  private readonly pending = new Set<PendingWrite>();
  readonly commits = new Map<string, number>();
  private temps = 0;
  /** Virtual time until which no fsync completes (`stall`). */
  private stalledUntil = 0;
  /** Virtual time until which every write fails with ENOSPC (`refuseWrites`). */
  private refusedUntil = 0;

  constructor(
    private readonly entropy: SimEntropy,
    private readonly trace: (line: string) => void = () => {},
    /** Called after every rename that commits a write, with the path's commit count. */
    private readonly onCommit: (path: string, commits: number) => void = () => {},
  ) {}

  /** The Files port of the process whose clock scope is `owner`. */
  port(owner: ClockScope): Files {
    const files = this;
    const hang = <T>() => new Promise<T>(() => {});
    const wait = (ms: number) =>
      new Promise<void>((resolve) => {
        owner.setTimeout(() => resolve(), ms);
      });
    const stage = () => wait(files.entropy.int(STAGE_MS[0], STAGE_MS[1]));
    /** A stage that ends in an fsync: it also waits out a stall of the disk. */
    const fsync = async () => {
      await stage();
      const stalled = files.stalledUntil - owner.now();
      if (stalled > 0) await wait(stalled);
    };
    return {
      async writeAtomic(path, data, mode = 0o600) {
        if (!owner.alive) return hang();
        const target = normal(path);
        const text = typeof data === "string" ? data : new TextDecoder().decode(data);
        files.mkdirs(posix.dirname(target));
        const temp = posix.join(
          posix.dirname(target),
          `.${posix.basename(target)}.${++files.temps}.tmp`,
        );
        const write: PendingWrite = {
          owner,
          path: target,
          temp,
          data: text,
          stage: "written",
          previous: undefined,
        };
        await stage();
        files.refuseIfFull(target, temp, owner);
        files.files.set(temp, { data: text, mode, modifiedAt: owner.now() });
        files.pending.add(write);
        await fsync();
        write.stage = "synced";
        await stage();
        const written = files.files.get(temp);
        if (written === undefined) {
          // Someone removed the temp file meanwhile (a sweep of abandoned temps): the rename fails.
          files.pending.delete(write);
          throw Object.assign(
            new Error(`ENOENT: no such file or directory, rename '${temp}' -> '${target}'`),
            { code: "ENOENT" },
          );
        }
        write.previous = files.files.get(target);
        files.files.delete(temp);
        files.files.set(target, written);
        const commits = (files.commits.get(target) ?? 0) + 1;
        files.commits.set(target, commits);
        write.stage = "renamed";
        files.onCommit(target, commits);
        await fsync();
        files.pending.delete(write);
      },
      async createExclusive(path, data, mode = 0o600) {
        if (!owner.alive) return hang();
        const target = normal(path);
        // Refused first, as the Node port's temp file is written before the name is tried.
        files.refuseIfFull(target, target, owner);
        if (files.files.has(target)) return false;
        files.mkdirs(posix.dirname(target));
        files.files.set(target, { data, mode, modifiedAt: owner.now() });
        return true;
      },
      async read(path) {
        if (!owner.alive) return hang();
        return files.files.get(normal(path))?.data;
      },
      async readMany(paths) {
        if (!owner.alive) return hang();
        return paths.map((path) => files.files.get(normal(path))?.data);
      },
      async list(dir) {
        if (!owner.alive) return hang();
        return files.entries(normal(dir));
      },
      async modifiedAt(path) {
        if (!owner.alive) return hang();
        return files.files.get(normal(path))?.modifiedAt;
      },
      async remove(path) {
        if (!owner.alive) return hang();
        files.files.delete(normal(path));
      },
      async removeDir(dir) {
        if (!owner.alive) return hang();
        const target = normal(dir);
        if (!files.dirs.has(target) || files.entries(target).length > 0) return false;
        files.dirs.delete(target);
        return true;
      },
      async owner(path) {
        if (!owner.alive) return hang();
        const target = normal(path);
        // One user owns every simulated file.
        return files.files.has(target) || files.dirs.has(target)
          ? { uid: 0, self: true }
          : undefined;
      },
      async sameFile(a, b) {
        if (!owner.alive) return hang();
        // The simulated disk has no links: one file has one path.
        const target = normal(a);
        return target === normal(b) && (files.files.has(target) || files.dirs.has(target));
      },
      async mkdirp(dir) {
        if (!owner.alive) return hang();
        return files.mkdirs(normal(dir));
      },
    };
  }

  /** The disk completes no fsync until virtual time `untilMs`: writes wait at their next one. */
  stall(untilMs: number): void {
    this.stalledUntil = Math.max(this.stalledUntil, untilMs);
  }

  /** Virtual time until which every write fails (`refuseWrites`; in the past: none do). */
  get fullUntil(): number {
    return this.refusedUntil;
  }

  /**
   * Every write fails (ENOSPC, before it creates anything) until virtual time `untilMs`: a
   * `writeAtomic` after its first stage, a `createExclusive` at once (it made its file on a
   * full disk: a coordinator restarted then opened its store, which `baton run` cannot).
   */
  refuseWrites(untilMs: number): void {
    this.refusedUntil = Math.max(this.refusedUntil, untilMs);
  }

  /**
   * Throws `ENOSPC` (opening `file`, the write's temp or its target) while `refuseWrites` holds
   * at `owner`'s time, noting it in the trace.
   */
  private refuseIfFull(target: string, file: string, owner: ClockScope): void {
    if (owner.now() >= this.refusedUntil) return;
    this.trace(`files refused ${target}: the disk is full`);
    throw Object.assign(new Error(`ENOSPC: no space left on device, open '${file}'`), {
      code: "ENOSPC",
    });
  }

  /** The process of `owner` crashed: its writes stop where they are (see the class notes). */
  crash(owner: ClockScope, options: { torn: boolean }): void {
    for (const write of [...this.pending]) {
      if (write.owner !== owner) continue;
      this.pending.delete(write);
      const temp = this.files.get(write.temp);
      if (write.stage === "written" && options.torn && temp !== undefined) {
        const cut = this.entropy.int(0, write.data.length);
        this.files.set(write.temp, { ...temp, data: write.data.slice(0, cut) });
        this.trace(`files torn ${write.temp} at ${cut} of ${write.data.length}`);
      } else if (write.stage === "renamed" && options.torn && this.entropy.chance(0.5)) {
        const renamed = this.files.get(write.path);
        if (renamed === undefined) continue;
        if (write.previous === undefined) this.files.delete(write.path);
        else this.files.set(write.path, write.previous);
        this.files.set(write.temp, renamed);
        this.commits.set(write.path, this.commits.get(write.path)! - 1);
        this.trace(`files rename undone ${write.path}`);
      }
    }
  }

  /** The text of a file, outside any process (for checks and tests). */
  peek(path: string): string | undefined {
    return this.files.get(normal(path))?.data;
  }

  /** Overwrites a file outside any process, as a disk fault would. */
  poke(path: string, data: string): void {
    const target = normal(path);
    this.mkdirs(posix.dirname(target));
    this.files.set(target, {
      data,
      mode: 0o600,
      modifiedAt: this.files.get(target)?.modifiedAt ?? 0,
    });
  }

  /** Every file path, sorted. */
  paths(): string[] {
    return [...this.files.keys()].sort();
  }

  /** Makes `dir` and the folders above it that are not there; the topmost one made. */
  private mkdirs(dir: string): string | undefined {
    let top: string | undefined;
    for (let d = dir; !this.dirs.has(d); d = posix.dirname(d)) {
      this.dirs.add(d);
      top = d;
    }
    return top;
  }

  private entries(dir: string): string[] {
    if (!this.dirs.has(dir)) return [];
    const names = new Set<string>();
    const prefix = dir === "." ? "" : dir.endsWith("/") ? dir : `${dir}/`;
    for (const path of [...this.files.keys(), ...this.dirs]) {
      if (path === dir || !path.startsWith(prefix)) continue;
      const name = path.slice(prefix.length).split("/")[0]!;
      if (name !== "" && name !== ".") names.add(name);
    }
    return [...names].sort();
  }
}

const DOT = 46;
const SLASH = 47;

/**
 * `path` normalised, without a trailing slash. Every operation normalises its path, and most
 * paths come already normal from `join`: those are returned as they are, without
 * `posix.normalize` (about a third of the simulated disk's own time in a seed's profile). A
 * path is already normal when it is not empty, has no empty segment (`//`), no segment
 * starting with a dot (so no `.` or `..`) and no trailing slash.
 */
function normal(path: string): string {
  if (
    path.length > 0 &&
    path.charCodeAt(0) !== DOT &&
    path.charCodeAt(path.length - 1) !== SLASH &&
    !path.includes("//") &&
    !path.includes("/.")
  ) {
    return path;
  }
  const p = posix.normalize(path);
  return p.endsWith("/") && p.length > 1 ? p.slice(0, -1) : p;
}
