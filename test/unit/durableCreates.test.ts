/**
 * Which files baton creates exclusively without syncing them to the disk first
 * (`CreateOptions.durable: false`; that the ports then skip the sync is `nodeFiles.test.ts`'
 * and `remoteFiles.test.ts`'): a graph lock, a launcher's lease and the store's writability
 * probe are worth nothing after the machine went down, and one left empty is taken over or
 * removed; a kept secret, the store's format marker and a run's registration (an unreadable
 * one waits for a person) are synced.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { lockGraph } from "../../src/runtime/graphLock.ts";
import { claimLease } from "../../src/runtime/launcherLease.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { CreateOptions, Files } from "../../src/runtime/ports.ts";
import { ResultStore } from "../../src/runtime/resultStore.ts";
import { registerRun } from "../../src/runtime/runRegistration.ts";
import { keptSecret } from "../../src/runtime/secret.ts";
import { SimClock } from "../../src/sim/simClock.ts";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "baton-durable-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `nodeFiles()`, telling by file name whether each exclusive create was durable. */
function recordingFiles(): { files: Files; durable: Map<string, boolean> } {
  const real = nodeFiles();
  const durable = new Map<string, boolean>();
  const files: Files = {
    ...real,
    createExclusive(path, data, mode, options?: CreateOptions) {
      durable.set(basename(path), options?.durable ?? true);
      return real.createExclusive(path, data, mode, options);
    },
  };
  return { files, durable };
}

describe("exclusive creates", () => {
  it("sync a kept secret, the store's format marker and a run's registration, not a lock, a lease or the store's probe", async () => {
    const { files, durable } = recordingFiles();
    const graph = join(dir, "g.graph.ts");
    await writeFile(graph, "export default [];\n");
    const store = join(dir, ".baton");
    await (await lockGraph(store, graph, { files })).release();
    await ResultStore.open(store, files);
    await (
      await registerRun(join(dir, "run"), graph, { files, withoutLock: "--no-store" })
    ).release();
    await claimLease({
      files,
      clock: new SimClock(),
      path: join(dir, "lease.json"),
      deployment: "dep-0123456789ab",
      pid: process.pid,
      token: "t",
      staleAfterMs: 30_000,
    });
    await keptSecret(join(dir, "cluster.secret"), { files });
    /** The name's kind: its time, hash and random parts left out. */
    const kind = (name: string) =>
      name
        .replace(/^graph-[0-9a-f]{16}(-\d+-[0-9a-f]{8})?/, (_, run) =>
          run ? "graph-G-R" : "graph-G",
        )
        .replace(/^\.writable-\d+$/, ".writable-T");
    const made = Object.fromEntries([...durable].map(([name, synced]) => [kind(name), synced]));
    // Each was synced until the thirty-second session.
    expect(made).toEqual({
      "graph-G.lock": false,
      ".writable-T": false,
      "format.json": true,
      "graph-G-R.run": true,
      "lease.json": false,
      "cluster.secret": true,
    });
  });
});
