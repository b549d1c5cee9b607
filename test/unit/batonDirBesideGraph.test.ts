import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { batonDirBesideGraph } from "../../src/cli/batonDirBesideGraph.ts";

describe("batonDirBesideGraph with --store-read-only", () => {
  let dir: string;
  let graph: string;
  let own: string;
  const tmp = process.env.TMPDIR;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "baton-beside-"));
    graph = join(dir, "g.graph.ts");
    // The temp folder of this user's, baton-UID, made in the test's folder, not the machine's.
    process.env.TMPDIR = dir;
    own = join(dir, `baton-${process.getuid?.() ?? "user"}`);
  });
  afterEach(() => {
    if (tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmp;
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the run's files out of the store it reads when that is .baton beside the graph module", () => {
    const store = join(dir, ".baton");
    mkdirSync(join(store, "results"), { recursive: true });
    expect(batonDirBesideGraph(graph, { keepsResults: false, readsOnly: store })).toEqual({
      dir: own,
      instead: "it is the store this run only reads",
    });
    // A link to it is the same store.
    symlinkSync(store, join(dir, "link"));
    expect(
      batonDirBesideGraph(graph, { keepsResults: false, readsOnly: join(dir, "link") }).dir,
    ).toBe(own);
  });

  it("makes no .baton in a store that holds the graph module's folder", () => {
    expect(batonDirBesideGraph(graph, { keepsResults: false, readsOnly: dir })).toEqual({
      dir: own,
      instead: "it is in the store this run only reads",
    });
    expect(existsSync(join(dir, ".baton"))).toBe(false);
  });

  it("keeps them in .baton beside the graph module when the store is elsewhere, as --no-store does", () => {
    const store = join(dir, "store");
    mkdirSync(store);
    expect(batonDirBesideGraph(graph, { keepsResults: false, readsOnly: store })).toEqual({
      dir: join(dir, ".baton"),
    });
    expect(batonDirBesideGraph(graph, { keepsResults: false })).toEqual({
      dir: join(dir, ".baton"),
    });
    expect(existsSync(own)).toBe(false);
  });

  it("keeps a --no-store run's files in this user's temp folder when .baton is a symbolic link to nothing, saying so", () => {
    const target = join(dir, "not-mounted");
    symlinkSync(target, join(dir, ".baton"));
    expect(batonDirBesideGraph(graph, { keepsResults: false })).toEqual({
      dir: own,
      instead: `${join(dir, ".baton")} is a symbolic link to ${target}, which does not exist (a disk not mounted?)`,
    });
    // A run that keeps results is refused as a --store through that link is.
    expect(() => batonDirBesideGraph(graph, { keepsResults: true })).toThrow(
      expect.objectContaining({
        code: "STORE_NOT_DIRECTORY",
        message: `the result store ${join(dir, ".baton")} cannot be made: ${join(dir, ".baton")} is a symbolic link to ${target}, which does not exist (a disk not mounted?); make ${target}, or give the store (--store) another directory`,
      }),
    );
  });
});
