/**
 * `baton status` lists the `baton run`s of a store from their graph locks: a real run started
 * by the test (stopped by its pid), while it runs and once it is killed with SIGKILL, and
 * `baton reap` removing the dead run's lock; and the runs that take no lock (`--no-store`,
 * `--store-read-only`) by their registrations. A run starts no worker (`--workers 0`: it
 * waits for workers to join), so the runs are the only processes a test starts.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import {
  mkdirSync,
  readFileSync,
  realpathSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { readdir } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import type { RunStatus } from "../../src/cli/runStatus.ts";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { forgeRunRecord } from "../fixtures/forgeRunRecord.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { within } from "../fixtures/within.ts";

afterEach(() => {
  stopBatons();
});

const baton = (args: string[]) => startBaton(args).exit;

/** `baton status --json`'s runs. */
async function runsIn(stateDir: string): Promise<RunStatus[]> {
  const { stdout, code } = await baton(["status", "--state-dir", stateDir, "--json"]);
  expect(code).toBe(0);
  return JSON.parse(stdout).runs;
}

/** Until as many files of `stateDir` whose names end with `suffix` as `runs` note an address. */
async function untilNoted(
  stateDir: string,
  suffix: string,
  runs: ReturnType<typeof startBaton>[],
): Promise<void> {
  // Starting tsx takes a second here, far longer on a loaded machine. A run notes its
  // address as it starts listening.
  const deadline = Date.now() + 30_000;
  const noted = async () =>
    (await readdir(stateDir).catch(() => []))
      .filter((name) => name.endsWith(suffix))
      .filter((name) => readFileSync(join(stateDir, name), "utf8").includes('"address"')).length ===
    runs.length;
  while (!(await noted())) {
    const exited = runs.find((run) => run.child.exitCode !== null);
    if (exited) throw new Error(`baton run exited early: ${exited.stderr()}`);
    if (Date.now() > deadline) {
      throw new Error(`baton run did not listen: ${runs.map((run) => run.stderr()).join("\n")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A graph module of its own in `dir`, whose one job never ends: without a store, a run's files
 * go to .baton beside it.
 */
function waitGraph(dir: string): string {
  const graph = join(dir, "wait.graph.ts");
  writeFileSync(
    graph,
    `import { job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};\nexport const jobs = { wait: () => new Promise(() => {}) };\nexport default [job("wait", 1)];\n`,
  );
  return graph;
}

describe("baton status lists baton runs", () => {
  it("shows a running run's graph, pid, address, store and logs, then says it is dead once killed, until baton reap removes its lock", async () => {
    const dir = tempDir("baton-run-status-");
    const store = join(dir, "store");
    const stateDir = join(store, "run");
    const graph = "test/fixtures/slow.graph.ts";
    const run = startBaton(["run", graph, "--store", store, "--workers", "0"]);
    await untilNoted(stateDir, ".lock", [run]);
    const pid = run.child.pid!;
    const [runs, text] = await Promise.all([
      runsIn(stateDir),
      baton(["status", "--state-dir", stateDir]),
    ]);
    expect(runs).toEqual([
      expect.objectContaining({
        state: "running",
        pid,
        host: hostname(),
        graph: realpathSync(join(ROOT, graph)),
        store,
        logs: expect.stringMatching(new RegExp(`^${join(store, "logs")}/\\d{4}-.+$`)),
        address: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+$/),
        secretFile: expect.stringMatching(
          new RegExp(`^${stateDir}/run-[0-9a-f]+-${pid}@.+\\.secret$`),
        ),
        lock: expect.stringMatching(new RegExp(`^${stateDir}/graph-[0-9a-f]{16}\\.lock$`)),
      }),
    ]);
    expect(runs[0]!.ageMs).toBeGreaterThanOrEqual(0);
    expect(text.stdout).toMatch(
      new RegExp(
        `^run pid ${pid} on ${hostname()}  running  up [\\d.]+ (ms|s)  ${runs[0]!.graph}\n`,
      ),
    );
    expect(text.stdout).toContain(
      `  workers join at ${runs[0]!.address} with --secret-file ${runs[0]!.secretFile}\n`,
    );
    expect(text.stdout).toContain(`  results: ${store}\n  logs: ${runs[0]!.logs}\n`);
    expect(text.stdout.endsWith("\n\n1 running run\n")).toBe(true);

    // Killed, it cannot remove its lock: a dead run, with what to do.
    process.kill(pid, "SIGKILL");
    await within(run.exit, 10_000, "baton run exiting on SIGKILL");
    const [[dead], deadText] = await Promise.all([
      runsIn(stateDir),
      baton(["status", "--state-dir", stateDir]),
    ]);
    expect(dead).toMatchObject({ state: "dead", why: "its process is gone", pid });
    expect(deadText.stdout).toContain(
      `run pid ${pid} on ${hostname()}  dead (its process is gone)  started `,
    );
    expect(deadText.stdout).toContain(
      `  \`baton reap --state-dir ${stateDir}\` removes its lock and run files, and cancels the Slurm allocations it left\n`,
    );
    expect(deadText.stdout).toContain(`\n\n1 dead run (run: baton reap --state-dir ${stateDir})\n`);

    const reap = await baton(["reap", "--state-dir", stateDir]);
    expect(reap.code).toBe(0);
    expect(reap.stdout).toBe(
      `dead run pid ${pid} on ${hostname()} of ${dead!.graph}: removed its graph lock (its process is gone)\n`,
    );
    // Its secret went too: nothing is left for baton status to list.
    expect(await readdir(stateDir)).toEqual([]);
  });

  it("baton reap removes the temp file a graph lock's creator killed mid-create left, once a minute old", async () => {
    const stateDir = join(tempDir("baton-run-status-temp-"), "run");
    mkdirSync(stateDir);
    // A creator killed with SIGKILL after it wrote its temp file and before its link.
    const creator = spawn(
      process.execPath,
      [
        "-e",
        `require("node:fs").writeFileSync(require("node:path").join(process.argv[1], ".graph-0123456789abcdef.lock." + process.pid + ".0123456789ab.tmp"), "{"); process.kill(process.pid, "SIGKILL");`,
        stateDir,
      ],
      { stdio: "ignore" },
    );
    onTestFinished(() => {
      if (creator.exitCode === null && creator.signalCode === null) creator.kill("SIGKILL");
    });
    const [, signal] = await within(
      once(creator, "exit") as Promise<[number | null, string | null]>,
      10_000,
      "the creator killing itself",
    );
    expect(signal).toBe("SIGKILL");
    const temp = join(stateDir, `.graph-0123456789abcdef.lock.${creator.pid}.0123456789ab.tmp`);
    const old = new Date(Date.now() - 2 * 60_000);
    utimesSync(temp, old, old);
    const reap = await baton(["reap", "--state-dir", stateDir]);
    expect(reap.code).toBe(0);
    expect(await readdir(stateDir)).toEqual([]);
  });

  it("shows how far a run is from its first report, not only from its lock's first renewal 10 s on", async () => {
    const dir = tempDir("baton-run-status-progress-");
    const store = join(dir, "store");
    const stateDir = join(store, "run");
    const run = startBaton(["run", waitGraph(dir), "--store", store, "--workers", "0"]);
    await untilNoted(stateDir, ".lock", [run]);
    // The lock was made before the address was noted, and is renewed 10 s after it was made:
    // a report written only with that renewal comes after this wait.
    const { progress } = await vi.waitFor(
      async () => {
        const [found] = await runsIn(stateDir);
        if (found?.progress === undefined) throw new Error("no progress in baton status yet");
        return found;
      },
      { timeout: 6_000, interval: 200 },
    );
    expect(progress).toMatchObject({ total: 1, completed: 0, failed: 0, running: 0 });
    const text = await baton(["status", "--state-dir", stateDir]);
    expect(text.stdout).toContain("  jobs: ");
  });

  it("lists the runs that take no lock (--no-store, --store-read-only) from their registrations beside their run files, dead once killed, until baton reap removes them", async () => {
    const dir = tempDir("baton-run-status-");
    const graph = waitGraph(dir);
    const stateDir = join(dir, ".baton", "run");
    const reused = join(dir, "reused");
    const runs = [
      startBaton(["run", graph, "--no-store", "--workers", "0"]),
      startBaton(["run", graph, "--store-read-only", "--store", reused, "--workers", "0"]),
    ];
    await untilNoted(stateDir, ".run", runs);
    const [noStore, readOnly] = runs.map((run) => run.child.pid!) as [number, number];
    const listed = await runsIn(stateDir);
    const registration = (pid: number) =>
      expect.stringMatching(
        new RegExp(`^${stateDir}/graph-[0-9a-f]{16}-${pid}-[0-9a-f]{8}\\.run$`),
      );
    const listedRun = (pid: number) => listed.find((run) => run.pid === pid);
    expect(listed).toHaveLength(2);
    expect(listedRun(noStore)).toEqual(
      expect.objectContaining({
        state: "running",
        withoutLock: "--no-store",
        graph: realpathSync(graph),
        logs: expect.stringMatching(new RegExp(`^${join(dir, ".baton", "logs")}/\\d{4}-.+$`)),
        address: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+$/),
        lock: registration(noStore),
      }),
    );
    expect(listedRun(noStore)!.store).toBeUndefined();
    expect(listedRun(readOnly)).toEqual(
      expect.objectContaining({
        state: "running",
        withoutLock: "--store-read-only",
        store: reused,
        lock: registration(readOnly),
      }),
    );

    for (const run of runs) run.child.kill("SIGKILL");
    await within(Promise.all(runs.map((run) => run.exit)), 10_000, "baton runs exiting on SIGKILL");
    const { stdout } = await baton(["status", "--state-dir", stateDir]);
    expect(stdout).toMatch(
      new RegExp(
        `(^|\n)run pid ${noStore} on ${hostname()}  dead \\(its process is gone\\)  started .+ ago, registration last written .+ ago  ${realpathSync(graph)}  \\(--no-store: no lock\\)\n`,
      ),
    );
    expect(stdout).toContain(
      `  \`baton reap --state-dir ${stateDir}\` removes its registration and run files, and cancels the Slurm allocations it left\n`,
    );
    expect(stdout).toContain(`\n\n2 dead runs (run: baton reap --state-dir ${stateDir})\n`);
    const reap = await baton(["reap", "--state-dir", stateDir]);
    expect(reap.code).toBe(0);
    expect(reap.stdout).toContain(
      `dead run pid ${noStore} on ${hostname()} of ${realpathSync(graph)}: removed its registration (a --no-store run; its process is gone)\n`,
    );
    expect(await readdir(stateDir)).toEqual([]);
  });

  it("the next run there removes a killed run's registration, as baton reap would, before it registers", async () => {
    const dir = tempDir("baton-run-status-swept-");
    const graph = waitGraph(dir);
    const stateDir = join(dir, ".baton", "run");
    mkdirSync(stateDir, { recursive: true });
    forgeRunRecord(stateDir, { pid: await deadPid(), graph: realpathSync(graph) });
    const run = startBaton(["run", graph, "--no-store", "--workers", "0", "--log-level", "info"]);
    await untilNoted(stateDir, ".run", [run]);
    const registrations = (await readdir(stateDir)).filter((name) => name.endsWith(".run"));
    expect(registrations).toEqual([
      expect.stringMatching(new RegExp(`^graph-[0-9a-f]{16}-${run.child.pid}-[0-9a-f]{8}\\.run$`)),
    ]);
    expect(run.stderr()).toContain(
      "removed the registrations of runs that ended without removing them (killed), which baton status listed as dead runs",
    );
  });

  it("an in-process --no-store run leaves no run/ folder behind once it ends, its logs only; a run/ folder that was there stays", async () => {
    const dir = tempDir("baton-run-status-leaves-");
    const graph = join(dir, "one.graph.ts");
    writeFileSync(
      graph,
      `import { job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};\nexport const jobs = { one: () => 1 };\nexport default [job("one", 1)];\n`,
    );
    const ran = await baton(["run", graph, "--in-process", "--no-store", "--json"]);
    expect(ran.code).toBe(0);
    expect(await readdir(join(dir, ".baton"))).toEqual(["logs"]);

    mkdirSync(join(dir, ".baton", "run"));
    const again = await baton(["run", graph, "--in-process", "--no-store", "--json"]);
    expect(again.code).toBe(0);
    expect(await readdir(join(dir, ".baton", "run"))).toEqual([]);
  });

  it("a dry run registers nowhere, not even in its store's run/ folder that is there: it writes nothing", async () => {
    const dir = tempDir("baton-run-status-dry-");
    const store = join(dir, "store");
    const stateDir = join(store, "run");
    mkdirSync(stateDir, { recursive: true });
    // A file made and removed in run/ while the dry run lasted would change the folder's mtime.
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(stateDir, past, past);
    // As the file system keeps it: a time in ms does not always come back whole (…792.999).
    const before = statSync(stateDir).mtimeMs;
    const dry = await baton(["run", "test/fixtures/slow.graph.ts", "--store", store, "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(statSync(stateDir).mtimeMs).toBe(before);
    expect(await readdir(store)).toEqual(["run"]);
  });
});
