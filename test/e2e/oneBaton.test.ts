/**
 * A user's TypeScript modules that `import "baton"` get the very copy of baton the `baton`
 * command runs, on every thread that loads them: the command's own (`baton run --in-process`),
 * a worker process's, its handler thread (`--handler-thread`), and the helper threads of
 * `baton sim`. A job handler asks baton for an error (`ctx.progress` refuses a negative count
 * with a `ConfigError`, thrown by the command's copy on that thread) and says whether it is
 * the `ConfigError` its module imported. The command runs from a packed install, from a clone
 * whose dist/ is current (compiled: the user's modules alone go through tsx), from a clone
 * whose dist/ is not (the sources), and from a clone beside a project with another baton
 * installed; and a program of yours run by plain `node` hands the modules to `simulateSeeds`.
 * From each, the Quick start example (which imports baton's sources by a relative path) runs,
 * and so does `baton sim` of drawn graphs on 2 threads.
 * Every process a test starts is stopped by its pid when the test ends.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, startOwnBaton } from "../fixtures/batonCli.ts";
import { copyCheckout, stampDist } from "../fixtures/checkoutCopy.ts";
import { installPacked, removePackedTarball } from "../fixtures/packedInstall.ts";

const RECORDER = join(ROOT, "test/fixtures/loadedModules.mjs");

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  removePackedTarball();
});

const FILES = {
  "package.json": JSON.stringify({ type: "module" }),
  "graph.ts": `import { job } from "baton";
export { default as jobs } from "./jobs.ts";
export default [job("probe", null)];
`,
  "jobs.ts": `import { isMainThread } from "node:worker_threads";
import { ConfigError, type JobContext } from "baton";

/** Which thread this is, and whether the error baton throws on it is this module's ConfigError. */
export function probe(ctx: JobContext): string {
  let verdict = "no error";
  try {
    ctx.progress({ done: -1 });
  } catch (error) {
    verdict = error instanceof ConfigError ? "one ConfigError" : \`another \${(error as Error).name}\`;
  }
  return \`\${isMainThread ? "main thread" : "its own thread"}: \${verdict}\`;
}

export default { probe: (_: null, ctx: JobContext) => probe(ctx) };
`,
  "sim.ts": `import { appendFileSync, readFileSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import type { JobContext } from "baton";
import { probe } from "./jobs.ts";

const pause = new Int32Array(new SharedArrayBuffer(4));

export default {
  probe: (_: null, ctx: JobContext) => {
    const seen = probe(ctx);
    appendFileSync(process.env.PROBE_FILE!, \`\${seen}\\n\`);
    // The calling thread runs seeds from the first while the helper loads: its probe waits
    // for the helper's, so that the helper takes the other seed.
    for (let waits = 0; isMainThread && !readFileSync(process.env.PROBE_FILE!, "utf8").includes("its own thread"); waits++) {
      if (waits === 3_000) throw new Error("no helper thread ran a probe within a minute");
      Atomics.wait(pause, 0, 0, 20);
    }
    return seen;
  },
};
`,
};

/** A user's project folder with FILES. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-one-"));
  folders.push(dir);
  for (const [name, text] of Object.entries(FILES)) writeFileSync(join(dir, name), text);
  return dir;
}

/** A copy of this checkout, its dist/ stamped current or not. */
function clone(current: boolean): string {
  const root = copyCheckout();
  folders.push(root);
  if (current) stampDist(root);
  return root;
}

interface Setup {
  /** The project the command runs in, and the baton whose command runs. */
  dir: string;
  root: string;
  compiled: boolean;
}

const SETUPS: Record<string, () => Setup> = {
  "installed from the packed tarball": () => {
    const dir = project();
    installPacked(dir);
    return { dir, root: join(dir, "node_modules", "baton"), compiled: true };
  },
  "a clone with a current dist/, in a project without baton installed": () => ({
    dir: project(),
    root: clone(true),
    compiled: true,
  }),
  "a clone whose dist/ is not current, in a project without baton installed": () => ({
    dir: project(),
    root: clone(false),
    compiled: false,
  }),
  "a clone with a current dist/, in a project with another baton installed": () => {
    const dir = project();
    installPacked(dir);
    return { dir, root: clone(true), compiled: true };
  },
};

type OnTestFinished = (hook: () => void) => void;

/** The value of the probe job of `baton run graph.ts …` (as `--json` gives it). */
async function probed(
  onTestFinished: OnTestFinished,
  setup: Setup,
  ...args: string[]
): Promise<unknown> {
  const exit = await startOwnBaton(
    onTestFinished,
    ["run", "graph.ts", "--no-store", "--json", ...args],
    { root: setup.root, cwd: setup.dir },
  ).exit;
  expect(exit.stderr, args.join(" ")).toBe("");
  expect(exit.code).toBe(0);
  return (JSON.parse(exit.stdout) as { jobs: { value: unknown }[] }).jobs[0]?.value;
}

/**
 * A test's limit: side by side, the file takes 32–36 s on an idle machine, and one test took
 * over 60 s (vitest's default) under a load of 15.
 */
const TEST_MS = 120_000;

/**
 * Side by side: each test starts its commands one after another, each mostly a process loading
 * modules, and test files run one at a time, which left CI's second core idle.
 */
describe.concurrent("a user's modules get the baton the command runs", () => {
  for (const [name, make] of Object.entries(SETUPS)) {
    it(
      `${name}: on the command's thread, a worker's, its handler thread and sim's threads`,
      async ({ expect, onTestFinished }) => {
        const setup = make();
        const record = join(setup.dir, "loaded.txt");
        writeFileSync(record, "");
        const exit = await startOwnBaton(
          onTestFinished,
          ["run", "graph.ts", "--no-store", "--json", "--in-process"],
          {
            root: setup.root,
            cwd: setup.dir,
            env: { NODE_OPTIONS: `--import=${RECORDER}`, BATON_LOADED_MODULES: record },
          },
        ).exit;
        expect(exit.stderr).toBe("");
        const { jobs } = JSON.parse(exit.stdout) as { jobs: { value: unknown }[] };
        expect(jobs[0]?.value).toBe("main thread: one ConfigError");
        // The copy that ran, and no other: no module of its other form, nor of another baton.
        const loaded = readFileSync(record, "utf8").split("\n");
        const [ran, other] = setup.compiled ? ["dist", "src"] : ["src", "dist"];
        const main = setup.compiled ? "dist/cli/main.js" : "src/cli/main.ts";
        expect(loaded).toContain(`file://${setup.root}/${main}`);
        expect(loaded.filter((url) => url.startsWith(`file://${setup.root}/${other}/`))).toEqual(
          [],
        );
        const batons = loaded.filter((url) => /\/(?:src|dist)\/errors\.[jt]s/.test(url));
        expect(new Set(batons)).toEqual(
          new Set([`file://${setup.root}/${ran}/errors.${ran === "dist" ? "js" : "ts"}`]),
        );

        expect(await probed(onTestFinished, setup, "--workers", "1")).toBe(
          "main thread: one ConfigError",
        );
        expect(await probed(onTestFinished, setup, "--workers", "1", "--handler-thread")).toBe(
          "its own thread: one ConfigError",
        );

        // The calling thread takes the first seed, the helper thread the second (sim.ts waits for it).
        const probeFile = join(setup.dir, "probe.txt");
        writeFileSync(probeFile, "");
        const sim = await startOwnBaton(
          onTestFinished,
          ["sim", "graph.ts", "--handlers", "sim.ts", "--seeds", "1..2", "--threads", "2"],
          { root: setup.root, cwd: setup.dir, env: { PROBE_FILE: probeFile } },
        ).exit;
        expect(sim.stderr).toBe("");
        expect(sim.code).toBe(0);
        expect(new Set(readFileSync(probeFile, "utf8").split("\n").filter(Boolean))).toEqual(
          new Set(["main thread: one ConfigError", "its own thread: one ConfigError"]),
        );
      },
      TEST_MS,
    );

    it(
      `${name}: the Quick start example runs, and baton sim of drawn graphs`,
      async ({ expect, onTestFinished }) => {
        const setup = make();
        const example = join(setup.root, "examples", "pipeline.graph.ts");
        const run = await startOwnBaton(
          onTestFinished,
          ["run", example, "--in-process", "--no-store", "--json"],
          {
            root: setup.root,
            cwd: setup.dir,
          },
        ).exit;
        expect(run.stderr).toBe("");
        expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, counts: { completed: 55 } });
        const sim = await startOwnBaton(
          onTestFinished,
          ["sim", "--seeds", "1..2", "--threads", "2"],
          {
            root: setup.root,
            cwd: setup.dir,
          },
        ).exit;
        expect(sim.stderr).toBe("");
        expect(sim.stdout).toMatch(/2 seeds, 0 failed/);
        expect(sim.code).toBe(0);
      },
      TEST_MS,
    );
  }
});

describe("a user's program gets the baton it imports", () => {
  it("a program of yours run by plain node: simulateSeeds with the modules, on its thread and a helper", () => {
    const dir = project();
    installPacked(dir);
    writeFileSync(
      join(dir, "main.mjs"),
      `import { simulateSeeds } from "baton";
const modules = { graph: "graph.ts", handlers: "sim.ts" };
for await (const r of simulateSeeds(1, 2, { modules, ranks: false }, { threads: 2 })) {
  if (!r.ok) process.exitCode = 1;
}
`,
    );
    const probeFile = join(dir, "probe.txt");
    writeFileSync(probeFile, "");
    // Killed (by its pid, as spawnSync does) if it runs past the timeout.
    const node = spawnSync(process.execPath, ["main.mjs"], {
      cwd: dir,
      env: { ...process.env, PROBE_FILE: probeFile },
      encoding: "utf8",
      timeout: 60_000,
      killSignal: "SIGKILL",
    });
    expect(node.stderr).toBe("");
    expect(node.status).toBe(0);
    expect(new Set(readFileSync(probeFile, "utf8").split("\n").filter(Boolean))).toEqual(
      new Set(["main thread: one ConfigError", "its own thread: one ConfigError"]),
    );
  });
});
