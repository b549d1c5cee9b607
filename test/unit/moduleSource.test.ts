/**
 * `moduleSource`: the text a job module's code hash covers is the module and every local file
 * it imports, so a worker whose imported handler file differs is told apart.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, createEngine, localPool } from "../../src/index.ts";
import { moduleSource } from "../../src/runtime/moduleSource.ts";
import { loadJobsFile } from "../../src/runtime/userModule.ts";
import { fileTree } from "../fixtures/fileTree.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const tree = (files: Record<string, string>) => fileTree(files, dirs);

const GRAPH = [
  'import { job } from "baton";',
  'export { default as jobs } from "./jobs.ts";',
  'export default [job("calc", 21)];',
].join("\n");

describe("moduleSource", () => {
  it("covers the files a module imports, so another handler file gives another text", () => {
    const coordinator = tree({
      "graph.ts": GRAPH,
      "jobs.ts": "export default { calc: (n: number) => n * 2 };",
    });
    const worker = tree({
      "graph.ts": GRAPH,
      "jobs.ts": "export default { calc: (n: number) => n * 1000 };",
    });
    const same = tree({
      "graph.ts": GRAPH,
      "jobs.ts": "export default { calc: (n: number) => n * 2 };",
    });
    const text = moduleSource(join(coordinator, "graph.ts"));
    expect(text).toBe(`${GRAPH}\n// jobs.ts\nexport default { calc: (n: number) => n * 2 };`);
    expect(moduleSource(join(worker, "graph.ts"))).not.toBe(text);
    // The same tree elsewhere gives the same text: paths are relative to the module.
    expect(moduleSource(join(same, "graph.ts"))).toBe(text);
  });

  it("follows imports transitively, once each, through a cycle, .js names and index files", () => {
    const dir = tree({
      "jobs.ts": 'import { a } from "./lib/a.js";\nexport default { a };',
      "lib/a.ts": 'import { b } from "../shared";\nexport const a = () => b;',
      "shared/index.ts": 'import "../lib/a.js";\nexport const b = 1;',
    });
    const text = moduleSource(join(dir, "jobs.ts"));
    expect([...text.matchAll(/^\/\/ (\S+)$/gm)].map((m) => m[1])).toEqual([
      "lib/a.ts",
      "shared/index.ts",
    ]);
  });

  it("leaves out packages and relative names that are no file (in a comment, computed)", () => {
    const source = [
      'import { readFile } from "node:fs/promises";',
      'import pino from "pino";',
      '// see "./notes.md" and from "./missing.ts"',
      "export default { read: (p: string) => readFile(p) };",
    ].join("\n");
    const dir = tree({ "jobs.ts": source });
    expect(moduleSource(join(dir, "jobs.ts"))).toBe(source);
  });

  it("says which job module cannot be read, and where a relative path was taken from", () => {
    const dir = tree({});
    const missing = join(dir, "jobs.ts");
    expect(() => moduleSource(missing)).toThrow(
      new ConfigError(
        `cannot read the job module ${missing} (ENOENT): give the path of the job module file its workers load`,
      ),
    );
    const engine = () =>
      createEngine({
        jobs: { double: (n: number) => n * 2 },
        workers: localPool({ jobsModule: "no-such-jobs.ts", count: 1 }),
      });
    expect(engine).toThrow(ConfigError);
    expect(engine).toThrow(
      `cannot read the job module ${resolve("no-such-jobs.ts")} (ENOENT): give the path of the job module file its workers load (a relative path such as no-such-jobs.ts is taken from ${process.cwd()})`,
    );
    // A typo of a file that is there: the file meant, as the path given names it.
    writeFileSync(join(dir, "jobs.ts"), "export default {};\n");
    expect(() => moduleSource(join(dir, "jbos.ts"))).toThrow(
      `cannot read the job module ${join(dir, "jbos.ts")} (ENOENT): give the path of the job module file its workers load; did you mean ${join(dir, "jobs.ts")}?`,
    );
  });
});

describe("loadJobsFile", () => {
  it("hands out the source it took the code hash over, and the hash over it is the one a loaded module always had", async () => {
    const dir = tree({
      "package.json": '{"type": "module"}',
      "jobs.ts":
        'import { factor } from "./lib/factor.ts";\nexport default { calc: (n: number) => n * factor };',
      "lib/factor.ts": "export const factor = 2;",
    });
    const loaded = await loadJobsFile(join(dir, "jobs.ts"));
    expect(loaded.source).toBe(moduleSource(join(dir, "jobs.ts")));
    // The hash of this tree before the source was handed out: workers of either baton agree.
    expect(loaded.codeHash).toBe("40775b49d326b6ad");
  });
});
