/**
 * A graph, job or simulation module that does not load, as `baton run`, `run --jobs`,
 * `worker` and `sim` say it: the file at fault (the module, or a file it imports), where in it
 * and what to do, in a few lines with no stack, and exit 2. Each case is one real child
 * process of bin/baton.js, stopped by its pid when its test ends; the other forms of each
 * failure (a JSON file, a rejected top-level await, an ES module's missing package) are
 * moduleLoadFailure's unit tests, where they cost no process.
 */
import { chmodSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, it } from "vitest";
import { ROOT, startOwnBaton } from "../fixtures/batonCli.ts";
import { fileTree } from "../fixtures/fileTree.ts";
import { TSX_LOADER } from "../fixtures/tsxLoader.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A folder holding `files` (path → text); an ES module package unless `commonJs`. */
function tree(files: Record<string, string>, commonJs = false): string {
  return fileTree(commonJs ? files : { ...files, "package.json": '{"type": "module"}\n' }, dirs);
}

/** A graph module of one job, handlers beside it, that imports `from` first. */
const graphImporting = (from: string) =>
  `import "${from}";\nexport const jobs = { a: () => 1 };\nexport default [{ kind: "a", input: 1 }];\n`;
/** A job module that imports `from` first. */
const jobsImporting = (from: string) => `import "${from}";\nexport default { a: () => 1 };\n`;
/** An object literal missing a comma on its line 3 (`  b: 2,`, column 3). */
const MISSING_COMMA = "export const h = {\n  a: 1\n  b: 2,\n};\n";
const GRAPH_ALONE = 'export default [{ kind: "a", input: 1 }];\n';
/** What Node's parser says of MISSING_COMMA, and what esbuild's (tsx's) says. */
const NODE_WORDS = "Unexpected identifier 'b'";
const ESBUILD_WORDS = 'Expected "}" but found "b"';

type Command = "run" | "run --jobs" | "worker" | "sim";

/** The args of `command` given the module at fault as `module` (in `dir`). */
function argsOf(command: Command, dir: string, module: string): string[] {
  const store = ["--store", join(dir, "store")];
  switch (command) {
    case "run":
      return ["run", join(dir, module), ...store];
    case "run --jobs":
      return ["run", join(dir, "graphAlone.ts"), "--jobs", join(dir, module), ...store];
    case "worker": {
      const secret = join(dir, "secret");
      writeFileSync(secret, `${"ab".repeat(32)}\n`);
      chmodSync(secret, 0o600);
      return [
        "worker",
        "--connect",
        "127.0.0.1:9",
        "--secret-file",
        secret,
        "--jobs",
        join(dir, module),
      ];
    }
    case "sim":
      return ["sim", join(dir, "graphAlone.ts"), "--handlers", join(dir, module), "--seed", "1"];
  }
}

