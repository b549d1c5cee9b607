/**
 * `baton run --store-read-only` on `.baton` beside the graph module, which this user can
 * write: the run writes nothing there, not even its log (which went to `.baton/logs/`), and
 * says where its logs go. Run in this process, with in-process workers.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { runCommand } from "../../src/cli/runCommand.ts";

/** Every file under `dir` with its text and modification time. */
function contents(dir: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    const stats = statSync(path);
    found[name] = stats.isFile() ? `${stats.mtimeMs} ${readFileSync(path, "utf8")}` : "folder";
  }
  return found;
}

describe("baton run --store-read-only on .baton beside the graph module", () => {
  let dir: string;
  const tmp = process.env.TMPDIR;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "baton-read-only-run-"));
    process.env.TMPDIR = dir;
  });
  afterEach(() => {
    if (tmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmp;
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes nothing in it, its logs going to baton-UID in the temp folder, as it says", async () => {
    const index = JSON.stringify(resolve("src/index.ts"));
    const graph = (n: number) => {
      const path = join(dir, `g${n}.graph.ts`);
      writeFileSync(
        path,
        `import { defineJobs, job } from ${index};\nexport const jobs = defineJobs({ one: (n: number) => n });\nexport default [${Array.from({ length: n }, (_, i) => i + 1).join(", ")}].map((n) => job("one", n));\n`,
      );
      return path;
    };
    const said: string[] = [];
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation((text) => {
      said.push(String(text));
      return true;
    });
    try {
      expect(await runCommand([graph(2), "--in-process"])).toBe(0);
      const store = join(dir, ".baton");
      const before = contents(store);
      said.length = 0;
      // One job stored, one to compute.
      expect(await runCommand([graph(3), "--in-process", "--store-read-only"])).toBe(0);
      expect(contents(store)).toEqual(before);
      const logs = join(dir, `baton-${process.getuid?.() ?? "user"}`, "logs");
      const [folder] = readdirSync(logs);
      expect(readdirSync(join(logs, folder!))).toContain("run.log");
      expect(said).toContain(
        `baton run: reusing the results stored in ${store} without writing anything there (--store-read-only): what this run computes is not stored, so a rerun computes it again; its logs go to ${join(logs, folder!)} (not in .baton beside the graph module: it is the store this run only reads)\n`,
      );
      expect(said.join("")).toContain("2 results reused from the store");
    } finally {
      stderr.mockRestore();
    }
  });
});
