import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import fc from "fast-check";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StoreError } from "../../src/errors.ts";
import { canonicalJson } from "../../src/graph/canonicalJson.ts";
import type { Json } from "../../src/graph/job.ts";
import { jobId } from "../../src/graph/jobId.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { ABANDONED_TEMP_MS, ResultStore } from "../../src/runtime/resultStore.ts";
import { STORE_FORMAT } from "../../src/runtime/storeFormat.ts";
import { deadPid } from "../fixtures/deadPid.ts";

const files = nodeFiles();
const idOf = (n: number) => jobId("test", n, [], "1");
const pathOf = (dir: string, id: string) => join(dir, "results", id.slice(0, 2), `${id}.json`);

describe("ResultStore", () => {
  let dir: string;
  let warnings: Array<{ msg: string; file: string; problem: string }>;
  let logger: pino.Logger;

  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), "baton-results-")), ".baton");
    warnings = [];
    logger = pino({ level: "warn" }, { write: (line: string) => warnings.push(JSON.parse(line)) });
  });

  afterEach(async () => {
    await rm(join(dir, ".."), { recursive: true, force: true });
  });

  const open = () => ResultStore.open(dir, files, logger, { now: () => 1_700_000_000_000 });

  it("round-trips nested JSON in DIR/results/<2 hex>/<id>.json, mode 0600", async () => {
    const store = await open();
    const id = idOf(1);
    const value: Json = {
      rows: [1, -2.5, "x", null, true, { deep: [[], {}] }],
      n: 0,
      s: "é\u2028",
    };
    await store.put(id, "parse", value);
    expect(await store.get(id)).toEqual(value);

    const path = pathOf(dir, id);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const entry = JSON.parse(await readFile(path, "utf8"));
    expect(entry).toEqual({
      format: 1,
      id,
      kind: "parse",
      value,
      checksum: expect.stringMatching(/^[0-9a-f]{64}$/),
      storedAt: 1_700_000_000_000,
    });
    expect(await readdir(join(dir, "results", id.slice(0, 2)))).toEqual([`${id}.json`]);
  });

  it("creates logs/ and quarantine/ beside results/, and its format marker, readable by all", async () => {
    const store = await open();
    expect(store.logsDir).toBe(join(dir, "logs"));
    expect((await readdir(dir)).sort()).toEqual(["format.json", "logs", "quarantine", "results"]);
    expect(await readFile(join(dir, "format.json"), "utf8")).toBe('{"format":1}\n');
    expect((await stat(join(dir, "format.json"))).mode & 0o777).toBe(0o644);
  });

  it("returns undefined for a job with no entry", async () => {
    const store = await open();
    expect(await store.get(idOf(2))).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it("lets a rerun see the stored values through loadAll, skipping missing ones", async () => {
    const first = await open();
    await first.put(idOf(1), "a", { x: 1 });
    await first.put(idOf(2), "b", [null]);

    const rerun = await open();
    const reads: string[] = [];
    const { stored, corrupt } = await rerun.loadAll(
      [idOf(1), idOf(2), idOf(3), idOf(1)],
      (done, total) => reads.push(`${done}/${total}`),
    );
    // Only the entries that exist are read, and each read is reported.
    expect(reads).toEqual(["1/2", "2/2"]);
    expect(corrupt).toBe(0);
    expect(stored).toEqual(
      new Map<string, Json>([
        [idOf(1), { x: 1 }],
        [idOf(2), [null]],
      ]),
    );
  });

  it("counts writes; putting the same result twice leaves one entry with the same value", async () => {
    const store = await open();
    const id = idOf(7);
    await store.put(id, "k", { same: true });
    await store.put(id, "k", { same: true });
    expect(store.writes).toBe(2);
    expect(await store.get(id)).toEqual({ same: true });
    expect(await readdir(join(dir, "results", id.slice(0, 2)))).toEqual([`${id}.json`]);
  });

  it("loadAll removes the temp files of writes abandoned over 15 minutes ago, and keeps fresh ones", async () => {
    const infos: Array<{ msg: string; removed: string[] }> = [];
    const log = pino({ level: "info" }, { write: (line: string) => infos.push(JSON.parse(line)) });
    const now = Date.now();
    const store = await ResultStore.open(dir, files, log, { now: () => now });
    const [a, b] = [idOf(1), idOf(2)];
    await store.put(a, "k", 1);
    const shard = join(dir, "results", b.slice(0, 2));
    const abandoned = join(shard, `.${b}.json.4242.0badc0ffee00.tmp`);
    const fresh = join(shard, `.${b}.json.4243.0badc0ffee01.tmp`);
    await files.mkdirp(shard);
    await writeFile(abandoned, "{");
    await writeFile(fresh, "{");
    const old = new Date(now - ABANDONED_TEMP_MS - 60_000);
    await utimes(abandoned, old, old);

    expect((await store.loadAll([a, b])).stored).toEqual(new Map([[a, 1]]));
    expect(await readdir(shard)).toEqual([basename(fresh)]);
    expect(infos.map((line) => line.removed)).toEqual([[abandoned]]);
    expect(infos[0]!.msg).toMatch(/removed 1 temp file from the result store/);

    // A dry run's read-only store removes nothing.
    await utimes(fresh, old, old);
    await ResultStore.openReadOnly(dir, files).loadAll([b]);
    expect(await readdir(shard)).toEqual([basename(fresh)]);
  });

  it("open removes the temp files of a format marker and of a probe once their writer is gone, and the probes a killed opener left, all once 15 minutes old", async () => {
    const infos: Array<{ msg: string; files?: string[]; removed?: string[] }> = [];
    const log = pino({ level: "info" }, { write: (line: string) => infos.push(JSON.parse(line)) });
    const now = Date.now();
    const dead = await deadPid();
    const results = join(dir, "results");
    await files.mkdirp(results);
    const marker = `.format.json.${dead}.0badc0ffee00.tmp`;
    // Killed between making its probe and removing it, or while making it (its temp file).
    const probe = ".writable-1700000000000";
    const probeTemp = `..writable-1700000000000.${dead}.0badc0ffee00.tmp`;
    // One made a moment ago, and the temp file of a running process's.
    const freshProbe = ".writable-1700000000001";
    const running = `..writable-1700000000000.${process.ppid}.0badc0ffee00.tmp`;
    const notOurs = `.notes.txt.${dead}.0badc0ffee00.tmp`;
    const old = new Date(now - ABANDONED_TEMP_MS - 60_000);
    const made = [
      join(dir, marker),
      join(dir, notOurs),
      ...[probe, probeTemp, running].map((name) => join(results, name)),
    ];
    for (const path of made) {
      await writeFile(path, "");
      await utimes(path, old, old);
    }
    await writeFile(join(results, freshProbe), "");

    const listed: string[] = [];
    const listing = {
      ...files,
      list(folder: string) {
        listed.push(folder);
        return files.list(folder);
      },
    };
    await ResultStore.open(dir, listing, log, { now: () => now });
    // Each folder once: the sweeps of one folder share its listing.
    expect(listed.sort()).toEqual([dir, join(dir, "quarantine"), results].sort());
    expect((await readdir(dir)).filter((name) => name.endsWith(".tmp"))).toEqual([notOurs]);
    expect((await readdir(results)).filter((name) => name.startsWith(".")).sort()).toEqual(
      [freshProbe, running].sort(),
    );
    expect(infos.map((line) => line.files ?? line.removed)).toEqual([
      [marker],
      [probeTemp],
      [join(results, probe)],
    ]);
  });

  it("open removes the temp files a run killed while quarantining a corrupt entry left in quarantine/, once 15 minutes old", async () => {
    const infos: Array<{ msg: string; removed: string[] }> = [];
    const log = pino({ level: "info" }, { write: (line: string) => infos.push(JSON.parse(line)) });
    const now = Date.now();
    const quarantine = join(dir, "quarantine");
    await files.mkdirp(quarantine);
    const id = idOf(1);
    const abandoned = join(quarantine, `.${id}.json.4242.0badc0ffee00.tmp`);
    const fresh = join(quarantine, `.${id}.1.json.4242.0badc0ffee01.tmp`);
    const kept = join(quarantine, `${id}.json`);
    for (const path of [abandoned, fresh, kept]) await writeFile(path, "{");
    const old = new Date(now - ABANDONED_TEMP_MS - 60_000);
    await utimes(abandoned, old, old);
    await utimes(kept, old, old);

    await ResultStore.open(dir, files, log, { now: () => now });
    expect((await readdir(quarantine)).sort()).toEqual([basename(fresh), basename(kept)].sort());
    expect(infos.map((line) => line.removed)).toEqual([[abandoned]]);
    expect(infos[0]!.msg).toMatch(/removed 1 temp file from the result store/);
  });

  it("rejects ids that are not 16 hex digits (they would escape the store)", async () => {
    const store = await open();
    await expect(store.put("../../etc/passwd", "k", 1)).rejects.toThrow(/not a job id/);
    await expect(store.get("ABCDEF0123456789")).rejects.toThrow(/not a job id/);
    await expect(store.loadAll(["x"])).rejects.toThrow(/not a job id/);
  });

  describe("a store that cannot be used", () => {
    /** An errno error as `node:fs` throws it. */
    const fsError = (code: string, syscall: string, path: string) =>
      Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, syscall, path });
    /** Files whose `mkdirp` fails with `code`. */
    const mkdirFails = (code: string) => ({
      ...files,
      mkdirp: async (d: string) => {
        throw fsError(code, "mkdir", d);
      },
    });

    it("is a StoreError naming the file in the way when the store or a parent of it is a file", async () => {
      await mkdir(join(dir, ".."), { recursive: true });
      const file = join(dir, "..", "afile");
      await writeFile(file, "");
      for (const [storeDir, code] of [
        [file, "STORE_NOT_DIRECTORY"],
        [join(file, "sub", "store"), "STORE_NOT_DIRECTORY"],
      ] as const) {
        // A dry run reads the store without making it, and says the same. Each is started
        // as it is awaited: one that failed while another was awaited would be unhandled.
        for (const start of [
          () => ResultStore.open(storeDir, files),
          () => ResultStore.openReadOnly(storeDir, files).loadAll([idOf(1)]),
        ]) {
          const attempt = start();
          await expect(attempt).rejects.toBeInstanceOf(StoreError);
          await expect(attempt).rejects.toMatchObject({
            code,
            dir: storeDir,
            path: file,
            message: `the result store ${storeDir} cannot be made: ${file} is a file, not a directory; move it aside, or give the store (--store) another directory`,
          });
        }
      }
      // A file where the store keeps a folder of its own.
      await mkdir(dir);
      await writeFile(join(dir, "results"), "");
      await expect(open()).rejects.toMatchObject({
        code: "STORE_NOT_DIRECTORY",
        path: join(dir, "results"),
      });
    });

    it("is a StoreError naming a symbolic link to nothing on the store's path, and one in a file system that makes no folders", async () => {
      const scratch = join(dir, "..", "scratch");
      const gone = join(dir, "..", "unmounted");
      await symlink(gone, scratch);
      for (const storeDir of [scratch, join(scratch, ".baton")]) {
        const opened = ResultStore.open(storeDir, files);
        await expect(opened).rejects.toBeInstanceOf(StoreError);
        await expect(opened).rejects.toMatchObject({
          code: "STORE_NOT_DIRECTORY",
          dir: storeDir,
          path: scratch,
          message: `the result store ${storeDir} cannot be made: ${scratch} is a symbolic link to ${gone}, which does not exist (a disk not mounted?); make ${gone}, or give the store (--store) another directory`,
        });
      }
      await expect(ResultStore.open(dir, mkdirFails("ENOENT"))).rejects.toMatchObject({
        name: "StoreError",
        code: "STORE_NOT_WRITABLE",
        message: expect.stringContaining(
          "no such file or directory, though the folder above it is there (a file system that makes no folders, such as /proc?); give the store (--store) another directory, on a disk you can write to",
        ),
      });
    });

    it("is a StoreError saying so when the store's folder cannot be written", async () => {
      await expect(ResultStore.open(dir, mkdirFails("EACCES"))).rejects.toMatchObject({
        name: "StoreError",
        code: "STORE_NOT_WRITABLE",
        message: expect.stringMatching(
          new RegExp(
            `^the result store ${dir} cannot be written: cannot mkdir ${join(dir, "results")}: permission denied: this user \\(\\w+\\) may not create anything in ${dir}( \\(.+\\))?; give the store \\(--store\\) another directory, one you can write to$`,
          ),
        ),
      });
      await expect(ResultStore.open(dir, mkdirFails("EROFS"))).rejects.toThrow(
        /the file system is read-only/,
      );
      // Folders that exist but cannot be written: found at open, not at the first result.
      const unwritable = {
        ...files,
        createExclusive: async (p: string) => {
          throw fsError("EACCES", "open", p);
        },
      };
      await expect(ResultStore.open(dir, unwritable)).rejects.toMatchObject({
        code: "STORE_NOT_WRITABLE",
        message: expect.stringMatching(
          new RegExp(
            `^the result store ${dir} cannot be written: cannot open ${join(dir, "results")}/\\.writable-\\d+: permission denied`,
          ),
        ),
      });
      // A format marker that cannot be made: a full disk fails, while one another user's folder
      // refuses is left to that user (a shared store whose own folder is theirs).
      const noMarker = (code: string) => ({
        ...files,
        createExclusive: async (p: string, data: string, mode?: number) => {
          if (p.endsWith("format.json")) throw fsError(code, "open", p);
          return files.createExclusive(p, data, mode);
        },
      });
      await expect(ResultStore.open(dir, noMarker("ENOSPC"))).rejects.toMatchObject({
        code: "STORE_NOT_WRITABLE",
        path: join(dir, "format.json"),
        message: expect.stringContaining("no space left on its disk"),
      });
      await ResultStore.open(dir, noMarker("EACCES"));
      await expect(stat(join(dir, "format.json"))).rejects.toThrow(/ENOENT/);
      // A store that opens leaves nothing of the check behind.
      await ResultStore.open(dir, files);
      expect((await readdir(join(dir, "results"))).filter((n) => n.startsWith("."))).toEqual([]);
    });

    it("one that holds results but cannot be written is refused all the same, saying how to reuse them from a copy", async () => {
      await (await open()).put(idOf(1), "k", 1);
      const refusing = (code: string) => ({
        ...files,
        createExclusive: async (p: string) => {
          throw fsError(code, "open", p);
        },
      });
      const results = join(dir, "results");
      const reuse = `a run does not start on a store it cannot write to, even to reuse the results it holds (what the run computed would be lost): to reuse them, copy them to a folder you can write to and give that (mkdir -p COPY && cp -r ${results} COPY/, then --store COPY), or reuse them without storing what the run computes (--store-read-only), or keep no results (--no-store)`;
      /** Regular-expression text matching `text` as it is. */
      const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      for (const [code, why] of [
        ["EROFS", "the file system is read-only"],
        // Root, or the folder's owner: its mode lets this user write there, so not permissions.
        [
          "EPERM",
          `operation not permitted, though the permissions of ${results} let this user write there (is it immutable? see lsattr -d ${results})`,
        ],
      ] as const) {
        await expect(ResultStore.open(dir, refusing(code))).rejects.toMatchObject({
          code: "STORE_NOT_WRITABLE",
          dir,
          message: expect.stringMatching(
            new RegExp(
              `^${literal(`the result store ${dir} cannot be written: cannot open ${results}/.writable-`)}\\d+: ${literal(`${why}; ${reuse}`)}$`,
            ),
          ),
        });
      }
      // A path the shell would split is quoted.
      const spaced = join(dir, "..", "my store");
      await (await ResultStore.open(spaced, files)).put(idOf(1), "k", 1);
      await expect(ResultStore.open(spaced, refusing("EROFS"))).rejects.toThrow(
        `cp -r '${join(spaced, "results")}' COPY/`,
      );
    });

    it("loadAll is a StoreError naming an entry that cannot be read at all, not a crash", async () => {
      const store = await open();
      await store.put(idOf(1), "k", 1);
      await mkdir(pathOf(dir, idOf(2)), { recursive: true });
      const ids = [idOf(1), idOf(2)];
      for (const reader of [store, ResultStore.openReadOnly(dir, files)]) {
        await expect(reader.loadAll(ids)).rejects.toMatchObject({
          code: "STORE_UNREADABLE",
          path: pathOf(dir, idOf(2)),
          message: expect.stringContaining(
            "it is a directory where a stored result belongs; move it out of the store",
          ),
        });
      }
      await rm(pathOf(dir, idOf(2)), { recursive: true });
      // Another user's entry (mode 0600): root reads everything, so the port is told to refuse.
      const path = pathOf(dir, idOf(1));
      const refuse = (p: string) => {
        if (p === path) throw fsError("EACCES", "open", p);
      };
      const denied = {
        ...files,
        read: async (p: string) => {
          refuse(p);
          return files.read(p);
        },
        readMany: async (ps: readonly string[]) => {
          for (const p of ps) refuse(p);
          return files.readMany(ps);
        },
      };
      await expect((await ResultStore.open(dir, denied)).loadAll(ids)).rejects.toThrow(
        `cannot read ${path} in the result store ${dir}: permission denied`,
      );
      // A file where a shard's folder belongs.
      await rm(join(dir, "results", idOf(1).slice(0, 2)), { recursive: true });
      await writeFile(join(dir, "results", idOf(1).slice(0, 2)), "");
      await expect(store.loadAll(ids)).rejects.toThrow(
        /it is a file where a folder of stored results belongs/,
      );
    });
  });

  describe("a store written by a newer baton", () => {
    const newer = STORE_FORMAT + 1;
    /** Every file of the store and its text, to show that nothing was moved or changed. */
    const snapshot = async () => {
      const texts: Record<string, string> = {};
      for (const name of await readdir(dir, { recursive: true })) {
        const path = join(dir, name);
        if ((await stat(path)).isFile()) texts[name] = await readFile(path, "utf8");
      }
      return texts;
    };

    it("is refused whole by its format marker, before anything is made or read in it", async () => {
      const store = await open();
      await store.put(idOf(1), "k", 1);
      await writeFile(join(dir, "format.json"), `{"format":${newer}}\n`);
      await rm(join(dir, "quarantine"), { recursive: true });
      const before = await snapshot();
      const refused = {
        code: "STORE_NEWER_FORMAT",
        dir,
        path: join(dir, "format.json"),
        message: `the result store ${dir} was written by a newer baton: ${join(dir, "format.json")} is in store format ${newer}, and this baton knows formats up to ${STORE_FORMAT}; no entry of it was moved or written over. Upgrade baton to use this store, or give this run another store (--store DIR) or none (--no-store)`,
      };
      await expect(open()).rejects.toMatchObject(refused);
      await expect(ResultStore.openReadOnly(dir, files).loadAll([idOf(1)])).rejects.toMatchObject(
        refused,
      );
      await expect(ResultStore.openReadOnly(dir, files).get(idOf(1))).rejects.toBeInstanceOf(
        StoreError,
      );
      expect(await snapshot()).toEqual(before);
    });

    it("an entry of a newer format in a store without its marker is never quarantined nor written over", async () => {
      const store = await open();
      for (const n of [1, 2, 3]) await store.put(idOf(n), "k", n);
      const newerEntry = (await readFile(pathOf(dir, idOf(2)), "utf8")).replace(
        `"format":${STORE_FORMAT}`,
        `"format":${newer}`,
      );
      await writeFile(pathOf(dir, idOf(2)), newerEntry);
      await writeFile(pathOf(dir, idOf(3)), "{torn");
      await rm(join(dir, "format.json"));
      const before = await snapshot();
      const refused = {
        code: "STORE_NEWER_FORMAT",
        path: pathOf(dir, idOf(2)),
        message: expect.stringContaining(`is in store format ${newer}, and this baton knows`),
      };
      // The corrupt entry (read before or after it) stays where it is too: nothing is quarantined
      // until every entry was read.
      const rerun = ResultStore.openReadOnly(dir, files);
      for (const ids of [
        [idOf(1), idOf(2), idOf(3)],
        [idOf(3), idOf(2)],
      ]) {
        await expect(store.loadAll(ids)).rejects.toMatchObject(refused);
        await expect(rerun.loadAll(ids)).rejects.toMatchObject(refused);
      }
      await expect(store.get(idOf(2))).rejects.toMatchObject(refused);
      // `--force` recomputes without reading: its result is not written over the newer one.
      await expect(store.put(idOf(2), "k", 2)).rejects.toMatchObject(refused);
      expect(await snapshot()).toEqual(before);
      expect(warnings).toEqual([]);
    });

    it("a store without a marker, made before it, is read as this format and gets its marker when opened to write", async () => {
      const store = await open();
      await store.put(idOf(1), "k", 1);
      await rm(join(dir, "format.json"));
      expect((await ResultStore.openReadOnly(dir, files).loadAll([idOf(1)])).stored.size).toBe(1);
      await expect(stat(join(dir, "format.json"))).rejects.toThrow(/ENOENT/);
      expect((await (await open()).loadAll([idOf(1)])).stored.get(idOf(1))).toBe(1);
      expect(await readFile(join(dir, "format.json"), "utf8")).toBe(`{"format":${STORE_FORMAT}}\n`);
    });

    it("an empty marker is a StoreError saying so: a marker appears whole, so something emptied it", async () => {
      await (await open()).put(idOf(1), "k", 1);
      // It read as this format until the thirty-first session, as another run making it.
      await writeFile(join(dir, "format.json"), "");
      await expect(open()).rejects.toMatchObject({
        code: "STORE_UNREADABLE",
        path: join(dir, "format.json"),
        message: `the result store ${dir} has an empty format marker ${join(dir, "format.json")} (baton writes it whole, so something emptied it); baton writes it as {"format":${STORE_FORMAT}}: put back the one its baton wrote, or give this run another store (--store DIR)`,
      });
    });

    it("a marker that names no format is a StoreError saying what it holds", async () => {
      await mkdir(dir, { recursive: true });
      for (const text of ["{not json", '{"format":"2"}', "[]", '{"format":0}']) {
        await writeFile(join(dir, "format.json"), text);
        await expect(open()).rejects.toMatchObject({
          code: "STORE_UNREADABLE",
          path: join(dir, "format.json"),
          message: expect.stringContaining(
            `that names no format (it holds ${JSON.stringify(text)})`,
          ),
        });
      }
    });

    it("a directory where the marker belongs is a StoreError saying so, not that a stored result belongs there", async () => {
      await mkdir(join(dir, "format.json"), { recursive: true });
      await expect(open()).rejects.toMatchObject({
        code: "STORE_UNREADABLE",
        path: join(dir, "format.json"),
        message: `the result store ${dir} has a directory where its format marker ${join(dir, "format.json")} belongs (no baton made it); remove it (baton writes the marker again), or give this run another store (--store DIR)`,
      });
    });
  });

  describe("corrupt entries", () => {
    const id = idOf(42);
    const value: Json = { count: 4, items: ["a", "b"] };

    /** Damages the stored entry's text; returns what was wrong, as the warning says it. */
    const damages: Array<[string, (text: string) => string, RegExp]> = [
      ["a torn (truncated) write", (t) => t.slice(0, Math.floor(t.length / 2)), /not valid JSON/],
      ["an empty file", () => "", /not valid JSON/],
      ["invalid JSON", (t) => `${t}}garbage`, /not valid JSON/],
      [
        "a flipped bit in the value",
        (t) => {
          const bytes = Buffer.from(t);
          const at = t.indexOf('"count":4') + '"count":'.length;
          bytes[at]! ^= 0x01; // "4" becomes "5": still valid JSON
          return bytes.toString();
        },
        /checksum mismatch/,
      ],
      ["a wrong id inside", (t) => t.replace(id, idOf(43)), /holds id/],
      ["an unknown format", (t) => t.replace('"format":1', '"format":0'), /unknown format 0/],
      [
        "a format that is no number",
        (t) => t.replace('"format":1', '"format":"2"'),
        /unknown format "2"/,
      ],
      ["a JSON value that is not an entry", () => "[1,2]", /not a JSON object/],
      ["a missing checksum", (t) => t.replace('"checksum"', '"chksum"'), /checksum is not/],
    ];

    it.each(damages)(
      "%s: get returns undefined, warns, and quarantines the file",
      async (_, damage, problem) => {
        const store = await open();
        await store.put(id, "count", value);
        const path = pathOf(dir, id);
        const bad = damage(await readFile(path, "utf8"));
        await writeFile(path, bad);

        expect(await store.get(id)).toBeUndefined();

        expect(warnings).toHaveLength(1);
        expect(warnings[0]!.file).toBe(path);
        expect(warnings[0]!.problem).toMatch(problem);
        expect(warnings[0]!.msg).toContain(path);
        await expect(stat(path)).rejects.toThrow(/ENOENT/);
        const quarantined = join(dir, "quarantine", `${id}.json`);
        expect(await readFile(quarantined, "utf8")).toBe(bad);
        expect((await stat(quarantined)).mode & 0o777).toBe(0o600);

        // The job is recomputed and stored again.
        expect(await store.get(id)).toBeUndefined();
        await store.put(id, "count", value);
        expect(await store.get(id)).toEqual(value);
        expect(warnings).toHaveLength(1);
      },
    );

    it("keeps every quarantined copy of the same id", async () => {
      const store = await open();
      for (const bad of ["first", "second", "third"]) {
        await files.writeAtomic(pathOf(dir, id), bad);
        expect(await store.get(id)).toBeUndefined();
      }
      const names = await readdir(join(dir, "quarantine"));
      expect(names.sort()).toEqual([`${id}.1.json`, `${id}.2.json`, `${id}.json`]);
      const contents = await Promise.all(
        names.map((n) => readFile(join(dir, "quarantine", n), "utf8")),
      );
      expect(contents.sort()).toEqual(["first", "second", "third"]);
    });

    it("loadAll leaves corrupt entries out, counts and quarantines them", async () => {
      const store = await open();
      await store.put(idOf(1), "k", 1);
      await store.put(id, "k", value);
      await writeFile(pathOf(dir, id), "{");
      const { stored, corrupt } = await store.loadAll([idOf(1), id, idOf(2)]);
      expect(stored).toEqual(new Map([[idOf(1), 1]]));
      expect(corrupt).toBe(1);
      expect(warnings).toHaveLength(1);
      expect(await readdir(join(dir, "quarantine"))).toEqual([`${id}.json`]);
    });

    it("quarantines many corrupt entries without listing quarantine/ for each (that made reading them quadratic)", async () => {
      const ids = Array.from({ length: 300 }, (_, n) => idOf(n));
      for (const each of ids) {
        await mkdir(dirname(pathOf(dir, each)), { recursive: true });
        await writeFile(pathOf(dir, each), "garbage");
      }
      const quarantine = join(dir, "quarantine");
      let listed = 0;
      const counting: typeof files = {
        ...files,
        list: async (folder) => {
          if (folder === quarantine) listed++;
          return files.list(folder);
        },
      };
      const store = await ResultStore.open(dir, counting, logger);
      // Once as it opens, for the temp files of a run killed while quarantining.
      expect(listed).toBe(1);
      expect(await store.loadAll(ids)).toEqual({ stored: new Map(), corrupt: 300 });
      expect(listed).toBe(1);
      expect((await readdir(quarantine)).sort()).toEqual(ids.map((each) => `${each}.json`).sort());
    });

    it("loadAll keeps a good entry a concurrent put wrote over a corrupt one it had read", async () => {
      // loadAll reads the torn entry; the put replaces it before loadAll looks at what it read.
      let store: ResultStore | undefined;
      const putFirst: typeof files = {
        ...files,
        readMany: async (paths) => {
          const texts = await files.readMany(paths);
          await store?.put(id, "count", value);
          return texts;
        },
      };
      store = await ResultStore.open(dir, putFirst, logger);
      await files.writeAtomic(pathOf(dir, id), "torn");
      const { stored, corrupt } = await store.loadAll([id]);
      expect([stored.get(id), corrupt]).toEqual([value, 0]);
      expect(await store.get(id)).toEqual(value);
    });

    it("never removes a good entry a concurrent put wrote while a corrupt one was quarantined", async () => {
      const store = await open();
      await files.writeAtomic(pathOf(dir, id), "torn");
      const [got] = await Promise.all([store.get(id), store.put(id, "count", value)]);
      expect(got).toBeUndefined();
      expect(await store.get(id)).toEqual(value);
    });
  });

  it("loadAll over 10,000 ids with 100 stored lists each shard once and reads only the 100", async () => {
    const store = await open();
    const ids = Array.from({ length: 10_000 }, (_, i) => idOf(i));
    await Promise.all(ids.slice(0, 100).map((id, i) => store.put(id, "k", { i })));

    // What loadAll asks of the files, counted: a look for each of the 10,000 entries (a read
    // or a stat of each) is what made a large graph's start slow.
    const listed: string[] = [];
    const read: string[] = [];
    const counted: Files = {
      ...files,
      list: (folder) => {
        listed.push(folder);
        return files.list(folder);
      },
      read: (path) => {
        read.push(path);
        return files.read(path);
      },
      readMany: (paths) => {
        read.push(...paths);
        return files.readMany(paths);
      },
    };
    const reopened = await ResultStore.open(dir, counted, logger, { now: () => 1_700_000_000_000 });
    listed.length = 0;
    read.length = 0;
    const { stored, corrupt } = await reopened.loadAll(ids);

    expect(corrupt).toBe(0);
    expect(stored.size).toBe(100);
    expect(stored.get(ids[37]!)).toEqual({ i: 37 });
    const shards = new Set(ids.map((id) => id.slice(0, 2)));
    expect(listed.filter((dir) => dir.includes("results"))).toHaveLength(shards.size);
    expect(
      new Set(read.filter((path) => path.endsWith(".json") && !path.endsWith("format.json"))),
    ).toEqual(
      new Set(ids.slice(0, 100).map((id) => join(dir, "results", id.slice(0, 2), `${id}.json`))),
    );
  });

  it("property: put then get returns a deep-equal value for any JSON value (-0 reads as 0)", async () => {
    const store = await open();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        const id = idOf(n++);
        await store.put(id, "any", value as Json);
        const got = await store.get(id);
        // JSON has no -0 (it prints as 0), so the value comes back as JSON reads it.
        expect(got).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(got!)).toBe(canonicalJson(value as Json));
      }),
      { numRuns: 200 },
    );
    expect(warnings).toEqual([]);
  });
});
