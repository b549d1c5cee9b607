import { randomBytes } from "node:crypto";
import { readFile, readFileSync } from "node:fs";
import { link, open, readdir, rename, rm, rmdir, stat, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { makeDirs } from "./makeDirs.ts";
import type { Files } from "./ports.ts";

/**
 * The Files port on `node:fs`. `writeAtomic` writes a temp file beside the target
 * (`.NAME.PID.RANDOM.tmp`), fsyncs it, renames it over the target and fsyncs the directory,
 * so a crash leaves either the old content or the new one; the mode (default 0600) is set
 * explicitly, whatever the umask. `createExclusive` writes the whole file under such a temp
 * name, fsyncs it (unless `durable: false`) and gives it its name with `link(2)`, which fails with EEXIST when the name
 * is taken: nobody ever sees the file empty or partly written (on a file system without hard
 * links it opens the file with `O_EXCL` and then writes it). Parent directories are created
 * as needed. `read` uses the callback `fs.readFile`, which reads a small file in about half
 * the time of the promise one; `readMany` yields to the event loop once and then uses
 * `fs.readFileSync`, about five times faster again for the small files of a result store, at
 * the cost of blocking while it reads.
 *
 * @example
 * ```ts
 * const files = nodeFiles();
 * await files.writeAtomic("/var/lib/baton/run.json", JSON.stringify(state));
 * const text = await files.read("/var/lib/baton/run.json"); // undefined if missing
 * ```
 */
export function nodeFiles(): Files {
  return {
    async writeAtomic(path, data, mode = 0o600) {
      const dir = dirname(path);
      makeDirs(dir);
      const temp = tempBeside(path);
      const handle = await open(temp, "wx", mode);
      try {
        try {
          await handle.chmod(mode);
          await handle.writeFile(data);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temp, path);
      } catch (err) {
        await rm(temp, { force: true });
        throw named(err, path);
      }
      const dirHandle = await open(dir, "r");
      try {
        await dirHandle.sync();
      } finally {
        await dirHandle.close();
      }
    },

    async createExclusive(path, data, mode = 0o600, { durable = true } = {}) {
      makeDirs(dirname(path));
      const temp = tempBeside(path);
      try {
        await writeWhole(temp, data, mode, durable);
        try {
          await link(temp, path);
          return true;
        } catch (err) {
          // Over NFS a link whose reply was lost is sent again and answered EEXIST: made, all
          // the same, when the name is the temp file itself (open(2) notes this).
          if (isErrno(err, "EEXIST")) return await isSameFile(temp, path);
          if (!WITHOUT_HARD_LINKS.has((err as NodeJS.ErrnoException).code ?? "")) throw err;
        }
        return await createInPlace(path, data, mode);
      } catch (err) {
        throw ofTarget(err, temp, path);
      } finally {
        // Left behind, it is a second name of the file made (or of none): what a creator
        // killed right here leaves, and the file's takers and reapers remove it.
        await rm(temp, { force: true }).catch(() => {});
      }
    },

    read(path) {
      return new Promise((resolve, reject) =>
        readFile(path, "utf8", (err, text) => {
          if (!err) resolve(text);
          else if (isErrno(err, "ENOENT")) resolve(undefined);
          else reject(err);
        }),
      );
    },

    async readMany(paths) {
      await new Promise((resolve) => setImmediate(resolve));
      return paths.map((path) => {
        try {
          return readFileSync(path, "utf8");
        } catch (err) {
          if (isErrno(err, "ENOENT")) return undefined;
          throw err;
        }
      });
    },

    async list(dir) {
      try {
        return (await readdir(dir)).sort();
      } catch (err) {
        if (isErrno(err, "ENOENT")) return [];
        throw err;
      }
    },

    async modifiedAt(path) {
      try {
        return (await stat(path)).mtimeMs;
      } catch (err) {
        if (isErrno(err, "ENOENT")) return undefined;
        throw err;
      }
    },

    async remove(path) {
      try {
        await unlink(path);
      } catch (err) {
        if (!isErrno(err, "ENOENT")) throw err;
      }
    },

    async removeDir(dir) {
      try {
        await rmdir(dir);
        return true;
      } catch (err) {
        if (isErrno(err, "ENOENT") || isErrno(err, "ENOTEMPTY") || isErrno(err, "EEXIST")) {
          return false;
        }
        throw err;
      }
    },

    async owner(path) {
      try {
        const { uid } = await stat(path);
        return { uid, self: uid === process.geteuid?.() };
      } catch (err) {
        if (isErrno(err, "ENOENT")) return undefined;
        throw err;
      }
    },

    sameFile: isSameFile,

    async mkdirp(dir) {
      return makeDirs(dir);
    },
  };
}

/** Whether `a` and `b` are one file (symlinks followed); false when either is missing. */
async function isSameFile(a: string, b: string): Promise<boolean> {
  try {
    const [one, other] = await Promise.all([stat(a), stat(b)]);
    return one.dev === other.dev && one.ino === other.ino;
  } catch (err) {
    if (isErrno(err, "ENOENT") || isErrno(err, "ENOTDIR")) return false;
    throw err;
  }
}

/**
 * What `link(2)` answers on a file system without hard links: vfat and exFAT (`EPERM`), some
 * FUSE file systems (`ENOSYS`, `ENOTSUP`).
 */
const WITHOUT_HARD_LINKS = new Set(["EPERM", "ENOSYS", "ENOTSUP", "EOPNOTSUPP"]);

/** A new temp file's path beside `path`: `.NAME.PID.RANDOM.tmp` (see `atomicTempTarget`). */
function tempBeside(path: string): string {
  return join(
    dirname(path),
    `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`,
  );
}

/**
 * Creates `temp` (which must not exist) holding `data` with `mode`, synced to the disk when
 * `durable` (see `CreateOptions`).
 */
async function writeWhole(
  temp: string,
  data: string,
  mode: number,
  durable: boolean,
): Promise<void> {
  const handle = await open(temp, "wx", mode);
  try {
    await handle.writeFile(data);
    if (durable) await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * `createExclusive` on a file system without hard links: `open(O_EXCL)` of `path` itself,
 * then the write, so a reader may find it empty for a moment. A write that fails (a full disk)
 * removes the file again.
 */
async function createInPlace(path: string, data: string, mode: number): Promise<boolean> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "wx", mode);
  } catch (err) {
    if (isErrno(err, "EEXIST")) return false;
    throw err;
  }
  try {
    await handle.writeFile(data);
  } catch (err) {
    await handle.close();
    await rm(path, { force: true });
    throw err;
  }
  await handle.close();
  return true;
}

/**
 * `err` said of `path`, the file `createExclusive` makes, where it names its temp file `temp`
 * (which nobody sees) or nothing (a write through a file handle).
 */
function ofTarget(err: unknown, temp: string, path: string): unknown {
  if (err instanceof Error && (err as NodeJS.ErrnoException).path === temp) {
    (err as NodeJS.ErrnoException).path = path;
    // A failed `link` names both: "link 'TEMP' -> 'PATH'".
    err.message = err.message.replace(` -> '${path}'`, "").replace(temp, path);
  }
  return named(err, path);
}

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}

/**
 * `err` with `path` as its path when it names none: a write through a file handle that fails
 * (`ENOSPC` on a full disk) says only `write`, and the message the user sees must say where.
 */
function named(err: unknown, path: string): unknown {
  if (err instanceof Error && (err as NodeJS.ErrnoException).path === undefined) {
    (err as NodeJS.ErrnoException).path = path;
  }
  return err;
}
