/**
 * The examples users copy compile against the package as it is: every ```ts block of
 * README.md, and every `@example` in the TSDoc of baton's public exports (what an editor shows
 * on hover), are type-checked with the project's strict settings and, as a user's project may
 * set it, `exactOptionalPropertyTypes` (README, "Embedding", promises both), `import … from "baton"`
 * resolving to src/index.ts. README examples import what they use, as a user's file must; a
 * TSDoc example may use any export of baton without importing it, and names it takes as given
 * (an `engine`, a `clock`, a placeholder such as `loadModel()`) are declared from GIVENS below.
 * The examples of an exported interface's or class's members (an option, a method) count too.
 * A block that starts with a `// NAME.ts` line is that file, beside the files the README named
 * before it (so `graph.ts` can import `./jobs.ts`). Every export must carry a doc comment, and
 * every exported function, class and constant an example.
 */
import { dirname, join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";

/** What examples may take as given: a name → its declaration. */
const GIVENS: Record<string, string> = {
  engine: 'declare const engine: import("baton").Engine;',
  graph: 'declare const graph: import("baton").JobSpec[];',
  jobs: 'declare const jobs: import("baton").JobModule;',
  files: 'declare const files: import("baton").Files;',
  clock: 'declare const clock: import("baton").Clock;',
  procs: 'declare const procs: import("baton").Procs;',
  paths: 'declare const paths: import("baton").DeploymentPaths;',
  lease: 'declare const lease: import("baton").Lease;',
  rank: 'declare const rank: import("baton").ManifestRank;',
  cancel: 'declare const cancel: import("baton").Cancel;',
  coordinator: 'declare const coordinator: import("xstate").AnyActorRef;',
  target: 'declare const target: import("baton").SshTarget;',
  host: 'declare const host: import("baton").SshHost;',
  group: 'declare const group: import("baton").RankGroup;',
  link: 'declare const link: import("baton").Link;',
  text: "declare const text: string;",
  deployment: "declare const deployment: string;",
  stateDir: "declare const stateDir: string;",
  token: "declare const token: string;",
  logFile: "declare const logFile: string;",
  rankEnv: "declare const rankEnv: Record<string, string>;",
  wanted: "declare const wanted: number;",
  epoch: "declare const epoch: number;",
  inFlight: "declare const inFlight: string[];",
  state: "declare const state: object;",
  serving: "declare let serving: boolean;",
  running: "declare let running: boolean;",
  loadModel: "declare function loadModel(): Promise<void>;",
  serveBatch: "declare function serveBatch(): Promise<void>;",
  serveOneBatch: "declare function serveOneBatch(): Promise<void>;",
  doOneStep: "declare function doOneStep(): Promise<void>;",
  abort: "declare function abort(id: string): void;",
  abortRequest: "declare function abortRequest(id: string): void;",
  abortMatching: 'declare function abortMatching(cancel: import("baton").Cancel): void;',
  shutDown: "declare function shutDown(reason: string): void;",
  reap: "declare function reap(deployment: string): void;",
  perform: 'declare function perform(effect: import("baton").TeardownEffect): void;',
  probe: "declare function probe(): Promise<boolean>;",
  spawnRanks: "declare function spawnRanks(): void;",
  tearDownRanks: "declare function tearDownRanks(): void;",
  createActor: 'import { createActor } from "xstate";',
  createMachine: 'import { createMachine } from "xstate";',
  readFile: 'import { readFile } from "node:fs/promises";',
};

interface Example {
  /** Where it comes from, for failure messages. */
  origin: string;
  /** Its virtual path (under test/docExamples/, never written). */
  path: string;
  code: string;
  /** Other files beside it (README files named before it). */
  beside: Map<string, string>;
  /** Whether it may use baton's exports without importing them (TSDoc examples). */
  autoImport: boolean;
}

const OPTIONS: ts.CompilerOptions = {
  ...ts.parseJsonConfigFileContent(
    ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile).config,
    ts.sys,
    ROOT,
  ).options,
  paths: { baton: [join(ROOT, "src", "index.ts")] },
  exactOptionalPropertyTypes: true,
};
const HERE = join(ROOT, "test", "docExamples");

/** Type-checks the examples, each with its prefix; the diagnostics of each example's own file. */
function check(examples: Example[], prefix: (example: Example) => string): Map<Example, string[]> {
  const virtual = new Map<string, string>();
  for (const example of examples) {
    for (const [path, code] of example.beside) virtual.set(path, code);
    virtual.set(example.path, `${prefix(example)}${example.code}`);
  }
  const host = ts.createCompilerHost(OPTIONS);
  const { fileExists, directoryExists, readFile, getSourceFile } = host;
  const dirs = new Set([...virtual.keys()].map((path) => dirname(path)));
  host.fileExists = (path) => virtual.has(path) || fileExists.call(host, path);
  host.directoryExists = (path) => dirs.has(path) || directoryExists!.call(host, path);
  host.readFile = (path) => virtual.get(path) ?? readFile.call(host, path);
  host.getSourceFile = (path, language, ...rest) => {
    const code = virtual.get(path);
    return code === undefined
      ? getSourceFile.call(host, path, language, ...rest)
      : ts.createSourceFile(path, code, language);
  };
  const program = ts.createProgram(
    examples.map((example) => example.path),
    OPTIONS,
    host,
  );
  return new Map(
    examples.map((example) => {
      const file = program.getSourceFile(example.path)!;
      const diagnostics = [
        ...program.getSyntacticDiagnostics(file),
        ...program.getSemanticDiagnostics(file),
      ];
      return [
        example,
        diagnostics.map(
          (diagnostic) =>
            `TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`,
        ),
      ];
    }),
  );
}

