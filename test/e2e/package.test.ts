/**
 * baton as a user's project gets it: a folder of the user's own with baton in its
 * node_modules (a link to this checkout, as `npm install ../baton` makes, or the files of the
 * tarball `npm pack` makes, as installing that tarball puts them). Plain JavaScript
 * imports the compiled package (dist/, built by `npm run build`, which `npm ci` and `npm test`
 * run); TypeScript graph and job modules that import "baton" run under `baton run`, in a
 * package of either module type or in a folder with no package.json at all, with or without
 * a result store. Every process a test starts is stopped by its pid when the test ends.
 */
import { spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { installPacked, removePackedTarball } from "../fixtures/packedInstall.ts";

const projects: string[] = [];

afterEach(() => stopBatons());
afterAll(() => {
  for (const dir of projects) rmSync(dir, { recursive: true, force: true });
  removePackedTarball();
});

/** A user's project folder with the given files and baton installed (linked), unless not. */
function project(files: Record<string, string>, installed = true): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-user-"));
  projects.push(dir);
  if (installed) {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(ROOT, join(dir, "node_modules", "baton"), "dir");
  }
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** Runs `node FILE ARGS` in `dir` (no loader: what plain JavaScript gets), stopped by pid if needed. */
function runNode(
  dir: string,
  file: string,
  ...args: string[]
): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [file, ...args], { cwd: dir });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  return new Promise((resolve) => {
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

const GRAPH = `import { job } from "baton";
export { default as jobs } from "./jobs.ts";
const parts = [1, 2, 3].map((n) => job("square", n));
export default [job("sum", null, { after: parts })];
`;

const JOBS = `import { defineJobs } from "baton";
export default defineJobs({
  square: (n: number) => n * n,
  sum: (_: null, ctx: { deps: Record<string, unknown> }) =>
    Object.values(ctx.deps).reduce((a, b) => (a as number) + (b as number), 0),
});
`;

describe("baton in a user's project", () => {
  it("imports from plain JavaScript: the compiled package, with its type declarations; the process exits on its own once its runs settled", async () => {
    expect(existsSync(join(ROOT, "dist", "index.js"))).toBe(true);
    expect(existsSync(join(ROOT, "dist", "index.d.ts"))).toBe(true);
    const dir = project({
      "main.mjs": `import { createEngine, job, simulate } from "baton";
const engine = createEngine({ jobs: { double: (n) => n * 2 } });
const answer = job("double", 21);
const result = await engine.run([answer]);
const sim = await simulate({ seed: 7, jobs: 10, workers: 2 });
console.log(JSON.stringify({ ok: result.ok, value: result.get(answer).value, sim: sim.ok }));
// Nothing of the engine's (a socket, a worker, a timer) keeps the process up: no close().
const settled = performance.now();
process.on("exit", () => console.log(performance.now() - settled < 2000 ? "exited" : "held"));
`,
    });
    const { code, out } = await runNode(dir, "main.mjs");
    expect(out).toBe(`${JSON.stringify({ ok: true, value: 42, sim: true })}\nexited\n`);
    expect(code).toBe(0);
  });

  it("works installed from the packed tarball: it holds the compiled entry, the command and its sources, and no tests; the example runs there and copied into the project", async () => {
    const dir = project(
      {
        "jobs.mjs": `import { isMainThread } from "node:worker_threads";
export default { double: (n) => n * 2, where: () => (isMainThread ? "main" : "handler thread") };
`,
        "main.mjs": `import { createEngine, job, localPool } from "baton";
import jobs from "./jobs.mjs";
const value = async (handlerThread, spec) => {
  const workers = localPool({ jobsModule: "jobs.mjs", count: 1, handlerThread });
  const result = await createEngine({ jobs, workers, batonDir: ".baton" }).run([spec]);
  return result.ok && result.get(spec).value;
};
console.log(JSON.stringify([await value(false, job("double", 21)), await value(true, job("where"))]));
`,
      },
      false,
    );
    // The note a check of this checkout's dist/ leaves (stat of its src/, no use elsewhere) is
    // there when the tarball, made at this first install of the file, is packed.
    const { distIsCurrent } = (await import(
      pathToFileURL(join(ROOT, "bin", "distCurrent.mjs")).href
    )) as { distIsCurrent(root: string, now: number): boolean };
    expect(distIsCurrent(ROOT, Date.now() + 10_000)).toBe(true);
    expect(existsSync(join(ROOT, "dist", "sources.checked"))).toBe(true);
    const paths = installPacked(dir);
    expect(paths.filter((path) => path.startsWith("dist/sources.checked"))).toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining([
        "dist/index.js",
        "dist/index.d.ts",
        // What tells the command its dist/ is current, so that it runs it (bin/distCurrent.mjs).
        "dist/sources.digest",
        "bin/baton.js",
        "bin/handlerThread.mjs",
        "src/index.ts",
      ]),
    );
    expect(paths.filter((path) => path.startsWith("test/"))).toEqual([]);
    // Nor the benchmarks, which the README's Benchmarks section says are in a clone only.
    expect(paths.filter((path) => path.startsWith("bench/"))).toEqual([]);
    expect(readFileSync(join(ROOT, "README.md"), "utf8")).toContain(
      "`bench/` is in a clone of baton's repository only, not in the installed package.",
    );
    // Not the store and logs of an example run in this checkout (`npm start` writes them).
    expect(paths.filter((path) => path.includes(".baton"))).toEqual([]);
    const { code, out } = await runNode(dir, "main.mjs");
    expect(out).toBe(`${JSON.stringify([42, "handler thread"])}\n`);
    expect(code).toBe(0);

    // The Quick start `baton help` names runs as written, its store here, not in node_modules.
    const baton = join("node_modules", "baton", "bin", "baton.js");
    const help = await runNode(dir, baton, "help");
    const quickStart = "run node_modules/baton/examples/pipeline.graph.ts --store .baton";
    expect(help.out).toContain(`\nQuick start: baton ${quickStart}\n`);
    // The README's Quick start gives a project that installed baton the same command.
    const readme = readFileSync(join(ROOT, "README.md"), "utf8").replace(/\s+/g, " ");
    expect(readme).toContain(`\`npx baton ${quickStart}\``);
    const example = await runNode(dir, baton, ...quickStart.split(" "), "--workers", "1");
    expect(example.out).toContain("✓ every job completed");
    expect(example.code).toBe(0);
    expect(existsSync(join(dir, ".baton", "results"))).toBe(true);
    expect(existsSync(join(dir, "node_modules", "baton", "examples", ".baton"))).toBe(false);

    // The example's modules copied into the project run there as they are: they import "baton".
    const copied = join(dir, "copied");
    mkdirSync(copied);
    writeFileSync(join(copied, "package.json"), JSON.stringify({ type: "module" }));
    for (const file of ["pipeline.graph.ts", "pipeline.jobs.ts"]) {
      cpSync(join(dir, "node_modules", "baton", "examples", file), join(copied, file));
    }
    const graph = join("copied", "pipeline.graph.ts");
    const mine = await runNode(dir, baton, "run", graph, "--in-process", "--no-store", "--json");
    expect(mine.code, mine.out).toBe(0);
    expect(JSON.parse(mine.out)).toMatchObject({ ok: true, counts: { completed: 55 } });
  });

  it("installed without its optional peer: import baton loads neither it nor pino-pretty, connectInspector says what to install, pretty lines still come", async () => {
    const dir = project(
      {
        "main.mjs": `import { createRequire } from "node:module";
import { connectInspector } from "baton";
const { createLogger } = await import("./node_modules/baton/dist/runtime/logger.js");
const cache = createRequire(import.meta.url).cache;
const pretty = () => Object.keys(cache).some((path) => path.includes("/pino-pretty/"));
const seen = { prettyOnImport: pretty() };
try {
  connectInspector("ws://127.0.0.1:9");
} catch (error) {
  seen.inspector = \`\${error.name} \${error.code}: \${error.message}\`;
}
createLogger({ level: "info", pretty: false }).info("plain");
seen.prettyForJson = pretty();
createLogger({ level: "info", pretty: true }).info("shown pretty");
seen.prettyForPretty = pretty();
console.log(\`seen \${JSON.stringify(seen)}\`);
`,
      },
      false,
    );
    installPacked(dir);
    expect(existsSync(join(dir, "node_modules", "@statelyai"))).toBe(false);
    const { code, out } = await runNode(dir, "main.mjs");
    const seen = JSON.parse(/^seen (.*)$/m.exec(out)?.[1] ?? "{}");
    expect(seen).toEqual({
      prettyOnImport: false,
      inspector:
        "ConfigError CONFIG: streaming to an inspector needs @statelyai/inspect, which baton leaves to you (an optional peer dependency): install it beside baton with npm install @statelyai/inspect",
      prettyForJson: false,
      prettyForPretty: true,
    });
    expect(out).toMatch(/"msg":"plain"/);
    expect(out).toMatch(/INFO.*: shown pretty/);
    expect(code).toBe(0);
    const baton = join("node_modules", "baton", "bin", "baton.js");
    const example = join("node_modules", "baton", "examples", "pipeline.graph.ts");
    expect(await runNode(dir, baton, "run", example, "--inspect", "ws://127.0.0.1:9")).toEqual({
      code: 2,
      out: `baton run: ${seen.inspector.replace(/^ConfigError CONFIG: /, "")} [CONFIG]\n`,
    });
  });

  it("type-checks a TypeScript program against the packed package under nodenext, bundler and node10 resolution, runs it, and maps its declarations to baton's sources", async () => {
    const dir = project(
      {
        "package.json": JSON.stringify({ type: "module" }),
        "jobs.ts": `import { defineJobs } from "baton";
export default defineJobs({ double: (n: number) => n * 2 });
`,
        "main.ts": `import { BatonError, createEngine, jobBuilder, localPool, type RunResult, StoreError } from "baton";
import jobs from "./jobs.js";

const job = jobBuilder(jobs);
const answer = job("double", 21);
// The worker process loads the job module's TypeScript source itself.
const workers = localPool({ jobsModule: "jobs.ts", count: 1 });
const engine = createEngine({ jobs, workers, batonDir: ".baton" });
// A run is a promise of its result, to the type checker too.
const runs: Promise<RunResult>[] = [engine.run([answer])];
const [result] = await Promise.all(runs);
const value: number | undefined = result?.get(answer).value;
const seen: string[] = [];
try {
  createEngine({ jobs, store: "" });
} catch (error) {
  if (error instanceof BatonError) seen.push(error.code);
}
try {
  await createEngine({ jobs, store: "main.ts" }).run([answer]);
} catch (error) {
  if (error instanceof StoreError && error.code === "STORE_NOT_DIRECTORY") seen.push(error.code);
  // @ts-expect-error: a StoreError's code is one of its own, so a mistyped one does not compile
  if (error instanceof StoreError && error.code === "STORE_NOT_A_DIRECTORY") seen.push("never");
}
console.log(JSON.stringify({ value, seen }));
`,
        "main.cjs": `const { job } = require("baton");
console.log(job("double", 1).kind);
`,
      },
      false,
    );
    installPacked(dir);
    // As most projects (and `tsc --init`) set it: the user's files are checked, not the libraries'.
    const base: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2022,
      strict: true,
      skipLibCheck: true,
      types: ["node"],
      typeRoots: [join(ROOT, "node_modules", "@types")],
    };
    const settings: Record<string, ts.CompilerOptions> = {
      nodenext: {
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        outDir: join(dir, "out"),
      },
      bundler: {
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        noEmit: true,
      },
      node10: {
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Node10,
        esModuleInterop: true,
        noEmit: true,
      },
    };
    // The three programs parse the same declaration files once.
    const host = ts.createCompilerHost(base);
    const parsed = new Map<string, ts.SourceFile | undefined>();
    const parse = host.getSourceFile;
    host.getSourceFile = (path, ...rest) => {
      if (!parsed.has(path)) parsed.set(path, parse.call(host, path, ...rest));
      return parsed.get(path);
    };
    const errors = Object.fromEntries(
      Object.entries(settings).map(([name, options]) => {
        const program = ts.createProgram([join(dir, "main.ts")], { ...base, ...options }, host);
        const emitted = program.emit();
        const diagnostics = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics];
        return [name, diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, " "))];
      }),
    );
    expect(errors).toEqual({ nodenext: [], bundler: [], node10: [] });
    const main = await runNode(dir, join("out", "main.js"));
    expect(main.out).toBe(
      `${JSON.stringify({ value: 42, seen: ["CONFIG", "STORE_NOT_DIRECTORY"] })}\n`,
    );
    expect(main.code).toBe(0);
    expect(await runNode(dir, "main.cjs")).toEqual({ code: 0, out: "double\n" });

    // An editor's "go to definition" on createEngine opens baton's TypeScript source, not a
    // .d.ts: each declaration file has a map (what tsserver follows) to a source in the package.
    const dist = join(dir, "node_modules", "baton", "dist");
    const declarations = (readdirSync(dist, { recursive: true }) as string[]).filter((file) =>
      file.endsWith(".d.ts"),
    );
    expect(declarations).toContain(join("runtime", "engine.d.ts"));
    const unmapped = declarations.filter((file) => {
      const map = ts.sys.readFile(join(dist, `${file}.map`));
      if (map === undefined) return true;
      const { sources } = JSON.parse(map) as { sources: string[] };
      return !sources.every((path) => existsSync(join(dist, dirname(file), path)));
    });
    expect(unmapped).toEqual([]);
  });

  it("type-checks a program under the strictest settings with skipLibCheck off: no error in baton's declarations, only in xstate's own", () => {
    const dir = project(
      {
        "package.json": JSON.stringify({ type: "module" }),
        "main.ts": `import * as baton from "baton";
import { createEngine, job, type EngineOptions } from "baton";

const options: EngineOptions = { jobs: { double: (n: number) => n * 2 } };
const result = await createEngine(options).run([job("double", 21)]);
console.log(result.ok, Object.keys(baton).length);
`,
        // Under exactOptionalPropertyTypes, an option declared \`x?: T\` refused a value that
        // may be undefined (\`store: process.env.STORE\`); each takes \`T | undefined\` now.
        "maybeUndefined.ts": `import {
  connectInspector, createEngine, DashboardServer, inProcessPool, job, launchGroup, localPool,
  nodeClock, nodeProcs, simulate, simulateSeeds, slurmPool, sshHost, tearDown, wsNet,
  type EngineOptions, type SshTarget, type TeardownTarget,
} from "baton";

export async function maybeUndefined(
  n: number | undefined,
  s: string | undefined,
  b: boolean | undefined,
  logger: EngineOptions["logger"],
  target: TeardownTarget,
  ssh: SshTarget,
): Promise<void> {
  const jobs = { double: (x: number) => x * 2 };
  const resources = { cpus: n, gpus: n, memory: n };
  const engine = createEngine({
    jobs, workers: n, store: s, batonDir: s, logsDir: s, keepLogs: n, cancelGraceMs: n,
    secretFile: s, failFast: b, force: b, listen: s, logger, inspect: undefined,
    onCoordinator: undefined, maxLost: n, throttle: undefined, leaseTimeoutMs: n,
    maxFrameBytes: n, progressIntervalMs: n, heartbeatMs: n, helloTimeoutMs: n,
    deadAfterMs: n, clock: undefined, entropy: undefined, net: undefined, files: undefined,
  });
  await engine.run([
    job("double", 21, {
      after: undefined, requires: resources, retries: n, timeoutMs: n, ranks: n,
      backoff: { initialMs: 100, factor: n, maxMs: n },
    }),
  ], { signal: undefined });
  createEngine({ jobs, workers: { count: n, resources } });
  createEngine({ jobs, workers: inProcessPool({ count: n, resources: undefined, restartBudget: n }) });
  createEngine({
    jobs,
    workers: localPool({
      jobsModule: "jobs.ts", count: n, resources: undefined, maxRestarts: n, windowMs: n,
      handlerThread: b, logLevel: undefined,
    }),
  });
  createEngine({
    jobs,
    workers: slurmPool({
      jobsModule: "jobs.ts", maxWorkers: n, partition: s, sbatchOptions: undefined, array: b,
      resources: undefined, connect: s, pollMs: n, commandTimeoutMs: n, graceMs: n,
      stopTimeoutMs: n, workerRestarts: n, unreachableMs: n, commands: undefined,
      clock: undefined, handlerThread: b, logLevel: undefined,
    }),
  });
  await simulate({
    seed: 1, jobs: n, workers: n, faults: undefined, until: n, plantedBugs: undefined,
    inspect: undefined, onEvent: undefined, onGroupProgress: undefined, onProgress: undefined,
    ranks: b, world: n,
  });
  const seeds = simulateSeeds(
    1, 4, { jobs: n, workers: n, until: n, ranks: b, world: n, modules: undefined },
    { threads: n, checkDeterminism: b, traces: b, onSeedEnded: undefined },
  );
  for await (const seed of seeds) console.log(seed.ok);
  nodeProcs().spawn({ argv: ["true"], env: undefined, cwd: s, logFile: s, newGroup: b, cgroup: s });
  await tearDown(target, { procs: nodeProcs(), clock: nodeClock(), logger }, { termGraceMs: n, pollMs: n });
  launchGroup({
    argv: ["true"], worldSize: 1, stateDir: s, name: s, env: undefined, operatorEnv: undefined,
    cwd: s, hosts: undefined, masterAddr: s, masterPort: n, contain: b, logger,
    inspect: undefined, plantedBugs: undefined, ports: { clock: undefined, procs: undefined },
    timeouts: { watchMs: n, loadTimeoutMs: n }, teardown: { termGraceMs: n, pollMs: n },
    remote: { ssh: undefined, stateDir: s, cwd: s, guardGraceMs: n },
  });
  sshHost(ssh, { configFile: s, timeoutMs: n, multiplex: b });
  wsNet({ connectTimeoutMs: n, closeTimeoutMs: n });
  await connectInspector("ws://127.0.0.1:8080", { logger, maxPending: n, closeTimeoutMs: n }).close();
  await (await DashboardServer.start({ port: n, maxUpdatesPerSecond: n, logger })).close();
}
`,
      },
      false,
    );
    installPacked(dir);
    const strictest: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2022,
      lib: ["lib.es2022.d.ts"],
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      noImplicitOverride: true,
      noImplicitReturns: true,
      noPropertyAccessFromIndexSignature: true,
      noFallthroughCasesInSwitch: true,
      noUnusedLocals: true,
      noUnusedParameters: true,
      allowUnreachableCode: false,
      allowUnusedLabels: false,
      verbatimModuleSyntax: true,
      noEmit: true,
      types: ["node"],
      typeRoots: [join(ROOT, "node_modules", "@types")],
    };
    const program = (skipLibCheck: boolean) =>
      ts.createProgram([join(dir, "main.ts"), join(dir, "maybeUndefined.ts")], {
        ...strictest,
        skipLibCheck,
      });
    const diagnostics = (checked: ts.Program) =>
      ts
        .getPreEmitDiagnostics(checked)
        .map((d) => `${d.file?.fileName}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`);
    const libChecked = program(false);
    // xstate 5's setup.d.ts fails exactOptionalPropertyTypes (README, "Embedding", says so).
    expect(
      diagnostics(libChecked).filter((line) => !line.includes("/node_modules/xstate/")),
    ).toEqual([]);
    expect(diagnostics(program(true))).toEqual([]);
    // The methods Run types by its events override none of its base's: as overrides of
    // EventEmitter's, run.d.ts compiled against the @types/node here (20) and failed with
    // TS2416 against 26's, which types them otherwise.
    const runDts = libChecked
      .getSourceFiles()
      .find((file) => file.fileName.endsWith("/node_modules/baton/dist/runtime/run.d.ts"));
    const run = runDts?.statements.find(
      (node): node is ts.ClassDeclaration =>
        ts.isClassDeclaration(node) && node.name?.text === "Run",
    );
    const checker = libChecked.getTypeChecker();
    const [base] = checker.getBaseTypes(checker.getTypeAtLocation(run!.name!) as ts.InterfaceType);
    const declared = run!.members.flatMap((member) =>
      member.name !== undefined && ts.isIdentifier(member.name) ? [member.name.text] : [],
    );
    expect(declared).toContain("emit");
    expect(declared.filter((name) => base!.getProperty(name) !== undefined)).toEqual([]);
  });

  it("simulates seeds on helper threads that load the compiled files", async () => {
    const compiled = (name: string) =>
      JSON.stringify(pathToFileURL(join(ROOT, "dist", "sim", name)).href);
    const dir = project({
      "seeds.mjs": `import { simulateSeeds } from "baton";
import { startSeedThread } from ${compiled("inSeedOrder.js")};
import { SeedClaims } from ${compiled("seedClaims.js")};
const seeds = [];
for await (const r of simulateSeeds(1, 6, { jobs: 5, workers: 2 }, { threads: 2, callingThread: false })) seeds.push(r.ok && r.seed);
const helper = startSeedThread({ simulation: { jobs: 5, workers: 2 }, checkDeterminism: false, traces: false }, new SeedClaims(9, 9));
const answer = await new Promise((resolve) => helper.once("message", resolve));
await helper.terminate();
console.log(JSON.stringify({ seeds, helper: [answer.type, answer.result.seed, answer.result.ok] }));
`,
    });
    const { code, out } = await runNode(dir, "seeds.mjs");
    expect(out).toBe(
      `${JSON.stringify({ seeds: [1, 2, 3, 4, 5, 6], helper: ["result", 9, true] })}\n`,
    );
    expect(code).toBe(0);
  });

  it.each([
    ["run under tsx", true],
    ["run by plain node", false],
  ])(
    "simulates a TypeScript graph of yours on helper threads of the packed package, %s",
    async (_, underTsx) => {
      const dir = project(
        {
          "package.json": JSON.stringify({ type: "module" }),
          "x.graph.ts": `import { job } from "baton";
const n: number = 3;
export default [job("square", n)];
`,
          "x.sim.ts": `import type { SimTools } from "baton";
export default ({ sleep }: SimTools) => ({
  square: async (n: number) => {
    await sleep(10);
    return n * n;
  },
});
`,
          "main.mjs": `import { simulateSeeds } from "baton";
const modules = { graph: "x.graph.ts", handlers: "x.sim.ts" };
const seeds = [];
// Every seed on a helper thread: one without tsx's hooks failed to load x.graph.ts.
for await (const r of simulateSeeds(1, 4, { modules, ranks: false }, { threads: 2, callingThread: false })) {
  seeds.push(r.ok && r.seed);
}
console.log(JSON.stringify(seeds));
`,
        },
        false,
      );
      installPacked(dir);
      const tsx = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
      const { code, out } = await (underTsx
        ? runNode(dir, tsx, "main.mjs")
        : runNode(dir, "main.mjs"));
      expect(out).toBe(`${JSON.stringify([1, 2, 3, 4])}\n`);
      expect(code).toBe(0);
    },
  );

  it.each([
    ["a folder with no package.json", undefined],
    ["a CommonJS package", "commonjs"],
    ["an ES module package", "module"],
  ])("runs TypeScript modules that import baton, in %s", async (_, type) => {
    const dir = project({
      "graph.ts": GRAPH,
      "jobs.ts": JOBS,
      ...(type !== undefined && { "package.json": JSON.stringify({ type }) }),
    });
    const run = startBaton(["run", "graph.ts", "--workers", "1", "--json"], { cwd: dir });
    const exit = await run.exit;
    expect(exit.stderr).toBe("");
    expect(exit.code).toBe(0);
    const result = JSON.parse(exit.stdout) as { jobs: { kind: string; value: unknown }[] };
    expect(result.jobs.find((j) => j.kind === "sum")?.value).toBe(14);
  });

  it("runs an ES module graph that imports baton without baton installed beside it, and says what to do for a CommonJS one", async () => {
    const files = { "graph.ts": GRAPH, "jobs.ts": JOBS };
    const esm = project({ ...files, "package.json": JSON.stringify({ type: "module" }) }, false);
    // One worker process: it loads the modules as the command does; a second shows no more.
    const args = ["run", "graph.ts", "--no-store", "--json", "--workers", "1"];
    const ran = await startBaton(args, { cwd: esm }).exit;
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);

    const commonJs = project(files, false);
    const refused = await startBaton(["run", "graph.ts", "--no-store"], { cwd: commonJs }).exit;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      'baton run: could not load graph.ts: it imports baton, which is not installed where it can find it; install it there (npm install /path/to/baton), or make its folder an ES module package: add "type": "module" to the package.json beside graph.ts (or create one holding {"type": "module"}) [MODULE_LOAD]\n',
    );
  });

  it("runs a hand-written CommonJS graph module with a TypeScript CommonJS job module (.cts), both requiring baton", async () => {
    const dir = project({
      "package.json": JSON.stringify({ type: "module" }),
      "graph.cjs": `const { job } = require("baton");
exports.default = [job("double", 3)];
`,
      "jobs.cts": `import { defineJobs } from "baton";
export default defineJobs({ double: (n: number) => n * 2 });
`,
    });
    const args = ["run", "graph.cjs", "--jobs", "jobs.cts", "--in-process", "--no-store"];
    const exit = await startBaton([...args, "--json"], { cwd: dir }).exit;
    expect(exit.stderr).toBe("");
    expect(exit.code).toBe(0);
    const result = JSON.parse(exit.stdout) as { jobs: { kind: string; value: unknown }[] };
    expect(result.jobs).toMatchObject([{ kind: "double", value: 6 }]);
  });

  it("keeps no results with --no-store, and refuses it beside --force", async () => {
    const dir = project({ "graph.ts": GRAPH, "jobs.ts": JOBS });
    // In this process: what is kept is the subject, not where the handlers ran.
    for (let run = 0; run < 2; run++) {
      const args = ["run", "graph.ts", "--no-store", "--json", "--in-process"];
      const exit = await startBaton(args, { cwd: dir }).exit;
      expect(exit.code).toBe(0);
      const result = JSON.parse(exit.stdout) as { counts: { completed: number; cached: number } };
      expect(result.counts).toMatchObject({ completed: 4, cached: 0 });
    }
    expect(existsSync(join(dir, ".baton", "results"))).toBe(false);
    expect(existsSync(join(dir, ".baton", "logs"))).toBe(true);
    // An empty --store (an unset variable) would have put the store's folders beside graph.ts.
    const [both, empty] = await Promise.all(
      [
        ["--no-store", "--force"],
        ["--store", ""],
      ].map((flags) => startBaton(["run", "graph.ts", ...flags], { cwd: dir }).exit),
    );
    expect(both!.code).toBe(2);
    expect(both!.stderr).toBe(
      "baton run: --no-store keeps no results, so it does not go with --force [CONFIG]\n",
    );
    expect(empty!.code).toBe(2);
    expect(empty!.stderr).toBe(
      "baton run: --store is empty: give it a value, or leave it out (baton run --help says what it takes) [CONFIG]\n",
    );
    expect(existsSync(join(dir, "results"))).toBe(false);
  });

  it("says how to see the stack of a graph module that throws as it loads with a command that works where baton was installed from a tarball", async () => {
    // A project without tsx of its own: `npx tsx FILE`, said until 7 December, was not there.
    const dir = project(
      {
        "graph.ts": `import { job } from "baton";
export const jobs = { a: () => 1 };
const dataDir: string | undefined = process.env.DATA_DIR;
if (dataDir === undefined) throw new Error("DATA_DIR is not set");
export default [job("a", dataDir)];
`,
      },
      false,
    );
    installPacked(dir);
    const baton = join("node_modules", "baton", "bin", "baton.js");
    const failed = await runNode(dir, baton, "run", "graph.ts", "--no-store");
    expect(failed.code).toBe(2);
    const hint = /\(for its stack: (node --import \S+ \S+)\) \[MODULE_THREW\]$/m.exec(
      failed.out,
    )?.[1];
    expect(hint, failed.out).toBeDefined();
    const [, ...args] = hint!.split(" ");
    const alone = await runNode(dir, ...(args as [string, ...string[]]));
    expect(alone.code).toBe(1);
    expect(alone.out).toContain("Error: DATA_DIR is not set");
    expect(alone.out).toMatch(new RegExp(`^\\s+at .*${join(dir, "graph.ts")}:4:\\d+`, "m"));
  });

  it("shares baton's classes with the command: a baton error a graph module throws is reported as one", async () => {
    const dir = project({
      "package.json": JSON.stringify({ type: "module" }),
      "graph.ts": `import { ConfigError } from "baton";
export default () => {
  throw new ConfigError("set SOURCE_DIR to the folder of documents to index");
};
`,
      "jobs.ts": JOBS,
    });
    const exit = await startBaton(["run", "graph.ts", "--jobs", "jobs.ts"], { cwd: dir }).exit;
    expect(exit.stderr).toBe(
      "baton run: set SOURCE_DIR to the folder of documents to index [CONFIG]\n",
    );
    expect(exit.code).toBe(2);
  });
});
