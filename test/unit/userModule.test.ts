import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Script } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { job } from "../../src/graph/job.ts";
import { syntaxErrorAt } from "../../src/runtime/syntaxErrorAt.ts";
import { graphOf, importUserModule, jobsOf } from "../../src/runtime/userModule.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The namespace Node's `import()` gives a CommonJS module whose `module.exports` is `exports`:
 * `exports` as the default export, and as named exports the properties `named` that Node
 * finds by reading the source (`exports.jobs = …`; not those of an object literal's keys
 * assigned to `module.exports`), but never `default`, which is always `module.exports`.
 */
function commonJs(exports: object, named: string[] = []): Record<string, unknown> {
  const namespace: Record<string, unknown> = { default: exports };
  for (const name of named.filter((name) => name !== "default")) {
    namespace[name] = (exports as Record<string, unknown>)[name];
  }
  return namespace;
}

const double = job("double", 1);

describe("jobsOf", () => {
  const handlers = { double: (n: number) => n * 2 };

  it("takes the named export jobs, or a default export of handlers", () => {
    expect(jobsOf({ jobs: handlers, default: [job("double", 1)] }, "graph.ts")).toBe(handlers);
    expect(jobsOf({ default: handlers }, "jobs.ts")).toBe(handlers);
  });

  it("tells a graph module without handlers how to export them, or to give --jobs", () => {
    const graphs = [
      { default: [job("double", 1)] },
      { default: job("double", 1) },
      { graph: [job("double", 1)] },
    ];
    for (const module of graphs) {
      expect(() => jobsOf(module, "graph.ts")).toThrow(
        'graph.ts exports a graph but no job module: export its handlers from it too (`export { default as jobs } from "./jobs.ts"`, or `export const jobs = { kind: handler, … }`), or give the job module\'s file as --jobs',
      );
    }
  });

  it("gives the default export of a module compiled to CommonJS given as jobs", () => {
    // `export { default as jobs } from "./jobs.ts"` from an ES module, jobs.ts compiled to
    // CommonJS (a package without "type": "module"): Node gives its module.exports.
    const compiled = { __esModule: true, default: handlers };
    expect(jobsOf({ default: [double], jobs: compiled }, "graph.mts")).toBe(handlers);
  });

  it("tells another file (a --jobs FILE) how to export handlers, not to pass --jobs again", () => {
    for (const [module, is] of [
      [{}, ""],
      [{ x: 1 }, ""],
      [{ default: "handlers" }, " (its default export is a string)"],
      // baton sim's handlers (a function of its tools) given as --jobs: it said only "no job module".
      [
        { default: () => handlers },
        " (its default export is a function, as a graph function or the handlers of baton sim --handlers are, where a job module is the object of handlers itself)",
      ],
    ] as const) {
      expect(() => jobsOf(module, "jobs.ts")).toThrow(
        `jobs.ts exports no job module${is}: make its default export the handlers (\`export default defineJobs({ kind: handler, … })\`; in CommonJS, \`module.exports = { kind: handler, … }\`), or export them as \`jobs\``,
      );
    }
  });
  it("names a jobs export that is no object of handlers, where it said the module exported none", () => {
    const graph = [job("double", 1)];
    expect(() => jobsOf({ default: graph, jobs: () => handlers }, "graph.ts")).toThrow(
      "graph.ts exports jobs as a function, where a job module is the object of handlers itself: export that object as jobs (`export const jobs = { kind: handler, … }`), or give the job module's file as --jobs",
    );
    expect(() => jobsOf({ jobs: [handlers] }, "jobs.ts")).toThrow(
      "jobs.ts exports jobs as a list, where a job module is the object of handlers itself: export that object as jobs (`export const jobs = { kind: handler, … }`)",
    );
  });

  it("names handlers exported under another name, and how to export them as jobs", () => {
    const graph = [job("double", 1)];
    expect(() => jobsOf({ default: graph, handlers }, "graph.ts")).toThrow(
      "graph.ts exports no job module as its default export or jobs, where baton reads it: its export handlers is an object of handlers; export it as jobs (`export { handlers as jobs }`)",
    );
    const definitions = { train: { ranks: () => ["true"] }, double: { run: handlers.double } };
    expect(() => jobsOf({ myJobs: definitions, LIMITS: { a: 1 } }, "jobs.ts")).toThrow(
      "jobs.ts exports no job module as its default export or jobs, where baton reads it: its export myJobs is an object of handlers; export it as jobs (`export { myJobs as jobs }`, or `export default myJobs`)",
    );
  });

  it("tells a file that exports its handlers one by one to gather them", () => {
    const module = { double: (n: number) => n * 2, half: (n: number) => n / 2, LIMIT: 3 };
    expect(() => jobsOf(module, "jobs.ts")).toThrow(
      "jobs.ts exports no job module (its named exports double, half are not read as kinds): make its default export the handlers (`export default defineJobs({ double, half })`; in CommonJS, `module.exports = { double, half }`), or export them as `jobs`",
    );
  });
});

