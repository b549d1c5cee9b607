/**
 * `nodeFiles().createExclusive` where `link(2)` fails: a file system without hard links
 * (vfat's EPERM), a link NFS made but answered EEXIST, and one that fails otherwise (EIO). `link` is replaced for this
 * file only; every other call is the real one.
 */
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";

/**
 * The errno `link` fails with, or undefined for the real `link`; with `madeFirst`, the real
 * link is made before it fails (an NFS reply lost, the call sent again).
 */
let linkFails: string | undefined;
let madeFirst = false;

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  return {
    ...real,
    link: async (existing: string, made: string) => {
      if (linkFails === undefined || madeFirst) await real.link(existing, made);
      if (linkFails === undefined) return;
      throw Object.assign(new Error(`${linkFails}: link '${existing}' -> '${made}'`), {
        code: linkFails,
        syscall: "link",
        path: existing,
        dest: made,
      });
    },
  };
});

describe("nodeFiles' exclusive create where link fails", () => {
  const files = nodeFiles();
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "baton-nolinks-"));
  });

  afterEach(async () => {
    linkFails = undefined;
    madeFirst = false;
    await rm(dir, { recursive: true, force: true });
  });

  it("creates the file with O_EXCL and then writes it on a file system without hard links", async () => {
    linkFails = "EPERM";
    const path = join(dir, "run", "graph.lock");
    expect(await files.createExclusive(path, "held", 0o600)).toBe(true);
    expect(await readFile(path, "utf8")).toBe("held");
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await files.createExclusive(path, "late")).toBe(false);
    expect(await readFile(path, "utf8")).toBe("held");
    expect(await readdir(join(dir, "run"))).toEqual(["graph.lock"]);
  });

  it("takes a link answered EEXIST though it made the name (NFS sends a call whose reply was lost again) as made", async () => {
    linkFails = "EEXIST";
    madeFirst = true;
    const path = join(dir, "lease.json");
    expect(await files.createExclusive(path, "mine")).toBe(true);
    expect(await readdir(dir)).toEqual(["lease.json"]);
    // Another's file there is taken, as ever.
    madeFirst = false;
    expect(await files.createExclusive(path, "late")).toBe(false);
    expect(await readFile(path, "utf8")).toBe("mine");
  });

  it("throws a link's other failure of the file it was to make, leaving neither it nor its temp file", async () => {
    linkFails = "EIO";
    const path = join(dir, "run", "graph.lock");
    const error = (await files.createExclusive(path, "held").catch((e: unknown) => e)) as Error &
      NodeJS.ErrnoException;
    expect(error).toMatchObject({ code: "EIO", path });
    expect(error.message).toBe(`EIO: link '${path}'`);
    expect(await readdir(join(dir, "run"))).toEqual([]);
  });
});
