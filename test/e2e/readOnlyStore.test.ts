/**
 * `baton run` on a result store it cannot write to, made read-only as users make one: a
 * read-only mount (a bind mount in a mount namespace of the run's own, so nothing outlives
 * it) and a folder made read-only with `chmod -R a-w` (for another user than root, whom
 * modes do not stop). The run is refused before anything runs or changes, saying how to
 * reuse the results from a copy; the copy it describes reuses them; a store a newer baton
 * wrote is refused untouched.
 */

import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { STORE_FORMAT } from "../../src/runtime/storeFormat.ts";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";

afterEach(stopBatons);

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

/** A folder (readable by all) holding a graph of three jobs, `g.graph.ts`. */
function graphDir(): { dir: string; graph: string } {
  const dir = mkdtempSync(join(tmpdir(), "baton-read-only-"));
  dirs.push(dir);
  chmodSync(dir, 0o755);
  const graph = join(dir, "g.graph.ts");
  writeFileSync(
    graph,
    `import { defineJobs, job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};\nexport const jobs = defineJobs({ one: (n: number) => n });\nexport default [1, 2, 3].map((n) => job("one", n));\n`,
  );
  return { dir, graph };
}

/** Every file under `dir` with its text: what a refused run must leave as it was. */
function contents(dir: string): Record<string, string> {
  const texts: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    if (statSync(path).isFile()) texts[name] = readFileSync(path, "utf8");
  }
  return texts;
}

describe("baton run on a store it cannot write to", { timeout: 60_000 }, () => {
  it.runIf(isRoot)(
    "a store on a read-only mount is refused at once (exit 2), saying how to reuse its results; the copy it describes reuses them",
    async (context) => {
      const { dir, graph } = graphDir();
      const store = join(dir, "store");
      const first = await startBaton(["run", graph, "--in-process", "--store", store]).exit;
      expect(first.code).toBe(0);
      const before = contents(store);
      // The run in a mount namespace of its own, where the store is mounted read-only.
      const mounted = spawnSync(
        "unshare",
        [
          "--mount",
          "sh",
          "-c",
          'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"',
          "sh",
          store,
          process.execPath,
          join(ROOT, "bin/baton.js"),
          "run",
          graph,
          "--in-process",
          "--store",
          store,
        ],
        { encoding: "utf8", timeout: 50_000, killSignal: "SIGKILL" },
      );
      if (mounted.error || /unshare|mount:/.test(mounted.stderr)) {
        context.skip(`cannot make a read-only mount here: ${mounted.error ?? mounted.stderr}`);
      }
      expect(mounted.stderr).toMatch(
        new RegExp(
          `^baton run: the result store ${store} cannot be written: cannot open ${join(store, "run")}/graph-[0-9a-f]{16}\\.lock: the file system is read-only; a run does not start on a store it cannot write to, even to reuse the results it holds \\(what the run computed would be lost\\): to reuse them, copy them to a folder you can write to and give that \\(mkdir -p COPY && cp -r ${join(store, "results")} COPY/, then --store COPY\\), or reuse them without storing what the run computes \\(--store-read-only\\), or keep no results \\(--no-store\\) \\[STORE_NOT_WRITABLE\\]\\n$`,
        ),
      );
      expect(mounted.status).toBe(2);
      expect(contents(store)).toEqual(before);

      const copy = join(dir, "copy");
      const copied = spawnSync(
        "sh",
        ["-c", `mkdir -p ${copy} && cp -r ${join(store, "results")} ${copy}/`],
        { encoding: "utf8" },
      );
      expect(copied.status).toBe(0);
      const reused = await startBaton(["run", graph, "--in-process", "--store", copy]).exit;
      expect(reused.stderr).toContain("3 results reused from the store");
      expect(reused.code).toBe(0);
    },
  );

  it.runIf(isRoot)(
    "as another user, a store made read-only with chmod -R a-w: refused the same; --dry-run, --no-store and --store-read-only work",
    async () => {
      const { dir, graph } = graphDir();
      chownSync(dir, NOBODY, NOBODY);
      const asNobody = (...args: string[]) =>
        startBaton(args, { uid: NOBODY, env: { TMPDIR: dir } }).exit;
      const first = await asNobody("run", graph, "--in-process");
      expect(first.code).toBe(0);
      const store = join(dir, ".baton");
      spawnSync("chmod", ["-R", "a-w", store]);
      const before = contents(store);
      const [refused, dryRun, none, reusing] = await Promise.all([
        asNobody("run", graph, "--in-process"),
        asNobody("run", graph, "--dry-run"),
        asNobody("run", graph, "--in-process", "--no-store"),
        asNobody("run", graph, "--in-process", "--store-read-only"),
      ]);
      expect(refused.stderr).toMatch(
        new RegExp(
          `^baton run: the result store ${store} \\(by default \\.baton beside the graph module\\) cannot be used: cannot write ${store}: permission denied: this user \\(nobody\\) may not write it \\(yours, mode 555\\); a run does not start on a store it cannot write to, even to reuse the results it holds .+, or keep no results \\(--no-store\\) \\[STORE_NOT_WRITABLE\\]\\n$`,
        ),
      );
      expect(refused.code).toBe(2);
      expect(dryRun.stderr).toContain(
        `dry run: 0 of 3 jobs would run (3 results stored in ${store})`,
      );
      expect(dryRun.code).toBe(0);
      expect(none.stderr).toContain("every job completed");
      expect(none.code).toBe(0);
      // Its logs go to the temp folder: .baton beside the graph module is the store it reads.
      expect(reusing.stderr).toMatch(
        new RegExp(
          `^baton run: reusing the results stored in ${store} without writing anything there \\(--store-read-only\\): what this run computes is not stored, so a rerun computes it again; its logs go to ${join(dir, `baton-${NOBODY}`, "logs")}/[\\w-]+ \\(not in \\.baton beside the graph module: it is the store this run only reads\\)\n`,
          "m",
        ),
      );
      expect(reusing.stderr).toContain("3 results reused from the store");
      expect(reusing.code).toBe(0);
      expect(contents(store)).toEqual(before);
    },
  );

  it("a store a newer baton wrote is refused at once (exit 2), naming both formats, with nothing in it changed", async () => {
    const { dir, graph } = graphDir();
    const store = join(dir, "store");
    expect((await startBaton(["run", graph, "--in-process", "--store", store]).exit).code).toBe(0);
    const marker = join(store, "format.json");
    expect(JSON.parse(readFileSync(marker, "utf8"))).toEqual({ format: STORE_FORMAT });
    writeFileSync(marker, `{"format":${STORE_FORMAT + 1}}\n`);
    const before = contents(store);
    const runs = await Promise.all(
      [[], ["--force"], ["--dry-run"]].map(
        (flags) => startBaton(["run", graph, "--in-process", "--store", store, ...flags]).exit,
      ),
    );
    for (const run of runs) {
      expect(run.stderr).toBe(
        `baton run: the result store ${store} was written by a newer baton: ${marker} is in store format ${STORE_FORMAT + 1}, and this baton knows formats up to ${STORE_FORMAT}; no entry of it was moved or written over. Upgrade baton to use this store, or give this run another store (--store DIR) or none (--no-store) [STORE_NEWER_FORMAT]\n`,
      );
      expect(run.code).toBe(2);
    }
    expect(contents(store)).toEqual(before);
  });
});