describe("a hand-written CommonJS module", () => {
  const handlers = { double: (n: number) => n * 2 };

  it("is a graph module with its graph as module.exports, its default or its graph, and its jobs beside it", async () => {
    const modules = {
      // module.exports = [job(…)]; module.exports.jobs = handlers
      "module.exports = [...]": commonJs(Object.assign([double], { jobs: handlers }), ["jobs"]),
      // exports.default = [job(…)]; exports.jobs = handlers
      "exports.default": commonJs({ default: [double], jobs: handlers }, ["default", "jobs"]),
      "module.exports = { jobs, default }": commonJs({ jobs: handlers, default: [double] }),
      "module.exports = { graph, jobs }": commonJs({ graph: [double], jobs: handlers }),
      "module.exports = { graph: () => [...], jobs }": commonJs({
        graph: async () => [double],
        jobs: handlers,
      }),
    };
    for (const [form, module] of Object.entries(modules)) {
      expect([...(await graphOf(module, "graph.cjs"))], form).toEqual([double]);
      expect(jobsOf(module, "graph.cjs"), form).toBe(handlers);
    }
  });

  it("is a job module with its handlers as module.exports, its default or its jobs, kinds named default, graph or jobs included", () => {
    expect(jobsOf(commonJs(handlers, ["double"]), "jobs.cjs")).toBe(handlers);
    expect(jobsOf(commonJs({ default: handlers }, ["default"]), "jobs.cjs")).toBe(handlers);
    expect(jobsOf(commonJs({ jobs: handlers }, ["jobs"]), "jobs.cjs")).toBe(handlers);
    const kinds = {
      default: (n: number) => n,
      graph: { run: () => [] },
      jobs: { ranks: () => ["true"] },
    };
    expect(jobsOf(commonJs(kinds), "jobs.cjs")).toBe(kinds);
  });

  it("given as a job module, is told its graph is no job module", () => {
    for (const graph of [{ default: [double] }, { graph: double }]) {
      expect(() => jobsOf(commonJs(graph), "graph.cjs")).toThrow(
        "graph.cjs exports a graph but no job module",
      );
    }
  });

  it("exporting an object of jobs, is told to export them as a list", async () => {
    await expect(graphOf({ default: { a: double, b: [double] } }, "graph.ts")).rejects.toThrow(
      "graph.ts exports no graph: its export is an object of jobs (a, b), where a graph is a list of jobs or one job; export its values as a list (`export default Object.values(…).flat()`, or `export default [a, b]`)",
    );
    const many = Object.fromEntries(["a", "b", "c", "d"].map((key) => [key, double]));
    await expect(graphOf({ graph: many }, "graph.ts")).rejects.toThrow(
      "an object of jobs (a, b, c, …), where a graph is a list of jobs or one job; export its values as a list (`export default Object.values(…).flat()`, or `export default […]`)",
    );
  });

  it("given as a graph module, is still told when it is a job module", async () => {
    await expect(graphOf(commonJs(handlers), "jobs.cjs")).rejects.toThrow(
      "jobs.cjs exports no graph: its export is neither a job nor a list of jobs (a job module? give the graph module, and this file as --jobs)",
    );
  });

  it("exporting an object of neither jobs nor handlers (baton run package.json), is told what a graph module exports, not asked whether it is a job module", async () => {
    const manifest = { name: "app", version: "1.0.0", type: "module", dependencies: {} };
    await expect(graphOf({ default: manifest }, "package.json")).rejects.toThrow(
      'package.json exports no graph: its export is an object (name, version, type, …), neither a job nor a list of jobs; a graph module exports its jobs: `export default [job("kind", input), …]`',
    );
    await expect(graphOf({ default: {} }, "graph.ts")).rejects.toThrow(
      "graph.ts exports no graph: its export is an empty object, neither a job nor a list of jobs",
    );
  });
});

describe("importUserModule", () => {
  it("names a file of a close name in the folder of a path that does not exist", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-module-path-"));
    dirs.push(dir);
    writeFileSync(join(dir, "graph.ts"), "export default [];\n");
    for (const typo of ["grpah.ts", "graph.js", "Graph.ts"]) {
      await expect(importUserModule(join(dir, typo))).rejects.toThrow(
        `${join(dir, typo)} does not exist (looked at ${join(dir, typo)}); did you mean ${join(dir, "graph.ts")}?`,
      );
    }
    // Nothing close, or no such folder: the path alone.
    await expect(importUserModule(join(dir, "pipeline.ts"))).rejects.toThrow(/pipeline\.ts\)$/);
    await expect(importUserModule(join(dir, "gone", "graph.ts"))).rejects.toThrow(
      /gone\/graph\.ts\)$/,
    );
  });
});

