import { type ChildProcess, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  watch,
  writeFileSync,
} from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const procs = nodeProcs();
const started = new Set<number>();
const dirs: string[] = [];

function alive(pid: number): boolean {
  const info = procs.inspect(pid);
  return info !== undefined && info.state !== "zombie" && info.state !== "dead";
}

async function until(what: string, test: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The pids of the `baton worker` processes the run with pid `pid` started. */
function workersOf(pid: number): number[] {
  return procs
    .list()
    .filter((p) => p.ppid === pid && p.argv.includes("worker"))
    .map((p) => p.pid);
}

/** `baton run` of the counted graph: 60 leaves of `delayMs` each on 2 workers, and 7 totals. */
function runCli(
  store: string,
  calls: string,
  delayMs = 60,
  flags: string[] = [],
  env: Record<string, string> = {},
): {
  child: ChildProcess;
  exit: Promise<{ code: number | null; stdout: string; stderr: string }>;
} {
  const child = spawn(
    process.execPath,
    [
      "bin/baton.js",
      "run",
      "test/fixtures/counted.graph.ts",
      "--store",
      store,
      "--workers",
      "2",
      "--json",
      ...flags,
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        BATON_TEST_JOBS: "60",
        BATON_TEST_DELAY_MS: String(delayMs),
        BATON_TEST_CALLS: calls,
        ...env,
      },
    },
  );
  started.add(child.pid!);
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout, stderr })),
  );
  return { child, exit };
}