type Exports = Map<
  string,
  {
    value: boolean;
    documented: boolean;
    examples: string[];
    /** The `@example` blocks of its members (an option, a method, a static one), by member. */
    memberExamples: [member: string, code: string][];
    properties: string[];
    codes: string[];
  }
>;

/** The code of each `@example` of a symbol's doc comment. */
function examplesOf(symbol: ts.Symbol, checker: ts.TypeChecker): string[] {
  return symbol
    .getJsDocTags(checker)
    .filter((tag) => tag.name === "example")
    .map((tag) => ts.displayPartsToString(tag.text))
    .map((text) => /```ts\n([\s\S]*?)```/.exec(text)?.[1] ?? text);
}

/**
 * The public exports of baton: name → whether it is a value, whether it has a doc comment, its
 * `@example` blocks, (for an interface) the names of its properties, and (for an error class)
 * the codes its `code` can be.
 */
function publicExports(): Exports {
  const index = join(ROOT, "src", "index.ts");
  const program = ts.createProgram([index], OPTIONS);
  const checker = program.getTypeChecker();
  const exports: Exports = new Map();
  for (const symbol of checker.getExportsOfModule(
    checker.getSymbolAtLocation(program.getSourceFile(index)!)!,
  )) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const examples = examplesOf(target, checker);
    const members =
      target.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.Class)
        ? [
            ...checker.getDeclaredTypeOfSymbol(target).getProperties(),
            ...(target.flags & ts.SymbolFlags.Class
              ? checker.getTypeOfSymbol(target).getProperties()
              : []),
          ]
        : [];
    const memberExamples = members.flatMap((member) =>
      examplesOf(member, checker).map((code): [string, string] => [member.name, code]),
    );
    const properties =
      target.flags & ts.SymbolFlags.Interface
        ? checker
            .getDeclaredTypeOfSymbol(target)
            .getProperties()
            .map((property) => property.name)
        : [];
    const code =
      target.flags & ts.SymbolFlags.Class
        ? checker.getDeclaredTypeOfSymbol(target).getProperty("code")
        : undefined;
    const codeType = code && checker.getTypeOfSymbol(code);
    const codes = (codeType?.isUnion() ? codeType.types : codeType ? [codeType] : []).flatMap(
      (type) => (type.isStringLiteral() ? [type.value] : []),
    );
    exports.set(symbol.name, {
      value: (target.flags & ts.SymbolFlags.Value) !== 0,
      documented: ts.displayPartsToString(target.getDocumentationComment(checker)).trim() !== "",
      examples,
      memberExamples,
      properties,
      codes,
    });
  }
  return exports;
}

/** The text of every source file under src/. */
function sources(): string[] {
  return ts.sys.readDirectory(join(ROOT, "src"), [".ts"]).map((path) => ts.sys.readFile(path)!);
}

