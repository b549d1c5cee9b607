/**
 * What the `baton` command loads to start, module by module (never by time): the cheap
 * commands (version, help, status, reap) load no engine, simulation, dashboard or transport
 * and none of their packages; `baton sim` no dashboard unless --ui, and `baton worker
 * --handler-thread` neither the job module nor the baton it imports on its own thread; the
 * compiled dist/ runs every command, without tsx until it loads a user's module, when it is
 * current, and the sources run when it is not (a stale dist/ never runs). Each case runs a copy of this checkout (bin/, src/, dist/ and
 * package.json copied, node_modules linked) whose dist/ a test can stamp or make stale;
 * every process is stopped by its pid when its test ends.
 */
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeSecretFile } from "../../src/runtime/secret.ts";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { copyCheckout, stampDist } from "../fixtures/checkoutCopy.ts";
import { closedPort } from "../fixtures/closedPort.ts";

const RECORDER = join(ROOT, "test/fixtures/loadedModules.mjs");
/** Packages the engine, the transport, the simulation and the dashboard load. */
const HEAVY_PACKAGES = ["xstate", "ws", "pino", "pino-pretty", "fast-check", "@statelyai/inspect"];
/** baton's own folders and modules that only running a graph, a worker or a simulation needs. */
const HEAVY_OWN = /\/(?:sim|viz|transport)\/|\/runtime\/(?:engine|wsNet|worker|localPool)\./;

const dirs: string[] = [];
let root = "";

afterEach(() => stopBatons());
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  root = copyCheckout();
  dirs.push(root);
});

const stamp = () => stampDist(root);

/** Runs `baton ...args` in the copy; its output and the URLs of every module it loaded. */
async function loaded(
  ...args: string[]
): Promise<{ stdout: string; code: number | null; modules: string[] }> {
  const record = join(root, `loaded-${dirs.length}-${args.join("_").replace(/\W/g, "")}.txt`);
  writeFileSync(record, "");
  const exit = await startBaton(args, {
    root,
    env: { NODE_OPTIONS: `--import=${RECORDER}`, BATON_LOADED_MODULES: record },
  }).exit;
  expect(exit.stderr.match(/^\s+at /m), exit.stderr).toBeNull();
  const modules = [...new Set(readFileSync(record, "utf8").split("\n").filter(Boolean))];
  return { stdout: exit.stdout, code: exit.code, modules };
}

const packageOf = (url: string) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];

/** The heavy modules among `modules`, except the packages in `allowed`. */
function heavy(modules: string[], allowed: string[] = []): string[] {
  return modules.filter((url) => {
    const name = packageOf(url);
    if (name !== undefined) return HEAVY_PACKAGES.includes(name) && !allowed.includes(name);
    return url.startsWith(`file://${root}/`) && HEAVY_OWN.test(url);
  });
}

/** The commands whose modules (`src/cli/<name>Command.ts`) are among `modules`. */
const commandModules = (modules: string[]) =>
  modules.flatMap((url) => /\/cli\/(\w+)Command\.[jt]s$/.exec(url)?.[1] ?? []);

describe("the cheap commands load neither the engine nor its packages", () => {
  const stateDir = () => {
    const dir = join(root, "state");
    mkdirSync(dir, { recursive: true });
    return dir;
  };

  for (const compiled of [false, true]) {
    const from = compiled ? "from a current dist/" : "from the sources";
    const main = compiled ? "/dist/cli/main.js" : "/src/cli/main.ts";

    it(`baton version, help and help status ${from}`, async () => {
      if (compiled) stamp();
      for (const args of [["version"], ["--help"], ["help", "status"]]) {
        const { code, stdout, modules } = await loaded(...args);
        expect(code, args.join(" ")).toBe(0);
        expect(stdout).toMatch(
          args[0] === "version" ? /^baton \d+\.\d+\.\d+\n$/ : /^usage: baton /,
        );
        expect(modules).toContain(`file://${root}${main}`);
        expect(heavy(modules), args.join(" ")).toEqual([]);
        // The command catalog (each command's flags and what it does) is no command's module.
        expect(commandModules(modules), args.join(" ")).toEqual(
          args[1] === "status" ? ["status"] : [],
        );
      }
    });

    it(`baton status ${from}`, async () => {
      if (compiled) stamp();
      const { code, stdout, modules } = await loaded("status", "--state-dir", stateDir(), "--json");
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toMatchObject({ stateDirExists: true });
      expect(modules).toContain(`file://${root}${main}`);
      expect(heavy(modules)).toEqual([]);
      expect(commandModules(modules)).toEqual(["status"]);
    });

    it(`baton reap ${from} loads the logger and the teardown machine, not pino-pretty`, async () => {
      if (compiled) stamp();
      const { code, modules } = await loaded("reap", "--state-dir", stateDir(), "--json");
      expect(code).toBe(0);
      expect(modules).toContain(`file://${root}${main}`);
      expect(heavy(modules, ["xstate", "pino"])).toEqual([]);
    });
  }
});

