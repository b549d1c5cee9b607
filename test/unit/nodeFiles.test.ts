import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { chown, mkdtemp, open, readdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";

const NODE_FILES = new URL("../../src/runtime/nodeFiles.ts", import.meta.url).pathname;

describe("nodeFiles", () => {
  const files = nodeFiles();
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "baton-files-"));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("writes a file with mode 0600 by default, creating parent directories", async () => {
    const path = join(dir, "a", "b", "state.json");
    await files.writeAtomic(path, '{"ok":true}');
    expect(await files.read(path)).toBe('{"ok":true}');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it("creates a file exclusively: of many callers at once exactly one, and never over one", async () => {
    const path = join(dir, "d", "claim.json");
    const created = await Promise.all(
      Array.from({ length: 8 }, (_, i) => files.createExclusive(path, `caller ${i}`)),
    );
    expect(created.filter(Boolean)).toHaveLength(1);
    expect(await files.read(path)).toBe(`caller ${created.indexOf(true)}`);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await files.createExclusive(path, "late")).toBe(false);
    // The temp files of the callers that lost are gone, as is the winner's.
    expect(await readdir(join(dir, "d"))).toEqual(["claim.json"]);
    await files.remove(path);
    expect(await files.createExclusive(path, "again")).toBe(true);
  });

  it("syncs a file it creates exclusively before its link, unless not durable", async () => {
    const probe = await open(join(dir, "probe"), "w");
    const sync = vi.spyOn(Object.getPrototypeOf(probe), "sync");
    await probe.close();
    try {
      const lock = join(dir, "lock");
      expect(await files.createExclusive(lock, "held", 0o600, { durable: false })).toBe(true);
      expect(sync).not.toHaveBeenCalled();
      expect(readFileSync(lock, "utf8")).toBe("held");
      expect(await files.createExclusive(join(dir, "secret"), "kept")).toBe(true);
      expect(sync).toHaveBeenCalledTimes(1);
    } finally {
      sync.mockRestore();
    }
  });

  it("shows a file it creates exclusively only whole, to a reader that looks while it is written", async () => {
    // 32 MiB: written in 64 writes of 512 KiB, each a turn of the event loop for the reader.
    const path = join(dir, "claim.json");
    const data = "x".repeat(32 * 1024 * 1024);
    let creating = true;
    let seen: string | undefined;
    const looking = (async () => {
      while (creating && seen === undefined) {
        if (existsSync(path)) seen = readFileSync(path, "utf8");
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    expect(await files.createExclusive(path, data)).toBe(true);
    creating = false;
    await looking;
    expect(seen?.length ?? data.length).toBe(data.length);
    expect(await readdir(dir)).toEqual(["claim.json"]);
  });

  it("leaves no file behind when it cannot write what it created exclusively (a full disk), and names it", () => {
    // A child whose files may hold no byte (ulimit -f 0, SIGXFSZ ignored) fails each write
    // with EFBIG once the file is open, as a full disk does with ENOSPC.
    const path = join(dir, "run", "graph.lock");
    const script = `const { nodeFiles } = await import(${JSON.stringify(NODE_FILES)});
await nodeFiles().createExclusive(${JSON.stringify(path)}, "held").then(
  () => console.log("created"),
  (error) => console.log(error.code, error.path),
);`;
    const result = spawnSync(
      "bash",
      [
        "-c",
        'trap "" XFSZ; ulimit -f 0; exec "$0" --import tsx --input-type=module -e "$1"',
        process.execPath,
        script,
      ],
      { encoding: "utf8", timeout: 30_000, killSignal: "SIGKILL" },
    );
    // The error names the file: a write through a handle names none of itself.
    expect(result.stdout.trim(), result.stderr).toBe(`EFBIG ${path}`);
    expect(readdirSync(join(dir, "run"))).toEqual([]);
  });

  it("applies an explicit mode whatever the umask", async () => {
    const path = join(dir, "script.sh");
    await files.writeAtomic(path, "#!/bin/sh\n", 0o755);
    expect((await stat(path)).mode & 0o777).toBe(0o755);
  });

  it("writes bytes", async () => {
    const path = join(dir, "bytes");
    await files.writeAtomic(path, new TextEncoder().encode("héllo"));
    expect(await files.read(path)).toBe("héllo");
  });

  it("replaces an existing file and leaves no temp file behind", async () => {
    const path = join(dir, "state.json");
    await writeFile(path, "old content that is longer than the new one", { mode: 0o644 });
    await files.writeAtomic(path, "new");
    expect(await files.read(path)).toBe("new");
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  it("never shows a partial file to concurrent readers", async () => {
    const path = join(dir, "state.json");
    const versions = Array.from({ length: 20 }, (_, i) => String(i).repeat(100_000));
    await files.writeAtomic(path, versions[0]!);
    const seen = new Set<string | undefined>();
    let writing = true;
    const reading = (async () => {
      while (writing) seen.add(await files.read(path));
    })();
    await Promise.all(versions.map((version) => files.writeAtomic(path, version)));
    writing = false;
    await reading;
    for (const text of seen) expect(versions).toContain(text);
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  it("reads a missing file as undefined", async () => {
    expect(await files.read(join(dir, "missing"))).toBeUndefined();
  });

  it("reads many files in order, a missing one as undefined, and throws for one it cannot read", async () => {
    await files.writeAtomic(join(dir, "a"), "first");
    await files.writeAtomic(join(dir, "b"), "second");
    expect(await files.readMany([join(dir, "b"), join(dir, "missing"), join(dir, "a")])).toEqual([
      "second",
      undefined,
      "first",
    ]);
    expect(await files.readMany([])).toEqual([]);
    await files.mkdirp(join(dir, "sub"));
    await expect(files.readMany([join(dir, "a"), join(dir, "sub")])).rejects.toMatchObject({
      code: "EISDIR",
    });
  });

  it("lists entry names, and a missing directory as empty", async () => {
    await files.writeAtomic(join(dir, "b"), "");
    await files.writeAtomic(join(dir, "a"), "");
    await files.mkdirp(join(dir, "c"));
    expect(await files.list(dir)).toEqual(["a", "b", "c"]);
    expect(await files.list(join(dir, "missing"))).toEqual([]);
  });

  it("tells when a file was last written, and undefined for a missing one", async () => {
    const path = join(dir, "dated");
    const before = Date.now();
    await files.writeAtomic(path, "x");
    const at = await files.modifiedAt(path);
    expect(at).toBeGreaterThanOrEqual(before - 1000);
    expect(at).toBeLessThanOrEqual(Date.now() + 1000);
    expect(await files.modifiedAt(join(dir, "missing"))).toBeUndefined();
  });

  it("removes a file, and ignores one that is already gone", async () => {
    const path = join(dir, "doomed");
    await files.writeAtomic(path, "x");
    await files.remove(path);
    expect(await files.read(path)).toBeUndefined();
    await expect(files.remove(path)).resolves.toBeUndefined();
  });

  it("removes a directory only once it is empty, and says whether it did", async () => {
    const sub = join(dir, "sub");
    await files.writeAtomic(join(sub, "a.log"), "x");
    expect(await files.removeDir(sub)).toBe(false);
    expect(await readdir(sub)).toEqual(["a.log"]);
    await files.remove(join(sub, "a.log"));
    expect(await files.removeDir(sub)).toBe(true);
    expect(await readdir(dir)).toEqual([]);
    expect(await files.removeDir(sub)).toBe(false);
  });

  it("tells who owns a file or directory, and undefined for a missing one", async () => {
    const path = join(dir, "mine");
    await files.writeAtomic(path, "x");
    const uid = process.geteuid!();
    expect(await files.owner(path)).toEqual({ uid, self: true });
    expect(await files.owner(dir)).toEqual({ uid, self: true });
    expect(await files.owner(join(dir, "missing"))).toBeUndefined();
    // Another user's: root's /, seen by anyone else; nobody's file, seen by root.
    if (uid !== 0) expect(await files.owner("/")).toEqual({ uid: 0, self: false });
    else {
      await chown(path, 65_534, 65_534);
      expect(await files.owner(path)).toEqual({ uid: 65_534, self: false });
    }
  });

  it("tells one file or directory by two paths (a symlink on the way) from two", async () => {
    const real = join(dir, "real");
    await files.mkdirp(real);
    await symlink(real, join(dir, "link"));
    expect(await files.sameFile(join(dir, "link"), real)).toBe(true);
    expect(await files.sameFile(join(dir, "link", "."), `${real}/`)).toBe(true);
    expect(await files.sameFile(join(dir, "link"), dir)).toBe(false);
    expect(await files.sameFile(join(dir, "missing"), join(dir, "missing"))).toBe(false);
  });

  it("creates nested directories and accepts existing ones", async () => {
    const nested = join(dir, "x", "y", "z");
    await files.mkdirp(nested);
    await files.mkdirp(nested);
    expect((await stat(nested)).isDirectory()).toBe(true);
  });

  it("removes its temp file when the rename fails", async () => {
    await files.mkdirp(join(dir, "taken", "inner"));
    await expect(files.writeAtomic(join(dir, "taken"), "x")).rejects.toThrow();
    expect(await readdir(dir)).toEqual(["taken"]);
  });
});