describe.concurrent("a module that does not load", () => {
  it.for<[string, Command, Record<string, string>, boolean, (dir: string) => string]>([
    [
      "a CommonJS module's syntax error (which Node 20 also left unhandled: exit 1 and a stack)",
      "run",
      {
        "graph.ts": graphImporting("./helpers.cjs"),
        "helpers.cjs": "exports.h = {\n  a: 1\n  b: 2,\n};\n",
      },
      false,
      (dir) =>
        `could not load ${dir}/graph.ts: syntax error at ${dir}/helpers.cjs:3:3: Unexpected identifier 'b' [MODULE_SYNTAX]\n  3 |   b: 2,\n    |   ^`,
    ],
    [
      "an ES module's syntax error (which Node places nowhere)",
      "worker",
      { "jobs.ts": jobsImporting("./helpers.mjs"), "helpers.mjs": MISSING_COMMA },
      false,
      (dir) =>
        `could not load ${dir}/jobs.ts: syntax error at ${dir}/helpers.mjs:3:3: Unexpected identifier 'b' [MODULE_SYNTAX]\n  3 |   b: 2,\n    |   ^`,
    ],
    [
      "a .js file's syntax error in an ES module package (README's quote: Node's wording)",
      "run",
      { "graph.ts": graphImporting("./helpers.js"), "helpers.js": MISSING_COMMA },
      false,
      (dir) =>
        `could not load ${dir}/graph.ts: syntax error at ${dir}/helpers.js:3:3: ${NODE_WORDS} [MODULE_SYNTAX]\n  3 |   b: 2,\n    |   ^`,
    ],
    [
      "a .js file with import and export in a CommonJS package, which tsx compiles: esbuild's wording",
      "run",
      { "graph.ts": graphImporting("./helpers.js"), "helpers.js": MISSING_COMMA },
      true,
      (dir) =>
        `could not load ${dir}/graph.ts: syntax error at ${dir}/helpers.js:3:3: ${ESBUILD_WORDS} [MODULE_SYNTAX]\n  3 |   b: 2,\n    |   ^`,
    ],
    [
      "a TypeScript file's syntax error",
      "run --jobs",
      { "jobs.ts": jobsImporting("./helpers.ts"), "helpers.ts": MISSING_COMMA },
      false,
      (dir) =>
        `could not load ${dir}/jobs.ts: syntax error at ${dir}/helpers.ts:3:3: Expected "}" but found "b" [MODULE_SYNTAX]\n  3 |   b: 2,\n    |   ^`,
    ],
    [
      "a top-level throw",
      "sim",
      {
        "sim.ts": jobsImporting("./helpers.ts"),
        "helpers.ts": 'export const h = 1;\nthrow new Error("DATA_DIR is not set");\n',
      },
      false,
      (dir) =>
        `could not load ${dir}/sim.ts: ${dir}/helpers.ts:2:7 threw while loading: DATA_DIR is not set; fix its top-level code (for its stack: node --import ${TSX_LOADER} ${dir}/helpers.ts) [MODULE_THREW]`,
    ],
    [
      // baton's own frames come first in the stack: in a clone (or a project that installed
      // one, which npm links) they are no node_modules', and were named as the place.
      "a top-level call of baton's job() with an unknown option",
      "run",
      {
        "graph.ts": `import { job } from "baton";\nexport const jobs = { a: () => 1 };\nexport default [job("a", 1, { retires: 3 } as never)];\n`,
      },
      false,
      (dir) =>
        `could not load ${dir}/graph.ts: ${dir}/graph.ts:3:17 threw while loading: job("a", …): unknown option retires; it takes after, requires, retries, backoff, timeoutMs, ranks; did you mean retries? [MODULE_THREW]`,
    ],
    [
      "an import of a name the file imported does not export (which Node calls a syntax error)",
      "run --jobs",
      {
        "jobs.ts": 'import { h } from "./helpers.ts";\nexport default { a: () => h };\n',
        "helpers.ts": "export const g = 1;\n",
      },
      false,
      (dir) =>
        `could not load ${dir}/jobs.ts: missing export at ${dir}/jobs.ts:1:10: h is imported from "./helpers.ts" (${dir}/helpers.ts), which does not export it: export it there, or import a name that module exports [MODULE_MISSING_EXPORT]\n  1 | import { h } from "./helpers.ts";\n    |          ^`,
    ],
    [
      "a require of a package that is not installed (which Node 20 also left unhandled)",
      "run",
      {
        "graph.ts": graphImporting("./helpers.cjs"),
        "helpers.cjs": 'require("@baton-test/absent");\n',
      },
      false,
      (dir) =>
        `could not load ${dir}/graph.ts: ${dir}/helpers.cjs requires the package @baton-test/absent, which is not installed: run npm install @baton-test/absent in ${dir} [MODULE_MISSING_IMPORT]`,
    ],
  ])(
    "%s: %s names the file at fault and what to do, and exits 2",
    async ([, command, files, commonJs, says], { expect, onTestFinished }) => {
      const dir = tree({ ...files, "graphAlone.ts": GRAPH_ALONE }, commonJs);
      const module = Object.keys(files)[0]!;
      const exit = await startOwnBaton(onTestFinished, argsOf(command, dir, module)).exit;
      expect(exit.stderr).toBe(`baton ${command.split(" ")[0]}: ${says(dir)}\n`);
      expect(exit.code).toBe(2);
    },
  );

  it("is quoted in README.md in both parsers' words, each beside what it reads", ({ expect }) => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme).toContain(
      `syntax error at /home/me/lib/helpers.js:3:3: ${NODE_WORDS} [MODULE_SYNTAX]`,
    );
    expect(readme).toContain(`Node's (\`${NODE_WORDS}\`, as above)`);
    expect(readme).toContain(`esbuild's (\`${ESBUILD_WORDS}\`) for TypeScript`);
  });

  it.for<[Command, string, string[]]>([
    ["run", "graph.ts", []],
    // The module loads on the handler thread, where the cause is; only its code and message
    // cross back.
    ["worker", "jobs.ts", ["--handler-thread"]],
  ])(
    "shows what the module threw, with its stack, at --log-level debug: %s %s %s",
    async ([command, module, more], { expect, onTestFinished }) => {
      const dir = tree({
        [module]: graphImporting("./helpers.ts"),
        "helpers.ts": 'export const h = 1;\nthrow new Error("DATA_DIR is not set");\n',
      });
      const args = [...argsOf(command, dir, module), ...more, "--log-level", "debug"];
      const exit = await startOwnBaton(onTestFinished, args, { env: { NO_COLOR: "1" } }).exit;
      // A JSON log line (stderr is no terminal) holding the cause's stack.
      expect(exit.stderr).toContain(`(${dir}/helpers.ts:2:7)\\n`);
      expect(exit.stderr.trimEnd().split("\n").at(-1)).toMatch(
        /threw while loading: DATA_DIR is not set; .* \[MODULE_THREW\]$/,
      );
      expect(exit.code).toBe(2);
    },
  );
});
