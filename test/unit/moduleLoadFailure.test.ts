/**
 * `moduleLoadFailure`: what a module that did not load is told, from the error its import
 * threw, shaped as Node and tsx throw it (test/e2e/moduleLoadErrors.test.ts runs the command
 * on real modules of each kind of failure).
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { GraphError, ModuleLoadError } from "../../src/errors.ts";
import { moduleLoadFailure } from "../../src/runtime/moduleLoadFailure.ts";
import { fileTree } from "../fixtures/fileTree.ts";
import { TSX_LOADER } from "../fixtures/tsxLoader.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const tree = (files: Record<string, string>) => fileTree(files, dirs);

/** An error as Node's loader throws it: `message`, and its `code`. */
const nodeError = (message: string, code: string) => Object.assign(new Error(message), { code });

describe("moduleLoadFailure", () => {
  it("names a syntax error in an imported ES module, which Node's error places nowhere, with the line", () => {
    const dir = tree({
      "graph.mjs": 'import { h } from "./lib/helpers.js";\nexport default [h];\n',
      "lib/helpers.js": "export const h = {\n  a: 1\n  b: 2,\n};\n",
      "package.json": '{"type": "module"}',
    });
    const error = moduleLoadFailure(
      new SyntaxError("Unexpected identifier 'b'"),
      "graph.mjs",
      join(dir, "graph.mjs"),
    );
    expect(error).toBeInstanceOf(ModuleLoadError);
    expect(error).toMatchObject({
      code: "MODULE_SYNTAX",
      at: { file: join(dir, "lib/helpers.js"), line: 3, column: 3 },
    });
    expect(error.message).toBe(
      `could not load graph.mjs: syntax error at ${dir}/lib/helpers.js:3:3: Unexpected identifier 'b'\n  3 |   b: 2,\n    |   ^`,
    );
  });

  it("names a JSON file that does not parse, imported (tsx) or required", () => {
    const dir = tree({ "data.json": '{\n  "a": 1,\n}\n' });
    const data = join(dir, "data.json");
    const imported = new Error(
      `Transform failed with 1 error:\n${data}:2:8: ERROR: JSON does not support trailing commas`,
    );
    expect(moduleLoadFailure(imported, "graph.ts", join(dir, "graph.ts")).message).toBe(
      `could not load graph.ts: syntax error at ${data}:2:9: JSON does not support trailing commas\n  2 |   "a": 1,\n    |         ^`,
    );
    const required = new SyntaxError(
      `${data}: Expected double-quoted property name in JSON at position 12`,
    );
    expect(moduleLoadFailure(required, "graph.ts", join(dir, "graph.ts")).message).toBe(
      `could not load graph.ts: syntax error at ${data}:3:1: Expected double-quoted property name\n  3 | }\n    | ^`,
    );
  });

  it("names the module that threw or whose top-level await rejected, says what it said and how to see its stack", () => {
    const rejected = new Error("the config server is down");
    rejected.stack = `Error: the config server is down\n    at file:///home/me/helpers.mjs:1:22\n    at ModuleJob.run (node:internal/modules/esm/module_job:325:25)`;
    const error = moduleLoadFailure(rejected, "graph.ts", "/home/me/graph.ts");
    expect(error).toMatchObject({
      code: "MODULE_THREW",
      at: { file: "/home/me/helpers.mjs", line: 1, column: 22 },
      cause: rejected,
    });
    expect(error.message).toBe(
      "could not load graph.ts: /home/me/helpers.mjs:1:22 threw while loading: the config server is down; fix its top-level code (for its stack: node /home/me/helpers.mjs)",
    );
    // A value that is no error has no stack: the module given is named, to run alone.
    expect(moduleLoadFailure("no licence", "graph.ts", "/home/me/graph.ts").message).toBe(
      `could not load graph.ts: it threw while loading: no licence; fix its top-level code (for its stack: node --import ${TSX_LOADER} /home/me/graph.ts)`,
    );
  });

  it("adds no generic way out to baton's own error, which says what to do, of this copy of baton or another", () => {
    /** The class of the other copy a module imported: another file, so another class. */
    class BatonError extends Error {}
    for (const thrown of [
      new GraphError("BAD_JOB", 'job("a", …): unknown option retires; did you mean retries?'),
      new BatonError('job("a", …): unknown option retires; did you mean retries?'),
    ]) {
      thrown.stack = `${thrown.name}: ${thrown.message}\n    at file:///home/me/graph.ts:3:17`;
      const error = moduleLoadFailure(thrown, "graph.ts", "/home/me/graph.ts");
      expect(error.code).toBe("MODULE_THREW");
      expect(error.message).toBe(
        'could not load graph.ts: /home/me/graph.ts:3:17 threw while loading: job("a", …): unknown option retires; did you mean retries?',
      );
    }
  });

  it("names an import of a name the module imported does not export, which Node calls a syntax error, with what to do", () => {
    const dir = tree({ "x.js": "export const g = 1;\n", "y.cjs": "exports.g = 1;\n" });
    const graph = join(dir, "graph.mjs");
    /** Node's link error for `importing` (line 1 of graph.mjs), its caret under `column`. */
    const linkError = (message: string, importing: string, column: number) => {
      writeFileSync(graph, `${importing}\nexport default [];\n`);
      const error = new SyntaxError(message);
      error.stack = `${pathToFileURL(graph)}:1\n${importing}\n${" ".repeat(column - 1)}^\nSyntaxError: ${message}\n    at ModuleJob._instantiate (node:internal/modules/esm/module_job:213:21)`;
      return moduleLoadFailure(error, "graph.mjs", graph);
    };
    const named = linkError(
      "The requested module './x.js' does not provide an export named 'h'",
      'import { g, h } from "./x.js";',
      13,
    );
    expect(named).toMatchObject({
      code: "MODULE_MISSING_EXPORT",
      at: { file: graph, line: 1, column: 13 },
    });
    expect(named.message).toBe(
      `could not load graph.mjs: missing export at ${graph}:1:13: h is imported from "./x.js" (${dir}/x.js), which does not export it: export it there, or import a name that module exports\n  1 | import { g, h } from "./x.js";\n    |             ^`,
    );
    expect(
      linkError(
        "The requested module './x.js' does not provide an export named 'default'",
        'import x from "./x.js";',
        8,
      ).message,
    ).toContain(
      `: the default export of "./x.js" (${dir}/x.js) is imported, and it has none: add export default there, or import a name that module exports\n`,
    );
    expect(
      linkError(
        "The requested module 'some-package' does not provide an export named 'h'",
        'import { h } from "some-package";',
        10,
      ).message,
    ).toContain(
      `: h is imported from "some-package", which does not export it: import a name it exports (check the package's installed version and its documentation)\n`,
    );
    expect(
      linkError(
        "Named export 'h' not found. The requested module './y.cjs' is a CommonJS module, which may not support all module.exports as named exports.\nCommonJS modules can always be imported via the default export, for example using:\n\nimport pkg from './y.cjs';\nconst { h } = pkg;\n",
        'import { h } from "./y.cjs";',
        10,
      ).message,
    ).toContain(
      `: h is imported from "./y.cjs" (${dir}/y.cjs), a CommonJS module in which Node finds no export of that name: import its default export and take h from that (import m from "./y.cjs"; const { h } = m)\n`,
    );
  });

  it("says which file imports a package that is not installed, and where to install it", () => {
    const dir = tree({ "package.json": "{}", "lib/helpers.ts": "" });
    const importer = join(dir, "lib/helpers.ts");
    const missing = nodeError(
      `Cannot find package '@scope/absent' imported from ${importer}`,
      "ERR_MODULE_NOT_FOUND",
    );
    const error = moduleLoadFailure(missing, "jobs.ts", join(dir, "jobs.ts"));
    expect(error).toMatchObject({ code: "MODULE_MISSING_IMPORT", at: { file: importer } });
    expect(error.message).toBe(
      `could not load jobs.ts: ${importer} imports the package @scope/absent, which is not installed: run npm install @scope/absent in ${dir}`,
    );
    // A typo of baton, or of a package the package.json lists: npm install would fetch another.
    const typos = tree({ "package.json": '{"devDependencies":{"lodash":"4"}}', "graph.ts": "" });
    for (const [name, meant] of [
      ["batn", "baton"],
      ["lodahs", "lodash"],
    ]) {
      const graph = join(typos, "graph.ts");
      const typo = nodeError(
        `Cannot find package '${name}' imported from ${graph}`,
        "ERR_MODULE_NOT_FOUND",
      );
      expect(moduleLoadFailure(typo, "graph.ts", graph).message).toBe(
        `could not load graph.ts: ${graph} imports the package ${name}, which is not installed: did you mean ${meant}? (if ${name} is another package, run npm install ${name} in ${typos})`,
      );
    }
    const required = Object.assign(
      nodeError(
        "Cannot find module 'lodash/fp'\nRequire stack:\n- /nowhere/h.cjs",
        "MODULE_NOT_FOUND",
      ),
      { requireStack: ["/nowhere/h.cjs"] },
    );
    // No package.json above it: the file's own folder.
    expect(moduleLoadFailure(required, "graph.ts", "/nowhere/graph.ts").message).toBe(
      "could not load graph.ts: /nowhere/h.cjs requires the package lodash, which is not installed: run npm install lodash in /nowhere",
    );
    const local = nodeError(
      "Cannot find module '/home/me/lib/x.js' imported from /home/me/graph.ts",
      "ERR_MODULE_NOT_FOUND",
    );
    expect(moduleLoadFailure(local, "graph.ts", "/home/me/graph.ts").message).toBe(
      "could not load graph.ts: /home/me/graph.ts imports /home/me/lib/x.js, which is not there; check the path",
    );
  });

  it("names a file of a close name where an imported or required file is not there", () => {
    const dir = tree({ "graph.ts": "", "lib/jobs.ts": "", "lib/helpers.cjs": "" });
    const graph = join(dir, "graph.ts");
    const imported = nodeError(
      `Cannot find module '${join(dir, "lib/jbos.ts")}' imported from ${graph}`,
      "ERR_MODULE_NOT_FOUND",
    );
    expect(moduleLoadFailure(imported, "graph.ts", graph).message).toBe(
      `could not load graph.ts: ${graph} imports ${join(dir, "lib/jbos.ts")}, which is not there; check the path; did you mean ${join(dir, "lib/jobs.ts")}?`,
    );
    // A require's specifier is relative to the file that requires it: the file meant is named
    // by its path.
    const required = Object.assign(
      nodeError(
        `Cannot find module './lib/helper.cjs'\nRequire stack:\n- ${graph}`,
        "MODULE_NOT_FOUND",
      ),
      { requireStack: [graph] },
    );
    expect(moduleLoadFailure(required, "graph.ts", graph).message).toBe(
      `could not load graph.ts: ${graph} requires ./lib/helper.cjs, which is not there; check the path; did you mean ${join(dir, "lib/helpers.cjs")}?`,
    );
  });

  it("says a file Node has no loader for is no module: the one given, or one it imports", () => {
    const given = nodeError(
      'Unknown file extension ".md" for /home/me/README.md',
      "ERR_UNKNOWN_FILE_EXTENSION",
    );
    const readme = moduleLoadFailure(given, "README.md", "/home/me/README.md");
    expect(readme.code).toBe("MODULE_LOAD");
    expect(readme.at).toEqual({ file: "/home/me/README.md" });
    expect(readme.message).toBe(
      "could not load README.md: it is a .md file, not a module: give a TypeScript (.ts, .mts, .cts) or JavaScript (.js, .mjs, .cjs) file",
    );
    const imported = nodeError(
      'Unknown file extension ".yaml" for /home/me/a.yaml',
      "ERR_UNKNOWN_FILE_EXTENSION",
    );
    const yaml = moduleLoadFailure(imported, "graph.ts", "/home/me/graph.ts");
    expect(yaml.at).toEqual({ file: "/home/me/a.yaml" });
    expect(yaml.message).toBe(
      "could not load graph.ts: it imports /home/me/a.yaml, a .yaml file, which is not a module: import TypeScript, JavaScript or JSON, or read the file with readFileSync",
    );
  });

  it("keeps Node's word for another failure of its loader", () => {
    const directory = nodeError(
      "Directory import '/home/me/lib' is not supported resolving ES modules imported from /home/me/graph.ts",
      "ERR_UNSUPPORTED_DIR_IMPORT",
    );
    const error = moduleLoadFailure(directory, "graph.ts", "/home/me/graph.ts");
    expect(error.code).toBe("MODULE_LOAD");
    expect(error.message).toMatch(
      /^could not load graph\.ts: Directory import '\/home\/me\/lib' is not supported/,
    );
  });
});