/** The codes a source gives `BatonError` itself (`new BatonError("CODE", …)`). */
function batonErrorCodes(code: string): string[] {
  return [...code.matchAll(/new BatonError\(\s*"(\w+)"/g)].map(([, name]) => name!);
}

function readmeExamples(): Example[] {
  const readme = ts.sys.readFile(join(ROOT, "README.md"))!;
  const named = new Map<string, string>();
  const examples: Example[] = [];
  for (const [index, match] of [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].entries()) {
    const code = match[1]!;
    const line = readme.slice(0, match.index).split("\n").length + 1;
    const name = /^\/\/ (\w+\.ts)\n/.exec(code)?.[1];
    const dir = join(HERE, `readme-${index + 1}`);
    const beside = new Map([...named].map(([file, text]) => [join(dir, file), text]));
    const path = join(dir, name ?? "example.ts");
    beside.delete(path);
    examples.push({ origin: `README.md:${line}`, path, code, beside, autoImport: false });
    if (name) named.set(name, code);
  }
  return examples;
}

function tsdocExamples(exports: Exports): Example[] {
  return [...exports].flatMap(([name, { examples, memberExamples }]) => [
    ...examples.map((code, index) => ({
      origin: `the @example of ${name}${examples.length > 1 ? ` (#${index + 1})` : ""}`,
      path: join(HERE, "tsdoc", `${name}-${index + 1}.ts`),
      code,
      beside: new Map(),
      autoImport: true,
    })),
    ...memberExamples.map(([member, code], index) => ({
      origin: `the @example of ${name}.${member}`,
      path: join(HERE, "tsdoc", `${name}.${member}-${index + 1}.ts`),
      code,
      beside: new Map(),
      autoImport: true,
    })),
  ]);
}

const MISSING = /^TS(?:2304|2552|18004): .*?'(\w+)'/;

/** Compiles the examples with what each takes as given; the errors left, by origin. */
function compileExamples(examples: Example[], exports: Exports) {
  const first = check(examples, () => "export {};\n");
  const prefixes = new Map<Example, string>();
  const errors: Record<string, string[]> = {};
  for (const [example, messages] of first) {
    const names = new Set(messages.flatMap((message) => MISSING.exec(message)?.[1] ?? []));
    const values: string[] = [];
    const types: string[] = [];
    const given: string[] = [];
    for (const name of names) {
      const exported = example.autoImport ? exports.get(name) : undefined;
      if (exported) (exported.value ? values : types).push(name);
      else if (GIVENS[name] !== undefined) given.push(GIVENS[name]);
    }
    prefixes.set(
      example,
      [
        "export {};",
        values.length > 0 ? `import { ${values.join(", ")} } from "baton";` : "",
        types.length > 0 ? `import type { ${types.join(", ")} } from "baton";` : "",
        ...given,
        "",
      ].join("\n"),
    );
  }
  for (const [example, messages] of check(examples, (example) => prefixes.get(example)!)) {
    if (messages.length > 0) errors[example.origin] = messages;
  }
  return errors;
}

const SELF_CHECK: Example = {
  origin: "a test's own example",
  path: join(HERE, "self", "own.ts"),
  code: 'const engine = createEngine({ jobs: {} });\nawait engine.run([job("x")]);\nawait loadModel();\n',
  beside: new Map(),
  autoImport: true,
};

describe("documentation examples", () => {
  const exports = publicExports();
  const readme = readmeExamples();
  const tsdoc = tsdocExamples(exports);
  const unimported: Example = {
    ...SELF_CHECK,
    origin: "the same, unimported",
    path: join(HERE, "self", "unimported.ts"),
    autoImport: false,
  };
  // One compilation for all of them: loading baton's and its dependencies' types is the cost.
  const errors = compileExamples([...readme, ...tsdoc, SELF_CHECK, unimported], exports);
  const errorsOf = (examples: Example[]) =>
    Object.fromEntries(
      examples.flatMap(({ origin }) => (errors[origin] ? [[origin, errors[origin]]] : [])),
    );

  it("every ts block of README.md compiles against baton as a user's file", () => {
    expect(readme.length).toBeGreaterThan(5);
    expect(errorsOf(readme)).toEqual({});
  });

  it("every @example of a public export compiles against baton", () => {
    expect(tsdoc.length).toBeGreaterThan(50);
    expect(errorsOf(tsdoc)).toEqual({});
  });

  it("every exported function, class and constant has an @example", () => {
    const without = [...exports]
      .filter(([, { value, examples }]) => value && examples.length === 0)
      .map(([name]) => name);
    expect(without).toEqual([]);
  });

  it("every export has a doc comment, which an editor shows on hover", () => {
    const without = [...exports].filter(([, { documented }]) => !documented).map(([name]) => name);
    expect(without).toEqual([]);
  });

  it("README's Embedding section names every createEngine option", () => {
    const readme = ts.sys.readFile(join(ROOT, "README.md"))!;
    const embedding = readme.slice(
      readme.indexOf("\n## Embedding\n"),
      readme.indexOf("\n## The CLI\n"),
    );
    const options = exports.get("EngineOptions")!.properties;
    expect(options).toContain("jobs");
    expect(options.filter((option) => !embedding.includes(`\`${option}\``))).toEqual([]);
  });

  it("README's Embedding section lists every error class with the codes its code can be", () => {
    const readme = ts.sys.readFile(join(ROOT, "README.md"))!;
    const embedding = readme.slice(
      readme.indexOf("\n## Embedding\n"),
      readme.indexOf("\n## The CLI\n"),
    );
    const table = Object.fromEntries(
      [...embedding.matchAll(/^\| `(\w+Error)` +\| (.*?) +\|$/gm)].map(([, name, codes]) => [
        name,
        codes!
          .split(", ")
          .map((code) => code.replaceAll("`", ""))
          .sort(),
      ]),
    );
    const classes = Object.fromEntries(
      [...exports].flatMap(([name, { codes }]) =>
        codes.length > 0 ? [[name, [...codes].sort()]] : [],
      ),
    );
    expect(Object.keys(classes)).toContain("StoreError");
    // BatonError's own code is any string: its codes are those `new BatonError("…")` gives.
    classes.BatonError = [...new Set(sources().flatMap((code) => batonErrorCodes(code)))].sort();
    expect(classes.BatonError).toContain("ABORTED");
    expect(table).toEqual(classes);
  });

  it("declares a name as given only where the example uses it without declaring it, and imports baton's only in TSDoc", () => {
    expect(errorsOf([SELF_CHECK])).toEqual({});
    expect(errorsOf([unimported])).toEqual({
      [unimported.origin]: [
        "TS2304: Cannot find name 'createEngine'.",
        "TS2304: Cannot find name 'job'.",
      ],
    });
  });
});