afterEach(() => {
  for (const pid of started) if (alive(pid)) procs.signal(pid, "SIGKILL");
  started.clear();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh store, and a folder for each of two runs where its handlers record their calls. */
function twoRuns() {
  const dir = mkdtempSync(join(tmpdir(), "baton-resume-"));
  dirs.push(dir);
  const runs = {
    store: join(dir, "store"),
    first: join(dir, "calls-1"),
    second: join(dir, "calls-2"),
  };
  mkdirSync(runs.first);
  mkdirSync(runs.second);
  return runs;
}

describe("resume after the coordinator dies", () => {
  it("reruns only what was not stored when the coordinator was killed with SIGKILL", async () => {
    const { store, first, second } = twoRuns();

    const killed = runCli(store, first);
    await until("a third of the jobs to run", () => readdirSync(first).length >= 20);
    const workers = workersOf(killed.child.pid!);
    for (const pid of workers) started.add(pid);
    expect(workers).toHaveLength(2);
    // The killed run cannot remove its lock and secret: the rerun does, and then its own.
    expect(readdirSync(join(store, "run"))).toEqual([
      expect.stringMatching(/^graph-[0-9a-f]{16}\.lock$/),
      expect.stringMatching(new RegExp(`^run-[0-9a-f]+-${killed.child.pid}@.+\\.secret$`)),
    ]);
    procs.signal(killed.child.pid!, "SIGKILL");
    await killed.exit;
    // Workers lose their connection when the coordinator dies, and exit on their own.
    await until("the orphaned workers to exit", () => workers.every((pid) => !alive(pid)), 15_000);

    const rerun = runCli(store, second);
    const { code, stdout } = await rerun.exit;
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as {
      ok: boolean;
      counts: { completed: number; cached: number };
    };
    expect(result.ok).toBe(true);
    expect(result.counts.completed).toBe(67);
    // A result whose handler had returned but that was not yet durable when the coordinator
    // died is lost with it: under load a worker has one running and one or more storing.
    expect(result.counts.cached).toBeGreaterThanOrEqual(readdirSync(first).length / 2);
    // Stored jobs are not recomputed: the rerun called exactly the handlers of the others.
    expect(readdirSync(second)).toHaveLength(67 - result.counts.cached);
    expect(readdirSync(join(store, "run"))).toEqual([]);
  }, 60_000);

  it("a second run of the same graph on the same store fails at once, naming the first's pid, and computes nothing", async () => {
    const { store, first, second } = twoRuns();

    // Slow jobs (9 s in all): the first run is still going when the second has loaded, even
    // on a loaded machine.
    const running = runCli(store, first, 300);
    await until("the first run to start its jobs", () => readdirSync(first).length >= 1);
    const refused = await runCli(store, second).exit;
    // At once: refused while the first run still holds the store, not after waiting for it.
    expect(running.child.exitCode).toBeNull();
    expect(refused.code).toBe(2);
    expect(refused.stderr.trimEnd()).toMatch(
      new RegExp(
        `^baton run: another baton run of ${ROOT}test/fixtures/counted\\.graph\\.ts is using the result store ${store}: pid ${running.child.pid}, started [-\\d:.TZ]+; wait for it to finish or stop it \\(kill ${running.child.pid}\\), or give this run another --store \\[STORE_LOCKED\\]$`,
      ),
    );
    expect(readdirSync(second)).toEqual([]);

    const { code } = await running.exit;
    expect(code).toBe(0);
    // Every job was computed once, by the first run; its lock is gone with it.
    expect(readdirSync(first)).toHaveLength(67);
    expect(readdirSync(join(store, "run"))).toEqual([]);
  }, 60_000);

  it("a run's lock goes when a second Ctrl-C stops it at once, and when its dashboard cannot start", async () => {
    const { store, first, second } = twoRuns();
    const locks = () =>
      readdirSync(join(store, "run")).filter((name) => /^graph-[0-9a-f]{16}\.lock$/.test(name));

    // Leaves of 3 s that ignore the cancel: the first Ctrl-C cannot end the run before the
    // second arrives, however loaded the machine.
    const running = runCli(store, first, 3_000, [], { BATON_TEST_IGNORE_ABORT: "1" });
    await until("the run's workers to start", () => workersOf(running.child.pid!).length === 2);
    const workers = workersOf(running.child.pid!);
    for (const pid of workers) started.add(pid);
    // A leaf ended, so the workers are running the next ones, which hold the run up.
    await until("the first leaf to end", () => readdirSync(first).length >= 1);
    expect(locks()).toHaveLength(1);
    running.child.kill("SIGINT");
    await new Promise((resolve) => setTimeout(resolve, 100));
    running.child.kill("SIGINT");
    const stopped = await running.exit;
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toContain("stopping now (second Ctrl-C)");
    expect(locks()).toEqual([]);
    await until("the run's workers to exit", () => workers.every((pid) => !alive(pid)), 15_000);

    // A port that is taken fails the run after it took the lock: the lock goes all the same.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const refused = await runCli(store, second, 60, ["--ui", "--ui-port", String(port)]).exit;
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`127.0.0.1:${port}`);
      expect(locks()).toEqual([]);
      expect(readdirSync(second)).toEqual([]);
    } finally {
      taken.close();
    }
  }, 60_000);

  it("a Ctrl-C as a --no-store run registers, before it has started, removes the registration and exits 130", async () => {
    // The quick start's graph in a folder of its own: --no-store keeps its files beside it.
    const dir = mkdtempSync(join(tmpdir(), "baton-resume-"));
    dirs.push(dir);
    for (const file of ["pipeline.graph.ts", "pipeline.jobs.ts"]) {
      copyFileSync(join(ROOT, "examples", file), join(dir, file));
    }
    writeFileSync(join(dir, "package.json"), '{"type":"module"}\n');
    const runDir = join(dir, ".baton", "run");
    mkdirSync(runDir, { recursive: true });
    const child = spawn(
      process.execPath,
      [join(ROOT, "bin/baton.js"), "run", "pipeline.graph.ts", "--no-store", "--workers", "1"],
      { cwd: dir, stdio: ["ignore", "ignore", "pipe"] },
    );
    started.add(child.pid!);
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const exit = new Promise<number | null>((resolve) => child.on("close", resolve));
    let interrupted = false;
    // One Ctrl-C the moment the registration is made: it was left behind, the handler having
    // looked for it before it was made.
    const watcher = watch(runDir, () => {
      if (interrupted || child.exitCode !== null) return;
      if (readdirSync(runDir).some((name) => name.endsWith(".run"))) {
        interrupted = child.kill("SIGINT");
      }
    });
    try {
      expect(await exit).toBe(130);
      expect(interrupted).toBe(true);
      expect(stderr).toContain("stopped (SIGINT) before the run started");
      expect(readdirSync(runDir)).toEqual([]);
      const logs = join(dir, ".baton", "logs");
      expect(existsSync(logs) ? readdirSync(logs) : []).toEqual([]);
    } finally {
      watcher.close();
    }
  }, 60_000);

  it("a Ctrl-C as the run takes its lock, before it has started, removes the lock and exits 130", async () => {
    const { store, first } = twoRuns();
    const runDir = join(store, "run");
    mkdirSync(runDir, { recursive: true });
    let running: ReturnType<typeof runCli> | undefined;
    let interrupted = false;
    // One Ctrl-C the moment the lock is made: before the run installs its cancel, which found
    // Node's default ending the command at once, the lock left behind. (A second, at the next
    // file the run writes, would force the exit, which leaves what it was writing.)
    const watcher = watch(runDir, () => {
      if (interrupted || running?.child.exitCode !== null || !locked()) return;
      interrupted = running.child.kill("SIGINT");
    });
    const locked = () =>
      readdirSync(runDir).some((name) => /^graph-[0-9a-f]{16}\.lock$/.test(name));
    try {
      running = runCli(store, first);
      const { code, stderr } = await running.exit;
      expect(code).toBe(130);
      expect(stderr).toContain("(SIGINT)");
      expect(readdirSync(runDir)).toEqual([]);
      // Startup went no further than the lock: no log of a run that did not start is left.
      const logs = join(store, "logs");
      expect(existsSync(logs) ? readdirSync(logs) : []).toEqual([]);
    } finally {
      watcher.close();
    }
  }, 60_000);
});