describe("worker and sim load the subsystems they use, not the others", () => {
  /** Which of baton's compiled modules `names` (paths under dist/) are among `modules`. */
  const among = (modules: string[], names: string[]) =>
    names.filter((name) => modules.includes(`file://${root}/dist/${name}`));
  /** What a run's graph or job module imports with baton's public surface, and more. */
  const SUBSYSTEMS = [
    "index.js",
    "runtime/userModule.js",
    "runtime/jobModule.js",
    "runtime/launchGroup.js",
    "runtime/remoteRank.js",
    "runtime/slurmPool.js",
    "runtime/dashboardServer.js",
  ];

  it("a worker with --handler-thread loads its job module, and the baton it imports, on that thread alone", async () => {
    stamp();
    const { path: secret } = await writeSecretFile(root);
    // No coordinator listens: each worker loads its job module, then cannot connect (exit 3).
    const connect = `127.0.0.1:${await closedPort()}`;
    const graph = join(root, "examples/pipeline.graph.ts");
    const worker = (...more: string[]) =>
      loaded("worker", "--connect", connect, "--secret-file", secret, "--jobs", graph, ...more);
    const onItsThread = await worker();
    expect(onItsThread.code).toBe(3);
    expect(onItsThread.modules).toContain(pathToFileURL(graph).href);
    expect(among(onItsThread.modules, SUBSYSTEMS)).toEqual(SUBSYSTEMS);
    const onHandlerThread = await worker("--handler-thread");
    expect(onHandlerThread.code).toBe(3);
    expect(onHandlerThread.modules).toContain(`file://${root}/dist/cli/handlerThread.js`);
    expect(onHandlerThread.modules).not.toContain(pathToFileURL(graph).href);
    expect(among(onHandlerThread.modules, SUBSYSTEMS)).toEqual([]);
  });

  it("baton sim of drawn graphs loads no dashboard (--ui does: e2e/sim.test.ts)", async () => {
    stamp();
    const dashboard = ["cli/simDashboard.js", "runtime/dashboardServer.js"];
    const sim = await loaded("sim", "--seed", "1");
    expect(sim.code).toBe(0);
    expect(sim.modules).toContain(`file://${root}/dist/cli/simCommand.js`);
    expect(among(sim.modules, [...dashboard, "runtime/slurmPool.js"])).toEqual([]);
  });
});

describe("which copy of baton runs", () => {
  const tsx = (modules: string[]) => modules.filter((url) => packageOf(url) === "tsx");

  it("a current dist/ runs without tsx", async () => {
    stamp();
    const { modules } = await loaded("version");
    expect(modules).toContain(`file://${root}/dist/cli/main.js`);
    expect(modules.filter((url) => url.startsWith(`file://${root}/src/`))).toEqual([]);
    expect(tsx(modules)).toEqual([]);
  });

  it("an edit to src/ after the build runs the sources, not the stale dist/", async () => {
    stamp();
    appendFileSync(join(root, "src/cli/main.ts"), "\n// edited after the build\n");
    const { stdout, modules } = await loaded("version");
    expect(stdout).toMatch(/^baton /);
    expect(modules).toContain(`file://${root}/src/cli/main.ts`);
    expect(modules.filter((url) => url.startsWith(`file://${root}/dist/`))).toEqual([]);
  });

  it("a file added to src/ after the build runs the sources", async () => {
    stamp();
    writeFileSync(join(root, "src/added.ts"), "export const added = 1;\n");
    const { modules } = await loaded("version");
    expect(modules).toContain(`file://${root}/src/cli/main.ts`);
  });

  it("a dist/ that no build stamped (an interrupted or older build) runs the sources", async () => {
    const { modules } = await loaded("version");
    expect(modules).toContain(`file://${root}/src/cli/main.ts`);
    expect(tsx(modules).length).toBeGreaterThan(0);
  });

  it("run, worker and sim run the compiled dist/ too, and load tsx only for a user's module", async () => {
    stamp();
    const fromSources = (modules: string[]) =>
      modules.filter((url) => url.startsWith(`file://${root}/src/`));
    for (const command of ["run", "worker", "sim"]) {
      const { code, modules } = await loaded(command, "--help");
      expect(code, command).toBe(0);
      expect(modules, command).toContain(`file://${root}/dist/cli/main.js`);
      expect(fromSources(modules), command).toEqual([]);
      expect(tsx(modules), command).toEqual([]);
    }
    // The example imports "baton", and a module of this checkout (as the test fixtures are)
    // "../src/index.ts": each gets the compiled copy the command runs.
    const relative = join(root, "examples/relative.graph.ts");
    writeFileSync(
      relative,
      'import { defineJobs, job } from "../src/index.ts";\nexport const jobs = defineJobs({ one: () => 1 });\nexport default [job("one")];\n',
    );
    for (const graph of [join(root, "examples/pipeline.graph.ts"), relative]) {
      const run = await loaded("run", graph, "--in-process", "--no-store", "--json");
      expect(run.code, graph).toBe(0);
      expect(JSON.parse(run.stdout), graph).toMatchObject({ ok: true });
      expect(run.modules, graph).toContain(`file://${root}/dist/cli/main.js`);
      expect(run.modules, graph).toContain(`file://${root}/dist/index.js`);
      expect(fromSources(run.modules), graph).toEqual([]);
      expect(tsx(run.modules).length, graph).toBeGreaterThan(0);
      // baton's public surface loads before tsx's hooks, which then only resolve it: each of
      // its modules through them took a round trip to the hooks thread.
      const [firstTsx] = tsx(run.modules);
      expect(run.modules.indexOf(`file://${root}/dist/index.js`), graph).toBeLessThan(
        run.modules.indexOf(firstTsx as string),
      );
    }
  });
});