describe("graphOf", () => {
  it("names a graph exported under another name, and how to export it where baton reads it", async () => {
    const jobs = { double: (n: number) => n * 2 };
    await expect(graphOf({ pipeline: [double], jobs }, "graph.ts")).rejects.toThrow(
      "graph.ts exports no graph as its default export or `graph`, where baton reads it: its export `pipeline` is a graph; export the graph as the default (`export default pipeline`; in CommonJS, `module.exports = pipeline`) or name it `graph`",
    );
    await expect(graphOf({ first: double, second: [double] }, "graph.ts")).rejects.toThrow(
      "its exports `first`, `second` are graphs; export the graph as the default (`export default first`;",
    );
    // A CommonJS module.exports of such names reads the same.
    await expect(graphOf(commonJs({ pipeline: [double], jobs }), "graph.cjs")).rejects.toThrow(
      "graph.cjs exports no graph as its default export or `graph`, where baton reads it: its export `pipeline` is a graph;",
    );
  });

  it("says what a module without a graph exports, and what to add", async () => {
    await expect(graphOf({ helper: () => 1, jobs: {} }, "graph.ts")).rejects.toThrow(
      'graph.ts exports no graph (it exports helper, jobs): add `export default [job("kind", input), …]`',
    );
    await expect(graphOf({}, "graph.ts")).rejects.toThrow(
      'graph.ts exports no graph: add `export default [job("kind", input), …]`',
    );
  });

  it("awaits a graph exported as a promise, and names the module whose promise rejected", async () => {
    expect(await graphOf({ default: Promise.resolve([double]) }, "graph.ts")).toEqual([double]);
    expect(await graphOf({ graph: Promise.resolve(double) }, "graph.ts")).toEqual([double]);
    const rejected = Promise.reject(new Error("no data folder"));
    await expect(graphOf({ default: rejected }, "graph.ts")).rejects.toThrow(
      /^the graph promise graph\.ts exports rejected: no data folder \(at .*userModule\.test\.ts:\d+:\d+\)$/,
    );
  });
});

describe("syntaxErrorAt", () => {
  it("says where the syntax error is that tsx's lexer, scanning a JavaScript module, placed at 1:1", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-syntax-"));
    dirs.push(dir);
    const file = join(dir, "graph.mjs");
    writeFileSync(
      file,
      'import { job } from "baton";\nexport const jobs = defineJobs({ f: (x) => x }\nexport default [];\n',
    );
    expect(syntaxErrorAt(new Error(`Parse error ${file}:1:1`), () => [])).toMatchObject({
      file,
      line: 2,
      column: 46,
      message: "missing ) after argument list",
    });
  });

  it("says where a syntax error is: from a CommonJS module's stack, or by checking an ES module again", () => {
    let compileError: unknown;
    try {
      new Script("module.exports = [1", { filename: "/home/me/graph.cjs" });
    } catch (error) {
      compileError = error;
    }
    expect(syntaxErrorAt(compileError, () => [])).toMatchObject({
      file: "/home/me/graph.cjs",
      line: 1,
    });

    const dir = mkdtempSync(join(tmpdir(), "baton-syntax-"));
    dirs.push(dir);
    const file = join(dir, "graph.mjs");
    writeFileSync(file, 'import { job } from "baton";\nexport default [job("double", 1)\n');
    // An ES module's syntax error, as import() throws it: no location in message or stack.
    const imported = new SyntaxError("Unexpected end of input");
    expect(syntaxErrorAt(imported, () => [file])).toMatchObject({ file, line: 3 });
    // A file whose check complains of something else is not where the import's error is.
    const linking = new SyntaxError(
      "The requested module './a.js' does not provide an export named 'b'",
    );
    expect(syntaxErrorAt(linking, () => [file])).toBeUndefined();
    writeFileSync(file, "export default [];\n");
    expect(syntaxErrorAt(imported, () => [file])).toBeUndefined();
    expect(syntaxErrorAt(new Error("boom"), () => [file])).toBeUndefined();
  });

  it("finds the error in a file the module imports, with its line, column and text", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-syntax-"));
    dirs.push(dir);
    const graph = join(dir, "graph.mjs");
    const helpers = join(dir, "helpers.js");
    writeFileSync(graph, 'import { h } from "./helpers.js";\nexport default [h];\n');
    writeFileSync(helpers, "export const h = {\n  a: 1\n  b: 2,\n};\n");
    const imported = new SyntaxError("Unexpected identifier 'b'");
    expect(syntaxErrorAt(imported, () => [graph, helpers])).toEqual({
      file: helpers,
      line: 3,
      column: 3,
      message: "Unexpected identifier 'b'",
      text: "  b: 2,",
    });
  });

  it("reads tsx's location (its column from 0) and a required JSON file's position", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-syntax-"));
    dirs.push(dir);
    const data = join(dir, "data.json");
    writeFileSync(data, '{\n  "a": 1,\n}\n');
    const transform = new Error(
      `Transform failed with 1 error:\n${data}:2:9: ERROR: JSON does not support trailing commas`,
    );
    expect(syntaxErrorAt(transform, () => [])).toEqual({
      file: data,
      line: 2,
      column: 10,
      message: "JSON does not support trailing commas",
      text: '  "a": 1,',
    });
    const required = new SyntaxError(
      `${data}: Expected double-quoted property name in JSON at position 12`,
    );
    expect(syntaxErrorAt(required, () => [])).toMatchObject({ line: 3, column: 1, text: "}" });
  });
});
