/**
 * The `baton` command as a user runs it: real child processes of bin/baton.js, their exit
 * codes, stdout and stderr. Every child still running when its test ends is killed by pid.
 */

import { spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { batonCommand } from "../../src/cli/batonCommand.ts";
import { codedMessage } from "../../src/cli/codedMessage.ts";
import {
  type BatonProcess,
  ROOT,
  startBaton,
  startOwnBaton,
  stopBatons,
} from "../fixtures/batonCli.ts";
import { printedJoin } from "../fixtures/printedJoin.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { TSX_LOADER } from "../fixtures/tsxLoader.ts";
import { within } from "../fixtures/within.ts";

const PIPELINE = "examples/pipeline.graph.ts";
/** One job that requires 4 cpus and 8192 MiB. */
const FOUR_CPUS = "test/fixtures/fourCpus.graph.ts";
const ONE_GPU = "test/fixtures/oneGpu.graph.ts";
/** A line of a stack trace, which a person should never see for a bad graph or bad flags. */
const STACK_LINE = /^\s+at /m;

afterEach(stopBatons);

/**
 * `args`, a `run` given a fresh result store so no test sees another's results, removed when
 * the test ends (`onTestFinished`, the test's own in a concurrent one).
 */
function withStore(args: string[], onTestFinished?: (hook: () => void) => void): string[] {
  if (args[0] !== "run" || args.includes("--store") || args.includes("--no-store")) return args;
  return [...args, "--store", tempDir("baton-cli-store-", onTestFinished)];
}

/** Starts `baton ...args`; a `run` gets a fresh result store. */
function baton(args: string[], env: Record<string, string> = {}): BatonProcess {
  return startBaton(withStore(args), { env });
}

/** Runs baton to the end. */
const batonRun = (...args: string[]) => baton(args).exit;

/**
 * `baton` and `batonRun` for a test that runs beside others (`describe.concurrent`): its
 * processes are stopped by pid when it ends, not by another test's `stopBatons`.
 */
function own(onTestFinished: (hook: () => void) => void) {
  const ownBaton = (args: string[], env: Record<string, string> = {}): BatonProcess =>
    startOwnBaton(onTestFinished, withStore(args, onTestFinished), { env });
  return { baton: ownBaton, batonRun: (...args: string[]) => ownBaton(args).exit };
}

/** The state letter of a process (R, S, Z, …), or undefined when it no longer exists. */
function processState(pid: number): string | undefined {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return undefined;
  try {
    const text = readFileSync(stat, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return undefined;
  }
}

const isGone = (pid: number) => {
  const state = processState(pid);
  return state === undefined || state === "Z";
};

/** Every process whose chain of parents leads to `root`, read from /proc. */
function descendantsOf(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, "utf8");
      parentOf.set(Number(entry), Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // The process ended while the table was read.
    }
  }
  const found: number[] = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const parent = frontier.pop()!;
    for (const [pid, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(pid);
        frontier.push(pid);
      }
    }
  }
  return found;
}

interface JsonJob {
  id: string;
  kind: string;
  status: string;
  attempts: number;
  cached: boolean;
  value?: unknown;
  error?: { message: string; name?: string; stack?: string };
  cause?: string;
  startedAt?: number;
  finishedAt?: number;
}

interface JsonResult {
  run: string;
  ok: boolean;
  durationMs: number;
  counts: Record<string, number>;
  jobs: JsonJob[];
}

/** stdout of `--json`: exactly one line holding one JSON object. */
function parseJson(stdout: string): JsonResult {
  const lines = stdout.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  const result = JSON.parse(lines[0]!) as JsonResult;
  expect(Object.keys(result).sort()).toEqual(["counts", "durationMs", "jobs", "ok", "run"]);
  expect(result.run).toEqual(expect.any(String));
  expect(Number.isInteger(result.durationMs)).toBe(true);
  expect(Object.keys(result.counts).sort()).toEqual([
    "cached",
    "cancelled",
    "completed",
    "failed",
    "skipped",
  ]);
  for (const job of result.jobs) {
    expect(job.id).toMatch(/^[0-9a-f]{16}$/);
    expect(job).toMatchObject({
      kind: expect.any(String),
      attempts: expect.any(Number),
      cached: false,
    });
    if (job.status === "completed") {
      expect(job).toHaveProperty("value");
      expect(job).not.toHaveProperty("error");
    } else {
      expect(job.error?.message).toEqual(expect.any(String));
      expect(job.cause).toEqual(expect.any(String));
    }
  }
  return result;
}

describe("baton run", () => {
  it("runs the Quick start pipeline and prints the summary table, with the value of the job the graph exports", async () => {
    const { code, stdout, stderr } = await batonRun("run", PIPELINE);

    expect(code).toBe(0);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^kind\s+completed\s+failed\s+skipped\s+cancelled\s+cached$/m);
    expect(stderr).toMatch(/^fetch\s+16\s+0\s+0\s+0\s+0$/m);
    expect(stderr).toMatch(/^total\s+55\s+0\s+0\s+0\s+0$/m);
    // The graph module exports publish alone: its value, not only the counts.
    expect(stderr).toMatch(/^total .*\npublish [0-9a-f]{16}: \{"published":\d+\}\n/m);
    expect(stderr).toMatch(/✓ every job completed in \d/);
  });

  it("prints one JSON object with --json, the retried publish job at 2 attempts", async () => {
    // In this process: what --json prints does not depend on where the handlers ran, and
    // the worker processes are most of a run's CPU.
    const { code, stdout } = await batonRun("run", PIPELINE, "--json", "--in-process");

    expect(code).toBe(0);
    const result = parseJson(stdout);
    expect(result.ok).toBe(true);
    expect(result.counts).toEqual({
      completed: 55,
      failed: 0,
      skipped: 0,
      cancelled: 0,
      cached: 0,
    });
    expect(result.jobs).toHaveLength(55);
    expect(result.jobs.every((job) => job.status === "completed")).toBe(true);
    const publish = result.jobs.filter((job) => job.kind === "publish");
    expect(publish).toMatchObject([{ attempts: 2, value: { published: 5 } }]);
    expect(result.jobs.filter((job) => job.attempts !== 1)).toEqual(publish);
    for (const job of result.jobs) {
      expect(Number.isInteger(job.startedAt)).toBe(true);
      expect(job.finishedAt).toBeGreaterThanOrEqual(job.startedAt!);
    }
  });

  it("--dry-run says what a run would do, starting and writing nothing", async () => {
    const store = tempDir("baton-cli-dry-");
    const dry = (...flags: string[]) =>
      batonRun("run", PIPELINE, "--store", store, "--dry-run", ...flags);

    const before = await dry();
    expect(before.code).toBe(0);
    expect(before.stderr).toMatch(/^kind\s+jobs\s+stored\s+to run$/m);
    expect(before.stderr).toMatch(/^fetch\s+16\s+0\s+16$/m);
    expect(before.stderr).toContain(
      `dry run: 55 of 55 jobs would run (0 results stored in ${store})`,
    );
    expect(readdirSync(store)).toEqual([]);

    expect((await batonRun("run", PIPELINE, "--store", store, "--in-process")).code).toBe(0);
    const after = await dry("--json");
    expect(after.code).toBe(0);
    const plan = JSON.parse(after.stdout) as {
      dryRun: boolean;
      store: { dir: string; force: boolean };
      counts: object;
      jobs: { id: string; kind: string; deps: string[]; stored: boolean }[];
    };
    expect(plan).toMatchObject({ dryRun: true, store: { dir: store, force: false } });
    expect(plan.counts).toEqual({ jobs: 55, stored: 55, toRun: 0, corrupt: 0 });
    expect(plan.jobs.filter((job) => job.kind === "publish")).toMatchObject([{ stored: true }]);

    const [watched, ...alone] = await Promise.all(
      ["--ui", "--ui-keep", "--ui-port=0"].map((flag) => dry(flag)),
    );
    expect(watched!.code).toBe(2);
    expect(watched!.stderr).toContain("--dry-run starts nothing to watch: leave out --ui");
    for (const [index, flag] of ["--ui-keep", "--ui-port=0"].entries()) {
      expect(alone[index]!.code).toBe(2);
      const name = flag.split("=")[0];
      expect(alone[index]!.stderr).toContain(
        `${name} goes with --ui, which starts the dashboard: add --ui, or leave ${name} out`,
      );
    }
  });

  it("--workers 0 prints how workers join, keeps its files beside the graph, and runs what joins, whatever this machine offers", async () => {
    const dir = tempDir("baton-cli-join-");
    const graph = join(dir, "joined.graph.ts");
    writeFileSync(
      graph,
      [
        `import { job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};`,
        "export const jobs = { twice: (n: number) => 2 * n };",
        // More gpus than this machine has: a worker that joins from elsewhere may offer them.
        'export default [...Array.from({ length: 19 }, (_, i) => job("twice", i)), job("twice", 19, { requires: { gpus: 8 } })];',
      ].join("\n"),
    );
    const run = baton(["run", graph, "--workers", "0", "--no-store", "--json"]);

    const { command, address, secretFile, jobsPath, args } = await printedJoin(run);
    // baton as this shell runs it: the path of this clone's, which is not on the PATH.
    expect(command).toBe(batonCommand());
    expect(address).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    // Without a store, the run's files still go beside the graph, where its log is.
    expect(secretFile.startsWith(join(dir, ".baton", "run", "run-"))).toBe(true);
    expect(jobsPath).toBe(graph);
    const secret = readFileSync(secretFile, "utf8").trim();
    const worker = startBaton([...args, "--gpus", "8"], { env: { BATON_SECRET: undefined } });

    const { code, stdout, stderr } = await within(run.exit, 60_000, "the joined run");
    expect(code).toBe(0);
    expect(parseJson(stdout).counts.completed).toBe(20);
    expect((await within(worker.exit, 10_000, "the worker's exit")).code).toBe(0);
    expect(stderr).not.toContain(secret);
    // Its secret and registration are gone, and the run/ folder it made for them with them.
    expect(readdirSync(join(dir, ".baton"))).toEqual(["logs"]);
    const [logs, ...more] = readdirSync(join(dir, ".baton", "logs"));
    expect(more).toEqual([]);
    expect(readdirSync(join(dir, ".baton", "logs", logs!)).sort()).toEqual(["ended", "run.log"]);
  });

  it("stops attempts past their timeoutMs in the worker processes and retries them, with or without --handler-thread", async () => {
    const runs = await Promise.all(
      [[], ["--handler-thread"]].map((more) =>
        batonRun("run", "test/fixtures/timeout.graph.ts", "--json", "--workers", "1", ...more),
      ),
    );
    for (const { code, stdout } of runs) {
      expect(code).toBe(1);
      const result = parseJson(stdout);
      expect(result.jobs.find((job) => job.kind === "slowOnce")).toMatchObject({
        status: "completed",
        attempts: 2,
        value: "done on attempt 2",
      });
      const late = result.jobs.find((job) => job.kind === "neverInTime")!;
      expect(late).toMatchObject({ status: "failed", cause: "error", attempts: 2 });
      expect(late.error).toMatchObject({
        name: "JobTimeout",
        message: expect.stringContaining("ran longer than its timeout of 300 ms (attempt 2)"),
      });
    }
  });

  it("runs a timed-out job again once the worker's abort grace is over, when its handler ignores the abort, not once its lease expires", async () => {
    const markers = tempDir("baton-deaf-");
    const { code, stdout } = await baton(
      [
        "run",
        "test/fixtures/deafToTimeout.graph.ts",
        "--json",
        "--workers",
        "2",
        "--abort-grace",
        "1s",
        "--no-store",
      ],
      { BATON_TEST_MARKERS: markers },
    ).exit;
    expect(code).toBe(1);
    const deaf = parseJson(stdout).jobs[0]!;
    expect(deaf).toMatchObject({ status: "failed", cause: "error", attempts: 2 });
    expect(deaf.error).toMatchObject({ name: "JobTimeout" });
    const [first, second] = readFileSync(join(markers, "starts"), "utf8")
      .trim()
      .split("\n")
      .map(Number);
    // Its 1 s timeout, the worker's 1 s grace and the coordinator's 1 s slack, then the
    // other worker takes it; its lease, unrenewed since the timeout, expired 20 s later.
    expect(second! - first!).toBeLessThan(10_000);
  }, 90_000);

  it("with --in-process, Ctrl-C while the graph module loads says that nothing was cancelled, where the store is and how to run it again, and exits 130", async () => {
    const markers = tempDir("baton-slow-load-");
    const store = tempDir("baton-slow-load-store-");
    const running = baton(
      ["run", "test/fixtures/slowToLoad.graph.ts", "--in-process", "--store", store],
      { BATON_TEST_MARKERS: markers },
    );
    await within(
      (async () => {
        while (!existsSync(join(markers, "loading"))) await sleep(50);
      })(),
      60_000,
      "the graph module's loading mark",
    );
    process.kill(running.child.pid!, "SIGINT");
    const { code, stderr } = await running.exit;
    expect(code).toBe(130);
    expect(stderr).toBe(
      `\nstopped (SIGINT) before the run started: no job had started, so none was cancelled, and the store ${store} is as it was; the same baton run again starts the run\n`,
    );
  }, 90_000);

  it("runs the handlers on a thread of their own in each worker process with --handler-thread", async () => {
    const where = async (...more: string[]) => {
      const { code, stdout } = await batonRun(
        "run",
        "test/fixtures/thread.graph.ts",
        "--json",
        "--workers",
        "1",
        ...more,
      );
      expect(code).toBe(0);
      return parseJson(stdout).jobs[0]!.value;
    };
    const [threaded, plain, both] = await Promise.all([
      where("--handler-thread"),
      where(),
      batonRun("run", "test/fixtures/thread.graph.ts", "--in-process", "--handler-thread"),
    ]);
    expect(threaded).toBe("a thread of its own");
    expect(plain).toBe("the connection's thread");
    expect(both.code).toBe(2);
    expect(both.stderr).toBe(
      "baton run: --handler-thread is for worker processes, and --in-process runs the handlers inside this process: leave one out [CONFIG]\n",
    );
  });

  it("with --in-process exits once the run has failed fast, naming the job whose handler ignored its abort, not when that handler returns", async () => {
    const markers = tempDir("baton-abort-ignored-");
    const started = Date.now();
    const { code, stderr } = await baton(
      ["run", "test/fixtures/abortIgnored.graph.ts", "--in-process", "--fail-fast", "--no-store"],
      { BATON_TEST_MARKERS: markers },
    ).exit;
    // The cancel's 10 s grace, then no more: the handler sleeps 60 s.
    expect(Date.now() - started).toBeLessThan(40_000);
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /\nbaton run: exiting without the handler of job [0-9a-f]{16} \(holds\), which did not stop on its abort \(ctx\.signal\) within 10\.0 s of the cancel: it runs in this process and ends with it, its result not stored \(--abort-grace DURATION gives a handler longer to stop\)\n$/,
    );
  });

  it("with --fail-fast stops at the first job that fails for good and says why the rest was cancelled", async () => {
    const { code, stderr } = await batonRun(
      "run",
      "test/fixtures/failing.graph.ts",
      "--fail-fast",
      "--in-process",
      "--workers",
      "1",
    );
    expect(code).toBe(1);
    // broken fails for good after its retry; its dependent is skipped, the rest cancelled.
    expect(stderr).toMatch(/^total\s+0\s+1\s+1\s+2\s+0$/m);
    expect(stderr).toMatch(
      /^2 jobs cancelled: the run stopped at its first failure \(failFast, --fail-fast\): job [0-9a-f]{16} \(broken\) failed$/m,
    );
  });

  it("exits 1 and lists the failure when a job fails", async () => {
    const store = tempDir("baton-cli-store-");
    const [table, json] = await Promise.all([
      batonRun("run", "test/fixtures/failing.graph.ts", "--store", store, "--workers", "1"),
      batonRun("run", "test/fixtures/failing.graph.ts", "--json", "--in-process"),
    ]);

    expect(table.code).toBe(1);
    expect(table.stderr).toMatch(/^total\s+1\s+2\s+1\s+0\s+0$/m);
    expect(table.stderr).toMatch(
      /^✗ broken [0-9a-f]{16} \(error, 2 attempts, last on local-\d+\): the database is on fire$/m,
    );
    expect(table.stderr).toMatch(
      /^✗ refuse [0-9a-f]{16} \(error, 1 attempt on local-\d+, not retried\): the input names no table; fix the input$/m,
    );
    expect(table.stderr).toContain("✗ the run did not complete");
    // The run's log tells the story: the retried attempt, the failure with its stack, the end.
    const logs = join(store, "logs");
    const [folder] = readdirSync(logs);
    // The summary names that log, where the stacks its failure lines leave out are.
    expect(table.stderr).toContain(
      `\neach failed attempt, with its stack: ${join(logs, folder!, "run.log")}\n`,
    );
    // Its workers stopped, the run marked its folder ended: pruning need not wait a day.
    expect(readdirSync(join(logs, folder!))).toContain("ended");
    const lines = readFileSync(join(logs, folder!, "run.log"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const said = (msg: string) => lines.filter((line) => line.msg === msg);
    expect(said("worker joined").length).toBeGreaterThan(0);
    expect(said("worker joined")[0]).toMatchObject({ worker: expect.stringMatching(/^local-/) });
    expect(said("attempt ended without a result; the job will run again")).toMatchObject([
      { kind: "broken", attempt: 1, err: { message: "the database is on fire" } },
    ]);
    expect(said("job failed").filter((line) => line.kind !== "refuse")).toMatchObject([
      {
        kind: "broken",
        attempts: 2,
        cause: "error",
        err: { stack: expect.stringContaining("failing.graph.ts") },
      },
    ]);
    expect(said("job skipped")).toMatchObject([
      {
        kind: "use",
        cause: "skipped",
        failedKind: "broken",
        reason: expect.stringMatching(
          /^skipped because dependency [0-9a-f]{16} \(broken\) failed: the database is on fire$/,
        ),
      },
    ]);
    expect(said("run finished")).toMatchObject([
      { ok: false, counts: { completed: 1, failed: 2 } },
    ]);

    expect(json.code).toBe(1);
    const result = parseJson(json.stdout);
    expect(result).toMatchObject({ ok: false, counts: { completed: 1, failed: 2, skipped: 1 } });
    expect(result.jobs.find((job) => job.kind === "refuse")).toMatchObject({
      status: "failed",
      attempts: 1,
      error: { name: "NonRetryableError", retryable: false },
    });
    const broken = result.jobs.find((job) => job.kind === "broken")!;
    expect(broken).toMatchObject({ status: "failed", cause: "error", attempts: 2 });
    expect(broken.error).toMatchObject({ name: "Error", message: "the database is on fire" });
    expect(result.jobs.find((job) => job.status === "skipped")).toMatchObject({
      kind: "use",
      cause: "skipped",
      attempts: 0,
      error: { message: expect.stringContaining(`dependency ${broken.id} (broken) failed`) },
    });
  });

  it("writes each run's logs to a folder of its own, and --keep-logs N removes older runs' folders", async () => {
    const store = tempDir("baton-cli-logs-");
    const logs = join(store, "logs");
    const run = (...flags: string[]) =>
      batonRun("run", PIPELINE, "--store", store, "--force", ...flags);
    expect((await run("--workers", "1")).code).toBe(0);
    const [first] = readdirSync(logs);
    expect(first).toMatch(/^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-[\w-]{8}$/);
    expect(readdirSync(join(logs, first!)).sort()).toEqual(["ended", "run.log", "worker-1.log"]);
    // The next runs' workers in this process: their folders are what counts, not what is in them.
    expect((await run("--in-process")).code).toBe(0);
    expect(readdirSync(logs)).toHaveLength(2);
    // Two days on, a third run keeping two folders removes the first run's.
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
    for (const folder of readdirSync(logs)) {
      for (const file of readdirSync(join(logs, folder))) {
        utimesSync(join(logs, folder, file), twoDaysAgo, twoDaysAgo);
      }
      utimesSync(join(logs, folder), twoDaysAgo, twoDaysAgo);
    }
    expect((await run("--in-process", "--keep-logs", "2")).code).toBe(0);
    const kept = readdirSync(logs);
    expect(kept).toHaveLength(2);
    expect(kept).not.toContain(first);
  });
});

/**
 * Quick refusals, each its own `baton` process and nothing else: side by side, since test
 * files run one at a time and one process at a time left CI's second core idle.
 */
describe.concurrent("baton run's refusals of bad usage", () => {
  it.for<[string[], string]>([
    [["--workers=-1", PIPELINE], '--workers must be a number of workers ≥ 0, not "-1"'],
    [["--workers=", PIPELINE], '--workers must be a number of workers ≥ 0, not ""'],
    [["--log-level", "loud", PIPELINE], "--log-level must be one of trace, debug, info, warn"],
    [
      [],
      "baton run: give the graph module to run, such as baton run examples/pipeline.graph.ts (baton run --help shows how) [CONFIG]\n",
    ],
    [
      ["--inspect", "--inspect-unreachable-after", "5", PIPELINE],
      'baton run: --inspect-unreachable-after must be a duration: a whole number above 0 and its unit, such as 90s, 10m, 2h or 7d (ms, s, m, h, d), not "5" [CONFIG]\n',
    ],
    [
      ["--inspect-unreachable-after", "5s", PIPELINE],
      "baton run: --inspect-unreachable-after goes with --inspect, which streams to an inspector: add --inspect, or leave --inspect-unreachable-after out [CONFIG]\n",
    ],
    [
      [PIPELINE, "--no-store", "--workers"],
      "baton run: --workers needs a value (baton run --help lists its flags) [CONFIG]\n",
    ],
    [
      ["--in-process", "--listen", "127.0.0.1:0", PIPELINE],
      "--in-process with --listen: a worker joins only with the run's secret",
    ],
    // Workers sent to an address nothing listens at, local ones too, until the pool gave up.
    [
      ["--connect", "login1:7000", PIPELINE],
      "baton run: --connect login1:7000 is where workers reach this run's --listen address by another name, and without --listen the run listens on a free port of 127.0.0.1: give --listen too",
    ],
    [
      ["--keep-logs", "0", PIPELINE],
      '--keep-logs must be a whole number of runs from 1 to 10000, not "0" [CONFIG]',
    ],
    // A typo's extra digits would have kept every run's logs for good, unsaid.
    [
      ["--keep-logs", "1000000000000", PIPELINE],
      `--keep-logs must be a whole number of runs from 1 to 10000, not "1000000000000"; to keep a run's logs for good, copy its folder out of the store's logs/ [CONFIG]`,
    ],
    [
      ["--slurm", "--max-workers", "1000000000000", PIPELINE],
      "baton run: --max-workers 1000000000000 is more workers than this coordinator can hold connections to: at most ",
    ],
    [["--slurm-resources", "cpus=4", PIPELINE], "baton run: --slurm-resources goes with --slurm"],
    [
      ["--slurm", "--slurm-resources", "mem=16G", PIPELINE],
      'baton run: --slurm-resources: "mem" is no resource (did you mean memory?); give NAME=AMOUNT pairs joined by commas, such as cpus=4,memory=16384,gpus=1: the names are cpus and gpus (numbers of 0 or more) and memory (MiB, without a unit) [CONFIG]\n',
    ],
    [
      ["--slurm", "--slurm-resources", "memory=16G", PIPELINE],
      "baton run: --slurm-resources memory is in MiB, without a unit: for 16G give memory=16384 [CONFIG]\n",
    ],
    [
      ["--slurm", "--slurm-resources", "cpus=-4", PIPELINE],
      'baton run: --slurm-resources cpus must be a number of 0 or more, such as 4 or 0.5, not "-4" [CONFIG]\n',
    ],
    // A job that asks more than a Slurm worker offers: the way out is the flag, with amounts.
    [
      ["--slurm", "--dry-run", FOUR_CPUS],
      "baton run: No configured worker can take this job [UNSATISFIABLE]:\n  job 7f0b07f174f8f14b (crunch 21) requires cpus 4, memory 8192 MiB\nThe workers offer:\n  cpus 1, gpus 0, memory 0 MiB\nLower what the job requires, or have each Slurm worker offer enough with --slurm-resources cpus=4,memory=8192 (a resource a worker does not declare counts as 0).\n",
    ],
    [
      ["--slurm", "--slurm-resources", "gpus=1,cpus=2", "--dry-run", FOUR_CPUS],
      "have each Slurm worker offer enough with --slurm-resources cpus=4,gpus=1,memory=8192 (",
    ],
    // baton run's own workers offer no gpu: the way out is workers that join, with the flags.
    [
      ["--dry-run", ONE_GPU],
      "or have workers that offer enough join the run: give baton run --workers 0 (and --listen HOST:PORT for other machines), then start the baton worker command it prints with --cpus ",
    ],
    [["--dry-run", ONE_GPU], " --gpus 1 --memory "],
    // Nor do in-process workers: the way out is the same, without --in-process.
    [
      ["--in-process", "--dry-run", ONE_GPU],
      "or leave out --in-process and have workers that offer enough join the run: give baton run --workers 0 (and --listen HOST:PORT for other machines), then start the baton worker command it prints with --cpus ",
    ],
    // Never started: 100,000 processes are more than any machine here holds.
    [
      ["--workers", "100000", PIPELINE],
      "baton run: --workers 100000 is more worker processes than this machine can run: at most ",
    ],
    [
      ["--in-process", "--workers", "1000000000", PIPELINE],
      "baton run: --workers 1000000000 is more in-process workers than this machine can run: at most ",
    ],
    [["--bogus", PIPELINE], "unknown flag --bogus (baton run --help lists its flags) [CONFIG]\n"],
    [
      [PIPELINE, "--worker", "4"],
      "baton run: unknown flag --worker; did you mean --workers? (baton run --help lists its flags) [CONFIG]\n",
    ],
    [
      [PIPELINE, "--no-store=1"],
      "baton run: --no-store takes no value; give it alone, as --no-store (baton run --help lists its flags) [CONFIG]\n",
    ],
    // A flag's value given to one that takes none is a second graph module, named as such.
    [
      [PIPELINE, "--force", "yes"],
      `baton run: give one graph module, not 2 (${PIPELINE}, yes) (baton run --help shows how) [CONFIG]\n`,
    ],
    [["examples"], "examples is a directory ("],
    [
      ["examples/pipeline.jobs.ts"],
      "baton run: examples/pipeline.jobs.ts exports no graph: its export is neither a job nor a list of jobs (a job module? give the graph module, and this file as --jobs) [NO_GRAPH]",
    ],
    // A graph module without handlers, and a --jobs file without them: each told its own way out.
    [
      ["test/fixtures/simOwn.graph.ts"],
      "baton run: test/fixtures/simOwn.graph.ts exports a graph but no job module: export its handlers from it too",
    ],
    [
      ["--jobs", "test/fixtures/simOwn.sim.ts", PIPELINE],
      "baton run: test/fixtures/simOwn.sim.ts exports no job module (its default export is a function, as a graph function or the handlers of baton sim --handlers are, where a job module is the object of handlers itself): make its default export the handlers",
    ],
    // An unset variable, as in --jobs "$JOBS", is not the working directory.
    [["--jobs", "", PIPELINE], "--jobs is empty: give it a value, or leave it out"],
    [["--jobs", "examples", PIPELINE], "give the path of the module file in it [MODULE_NOT_FOUND]"],
    // A negative number gets the flag's own message, not parseArgs' about a leading dash.
    [["--workers", "-1", PIPELINE], '--workers must be a number of workers ≥ 0, not "-1"'],
    // It said "--workers must be a number of workers ≥ 1", where 0 is what the help offers.
    [
      ["--workers", "0", "--in-process", PIPELINE],
      "--workers 0 with --in-process runs no worker: --in-process runs the workers inside this process (1 or more); for only workers that join with baton worker, leave out --in-process [CONFIG]",
    ],
    [
      ["--keep-logs", "-3", PIPELINE],
      '--keep-logs must be a whole number of runs from 1 to 10000, not "-3"',
    ],
    [
      ["--ui", "--ui-port", "-8080", PIPELINE],
      '--ui-port must be a TCP port from 0 to 65535, not "-8080"',
    ],
  ])(
    "exits 2 for bad usage %j with a message",
    async ([args, says], { expect, onTestFinished }) => {
      const result = await startOwnBaton(onTestFinished, withStore(["run", ...args])).exit;

      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(says);
      expect(result.stderr).toContain("baton run");
      expect(result.stderr).not.toMatch(STACK_LINE);
    },
  );
});

/**
 * Runs that fail or are refused, each of its own processes and files: side by side, since
 * test files run one at a time and one process at a time left CI's second core idle.
 */
describe.concurrent("baton's failures and refusals", () => {
  /** Runs `graph` on one local worker with its own store; the exit and the pool's failure as run.log holds it. */
  async function poolFailure(onTestFinished: (hook: () => void) => void, graph: string) {
    const store = tempDir("baton-cli-store-", onTestFinished);
    const exit = await own(onTestFinished).batonRun(
      "run",
      graph,
      "--workers",
      "1",
      "--store",
      store,
    );
    const [folder] = readdirSync(join(store, "logs"));
    const logged = readFileSync(join(store, "logs", folder!, "run.log"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .find((line) => line.msg === "the worker pool failed; stopping the run");
    return { ...exit, logged };
  }

  it.for([
    ["a cycle", "cycle.graph.ts", "The graph has a cycle", "GRAPH_CYCLE"],
    ["an unknown kind", "unknown-kind.graph.ts", 'Unknown job kind "stpe" (1 job)', "UNKNOWN_KIND"],
  ])(
    "exits 2 for a graph with %s, one line on stderr and no stack",
    async ([, file, says, code], { expect, onTestFinished }) => {
      const { batonRun } = own(onTestFinished);
      const store = tempDir("baton-cli-store-", onTestFinished);
      const result = await batonRun("run", `test/fixtures/${file}`, "--store", store);

      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(says);
      expect(result.stderr.trimEnd()).toMatch(new RegExp(`^baton run: .*\\[${code}\\]$`));
      expect(result.stderr).not.toMatch(STACK_LINE);
      // The run never started: it left no log folder (each refusal left an empty one, kept a day).
      expect(readdirSync(join(store, "logs"))).toEqual([]);
    },
  );

  it("exits 2 with one line naming where a graph module or its graph function threw, or a store path that is a file, and leaves no log", async ({
    expect,
    onTestFinished,
  }) => {
    const { batonRun } = own(onTestFinished);
    const dir = tempDir("baton-cli-throws-", onTestFinished);
    writeFileSync(
      join(dir, "import.graph.ts"),
      'const a = 1;\nthrow new Error("boom at import");\n',
    );
    writeFileSync(
      join(dir, "function.graph.ts"),
      'export const jobs = { a: () => 1 };\nexport default async () => {\n  throw new Error("no graph today");\n};\n',
    );
    writeFileSync(join(dir, "afile"), "");
    const [atImport, inFunction, storeIsFile] = await Promise.all([
      batonRun("run", join(dir, "import.graph.ts"), "--store", join(dir, "s1")),
      batonRun("run", join(dir, "function.graph.ts"), "--store", join(dir, "s2")),
      batonRun("run", PIPELINE, "--store", join(dir, "afile")),
    ]);
    expect(atImport.stderr.trimEnd()).toBe(
      `baton run: could not load ${join(dir, "import.graph.ts")}: ${join(dir, "import.graph.ts")}:2:7 threw while loading: boom at import; fix its top-level code (for its stack: node --import ${TSX_LOADER} ${join(dir, "import.graph.ts")}) [MODULE_THREW]`,
    );
    expect(inFunction.stderr.trimEnd()).toBe(
      `baton run: the graph function ${join(dir, "function.graph.ts")} exports threw: no graph today (at ${join(dir, "function.graph.ts")}:3:9) [GRAPH_FUNCTION]`,
    );
    expect(storeIsFile.stderr.trimEnd()).toBe(
      `baton run: the result store ${join(dir, "afile")} cannot be made: ${join(dir, "afile")} is a file, not a directory; move it aside, or give the store (--store) another directory [STORE_NOT_DIRECTORY]`,
    );
    for (const result of [atImport, inFunction, storeIsFile]) expect(result.code).toBe(2);
    // Nothing was run, so nothing was written: no store, no empty run log.
    expect(readdirSync(dir).sort()).toEqual(["afile", "function.graph.ts", "import.graph.ts"]);
  });

  it("exits 2 naming a job option put on a kind's definition in the job module, which would be ignored", async ({
    expect,
    onTestFinished,
  }) => {
    const { batonRun } = own(onTestFinished);
    const dir = tempDir("baton-cli-definition-", onTestFinished);
    writeFileSync(join(dir, "package.json"), '{"type": "module"}\n');
    writeFileSync(
      join(dir, "big.graph.ts"),
      'import { defineJobs, job } from "baton";\nexport const jobs = defineJobs({ big: { requires: { cpus: 4 }, run: () => 1 } } as never);\nexport default [job("big")];\n',
    );
    const result = await batonRun("run", join(dir, "big.graph.ts"), "--store", join(dir, "store"));
    expect(result.stderr.trimEnd()).toBe(
      'baton run: job kind "big": unknown option requires; it takes run, version, timeoutMs; requires is an option of each job, not of its kind: job("big", input, { requires: … }) [JOB_MODULE]',
    );
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
  });

  it("says once, without a stack or a log line, that the run failed when its workers cannot start", async ({
    expect,
    onTestFinished,
  }) => {
    const { code, stderr, logged } = await poolFailure(
      onTestFinished,
      "test/fixtures/workersCannotLoad.graph.ts",
    );

    expect(code).toBe(1);
    // The run's log keeps the failure, classified and without a stack, below the level
    // stderr shows: the terminal gets the CLI's one message, not the log line as well.
    expect(logged).toMatchObject({ level: 30, err: { code: "WORKER_CANNOT_START" } });
    expect(logged.err).not.toHaveProperty("stack");
    expect(stderr).toBe(
      `baton run: the run failed: ${codedMessage(logged.err.message, "WORKER_CANNOT_START")}\n`,
    );
    // The code ends the first line, not the worker's log quoted after it.
    expect(stderr.split("\n")[0]).toMatch(/ of the log \[WORKER_CANNOT_START\]:$/);
    expect(stderr).toMatch(/the run failed: worker local-1 \(pid \d+\) exited with code 2/);
    expect(stderr).toContain(
      `could not load ${join(ROOT, "test/fixtures/workersCannotLoad.graph.ts")}: ${join(ROOT, "test/fixtures/workersCannotLoad.graph.ts")}:12:9 threw while loading: the licence file is missing`,
    );
  });

  it("says once, in its summary, that a result could not be stored, each attempt's error only in run.log", async ({
    expect,
    onTestFinished,
  }) => {
    const { baton } = own(onTestFinished);
    const store = tempDir("baton-cli-store-", onTestFinished);
    // In this process: the coordinator stores a result wherever its handler ran.
    const { code, stderr } = await baton(
      [
        "run",
        "test/fixtures/storeInTheWay.graph.ts",
        "--in-process",
        "--workers",
        "1",
        "--store",
        store,
      ],
      { STORE_IN_THE_WAY: store },
    ).exit;

    expect(code).toBe(1);
    const lines = stderr.trim().split("\n");
    expect(lines.filter((line) => line.includes("could not be stored"))).toEqual([
      expect.stringMatching(
        /^✗ sabotage [0-9a-f]{16} \(error, 4 attempts, last on inproc-1\): the result of job [0-9a-f]{16} \(sabotage\) could not be stored in (.+): \1\/results is a file, not a directory; move it aside, or give the store \(--store\) another directory$/,
      ),
    ]);
    expect(stderr).not.toContain('"level"');
    expect(stderr).not.toMatch(STACK_LINE);
    const [folder] = readdirSync(join(store, "logs"));
    const logged = readFileSync(join(store, "logs", folder!, "run.log"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === "could not store a result");
    expect(logged.map((line) => line.level)).toEqual([30, 30, 30, 30]);
  });

  it("exits 1 naming the worker and its log, once, when the worker processes crash in a loop", async ({
    expect,
    onTestFinished,
  }) => {
    // One slot: its six deaths end the run (each worker start costs a tsx start-up).
    const { code, stderr, logged } = await poolFailure(
      onTestFinished,
      "test/fixtures/crashingWorkers.graph.ts",
    );

    expect(code).toBe(1);
    expect(logged).toMatchObject({ level: 30, err: { code: "WORKER_CRASH_LOOP" } });
    expect(logged.err).not.toHaveProperty("stack");
    // Each replacement is warned of as it happens; the failure is said once, at the end.
    const message = `baton run: the run failed: ${codedMessage(logged.err.message, "WORKER_CRASH_LOOP")}\n`;
    expect(stderr.endsWith(message)).toBe(true);
    const before = stderr.slice(0, -message.length);
    // As on a terminal, though stderr is a pipe: pretty lines, not JSON, each an event's message
    // and its fields on one line.
    const lines = [...before.matchAll(/^\[[\d:.]+\] [A-Z]+: (.*?) (\{.*\})$/gm)];
    expect(lines.map(([, said]) => said)).toEqual(Array(5).fill("worker process replaced"));
    expect(lines.map(([, , fields]) => JSON.parse(fields!).worker)).toEqual(
      [2, 3, 4, 5, 6].map((n) => `local-1.${n}`),
    );
    expect(before).not.toContain('"level"');
    expect(message).toMatch(/the run failed: worker local-1\.6 \(pid \d+\) exited with code 9/);
    expect(message).toContain("cannot reach the licence server");
  });

  it("names the run's own workers' logs under a job failed as poison, where its message only said to look at them", async ({
    expect,
    onTestFinished,
  }) => {
    const { batonRun } = own(onTestFinished);
    const store = tempDir("baton-cli-store-", onTestFinished);
    // One slot: each worker that takes the job dies; the third loss fails it as poison.
    const { code, stderr } = await batonRun(
      "run",
      "test/fixtures/poisonJob.graph.ts",
      "--workers",
      "1",
      "--store",
      store,
    );
    expect(code).toBe(1);
    const [folder] = readdirSync(join(store, "logs"));
    const log = join(store, "logs", folder!, "worker-1.log");
    expect(stderr).toMatch(
      new RegExp(
        `^✗ exits \\w+ \\(poison, .*more workers\\. How their processes ended: local-1 exited with code 1, local-1\\.2 exited with code 1, local-1\\.3 exited with code 1\\. Their logs: ${log}$`,
        "m",
      ),
    );
    // What usually ends a worker so, without naming the workers again; nor does a line of the
    // workers lost: each is said once, on the failure's line.
    expect(stderr).toMatch(
      /\nexits \w+: 3 of its workers exited with code 1: did the job's handler call process\.exit\(1\), or throw where nothing catches it \(a timer, an event handler\)\?\neach failed attempt, with its stack: /,
    );
    expect(stderr).not.toContain("lost while running a job");
    expect(stderr).not.toContain("(connection broke)");
    expect(readFileSync(log, "utf8")).toContain("exits: ending this worker process");
  });

  it("says a full disk is full, in one line with exit 2, when the failed write names no file", async ({
    expect,
    onTestFinished,
  }) => {
    const { batonRun } = own(onTestFinished);
    // /dev/full fails every write with ENOSPC, through a handle whose error has no path.
    const { code, stderr } = await batonRun("viz", "--out", "/dev/full");
    expect(stderr).toBe(
      "baton viz: cannot write: no space left on the disk; free some space, or give a path on another disk [ENOSPC]\n",
    );
    expect(code).toBe(2);
  });

  it("says a stdout on a full disk in one line and exits 2, where an uncaught error printed its stack", async ({
    expect,
    onTestFinished,
  }) => {
    // /dev/full fails every write with ENOSPC, as `baton run --json > results.json` on a full disk.
    const full = openSync("/dev/full", "w");
    onTestFinished(() => closeSync(full));
    const { code, stderr } = await startOwnBaton(onTestFinished, ["version"], { stdoutTo: full })
      .exit;
    expect(stderr).toBe(
      "baton version: cannot write stdout: no space left on the disk, so what it printed there is cut short; free some space, or send stdout elsewhere [ENOSPC]\n",
    );
    expect(code).toBe(2);
  });

  it("a reader that closes its pipe early changes no exit code: 1 for a failed run with --json | head, 0 for a run whose stderr went away", async ({
    expect,
    onTestFinished,
  }) => {
    const { baton } = own(onTestFinished);
    const failed = baton(["run", "test/fixtures/failing.graph.ts", "--in-process", "--json"]);
    failed.child.stdout.destroy();
    const completed = baton(["run", PIPELINE, "--in-process", "--log-level", "info"]);
    completed.child.stderr.destroy();
    const [failedExit, completedExit] = await Promise.all([failed.exit, completed.exit]);
    // Exiting at once on stdout's EPIPE gave 0 before the run set its exit code.
    expect(failedExit.code).toBe(1);
    // An uncaught EPIPE on stderr, writing the summary, gave 1.
    expect(completedExit.code).toBe(0);
  });

  it("prints help with exit 0, a command's with help COMMAND, and refuses an unknown command with exit 2", async ({
    expect,
    onTestFinished,
  }) => {
    const { batonRun } = own(onTestFinished);
    const [help, nope, typo, helpLaunch] = await Promise.all([
      batonRun("help"),
      batonRun("nope"),
      batonRun("rnu"),
      batonRun("help", "launch"),
    ]);
    expect(helpLaunch.code).toBe(0);
    expect(helpLaunch.stdout).toMatch(/^usage: baton launch --world N/);

    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: baton <command> [options]");
    expect(help.stdout).toContain("run <graph module>");
    expect(nope.code).toBe(2);
    expect(nope.stdout).toBe("");
    expect(nope.stderr).toContain('baton: unknown command "nope"\n');
    expect(nope.stderr).toContain("usage: baton <command> [options]");
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('baton: unknown command "rnu"; did you mean baton run?\n');
  });

  it("refuses a command named after an object's property (toString, constructor) as unknown, instead of crashing", async ({
    expect,
    onTestFinished,
  }) => {
    const { batonRun } = own(onTestFinished);
    for (const name of ["toString", "constructor"]) {
      const { code, stderr } = await batonRun(name);
      expect(code, name).toBe(2);
      expect(stderr).toContain(`baton: unknown command "${name}"`);
      expect(stderr).not.toMatch(STACK_LINE);
    }
  });
});

describe("baton", () => {
  it("warns, and runs, when --workers starts more worker processes than the cores", async () => {
    const cores = availableParallelism();
    const { code, stderr } = await batonRun(
      "run",
      PIPELINE,
      "--no-store",
      "--workers",
      String(cores + 1),
    );

    expect(code).toBe(0);
    expect(stderr).toContain(
      `${cores + 1} worker processes on this machine's ${cores} cores: handlers that compute share the cores, so workers beyond them help only jobs that wait`,
    );
    expect(stderr).toContain("every job completed");
  });

  it("--slurm-unreachable-after 2s stops a --slurm run on a machine with no Slurm configuration after 2 s, not 30", async (context) => {
    if (spawnSync("squeue", ["--version"]).error !== undefined) {
      context.skip("squeue is not on the PATH");
    }
    const dir = tempDir("baton-cli-slurm-");
    const conf = join(dir, "slurm.conf");
    writeFileSync(conf, "");
    const started = Date.now();
    const { code, stderr } = await baton(
      ["run", "test/fixtures/slurm.graph.ts", "--slurm", "--slurm-unreachable-after", "2s"],
      { SLURM_CONF: conf },
    ).exit;

    expect(code).toBe(1);
    expect(stderr).toMatch(
      /baton run: the run failed: no Slurm command has succeeded in the \d+\.\d s since the pool started \(--slurm-unreachable-after, slurmPool's unreachableMs: 2\.0 s\)/,
    );
    expect(stderr).toContain("[SLURM_UNREACHABLE]");
    expect(Date.now() - started).toBeLessThan(25_000);
  });

  it("a --slurm run where Slurm's commands are missing fails saying so, without first printing how workers join it", async () => {
    // A PATH of nothing but an empty folder: no sbatch, no squeue.
    const empty = tempDir("baton-cli-no-slurm-");
    const { code, stderr } = await baton(
      ["run", "test/fixtures/slurm.graph.ts", "--slurm", "--listen", "127.0.0.1:0"],
      { PATH: empty },
    ).exit;

    expect(code).toBe(1);
    expect(stderr).toContain(
      "none of Slurm's commands (sbatch, squeue, scontrol, scancel) is on the PATH: they are not installed on this machine, or not on its PATH; run baton where they are (a login node of the cluster) or add their directory to PATH",
    );
    expect(stderr).toContain("[SLURM_MISSING]");
    expect(stderr).not.toContain("workers join this run with");
  });

  it("--inspect-unreachable-after 300ms gives up on an inspector that takes the connection but never answers, at 300 ms, not 5 s", async () => {
    // A hung inspector (stopped with SIGSTOP): the kernel accepts, nobody answers the upgrade.
    const sockets: Socket[] = [];
    const hung = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
    const url = `ws://127.0.0.1:${(hung.address() as AddressInfo).port}`;
    try {
      const { code, stderr } = await batonRun(
        "run",
        PIPELINE,
        "--in-process",
        "--inspect",
        url,
        "--inspect-unreachable-after",
        "300ms",
      );

      expect(code).toBe(0);
      // With 5 s, a run of a second ended first and gave up on it when closing (after 2 s),
      // saying "WebSocket was closed before the connection was established".
      // Said as on a terminal, though stderr is a pipe: one line, its fields after it.
      expect(stderr).toMatch(
        new RegExp(
          `^\\[[\\d:.]+\\] WARN: could not reach the inspector; .* \\{"url":"${url}","reason":"Opening handshake has timed out"\\}\n`,
          "m",
        ),
      );
      expect(stderr).not.toContain('"level"');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hung.close(resolve));
    }
  });

  it.runIf(process.getuid?.() === 0)(
    "says what a user may not do to a path they gave (enter, create in, write, read) and whose it is, instead of always to give a path they can write to",
    async () => {
      const dir = tempDir("baton-cli-denied-");
      chmodSync(dir, 0o755);
      const closed = join(dir, "closed");
      mkdirSync(closed, { mode: 0o700 });
      writeFileSync(join(closed, "train.graph.ts"), "export default [];\n");
      const taken = join(dir, "taken.md");
      writeFileSync(taken, "", { mode: 0o644 });
      const unreadable = join(dir, "their.graph.ts");
      writeFileSync(unreadable, "export default [];\n", { mode: 0o600 });
      const secret = join(dir, "run.secret");
      writeFileSync(secret, "00".repeat(32), { mode: 0o600 });
      const asNobody = (...args: string[]) => startBaton(args, { uid: 65534 }).exit;
      const [enter, read, create, write, secretRead] = await Promise.all([
        asNobody("run", join(closed, "train.graph.ts")),
        asNobody("run", unreadable),
        asNobody("viz", "--out", join(dir, "machines.md")),
        asNobody("viz", "--out", taken),
        asNobody(
          "worker",
          "--connect",
          "127.0.0.1:9",
          "--jobs",
          unreadable,
          "--secret-file",
          secret,
        ),
      ]);
      const nobody = "this user (nobody)";
      expect(enter.stderr).toBe(
        `baton run: cannot stat ${join(closed, "train.graph.ts")}: ${nobody} may not enter ${closed} (root's, mode 700), a directory on that path; give a path outside it, or run the command as root [EACCES]\n`,
      );
      expect(read.stderr).toBe(
        `baton run: cannot read ${unreadable}: ${nobody} may not read it (root's, mode 600); give a file you can read, or run the command as root [EACCES]\n`,
      );
      expect(create.stderr).toBe(
        `baton viz: cannot open ${join(dir, "machines.md")}: ${nobody} may not create anything in ${dir} (root's, mode 755); give a path in a directory you can write to, or run the command as root [EACCES]\n`,
      );
      expect(write.stderr).toBe(
        `baton viz: cannot open ${taken}: ${nobody} may not write it (root's, mode 644); give a path you can write to, or run the command as root [EACCES]\n`,
      );
      expect(secretRead.stderr).toContain(
        `cannot read secret file ${secret}: ${nobody} may not read it (root's, mode 600); give a file you can read, or run the command as root`,
      );
      for (const result of [enter, read, create, write, secretRead]) expect(result.code).toBe(2);
    },
  );

  it.runIf(process.getuid?.() === 0)(
    "a graph in a folder the user may not write in: the default store says to give --store DIR or --no-store, and --no-store keeps its logs in the user's own temp folder",
    async () => {
      const dir = tempDir("baton-cli-unwritable-");
      chmodSync(dir, 0o755);
      const graph = join(dir, "shared.graph.ts");
      writeFileSync(
        graph,
        `import { defineJobs, job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};\nexport const jobs = defineJobs({ one: (n: number) => n });\nexport default [job("one", 1)];\n`,
      );
      // Its own temp directory, as /tmp is (1777), so the test leaves nothing in the real one.
      const temp = join(dir, "tmp");
      mkdirSync(temp);
      chmodSync(temp, 0o1777);
      const asNobody = (...args: string[]) =>
        startBaton(args, { uid: 65534, env: { TMPDIR: temp } }).exit;
      const nobody = "this user (nobody)";
      const [kept, given, none] = await Promise.all([
        asNobody("run", graph, "--in-process"),
        asNobody("run", graph, "--in-process", "--store", join(dir, "store")),
        asNobody("run", graph, "--in-process", "--no-store"),
      ]);
      expect(kept.stderr).toBe(
        `baton run: the result store ${join(dir, ".baton")} (by default .baton beside the graph module) cannot be used: cannot mkdir ${join(dir, ".baton")}: permission denied: ${nobody} may not create anything in ${dir} (root's, mode 755); give this run a store you can write to (--store DIR), or keep no results (--no-store) [STORE_NOT_WRITABLE]\n`,
      );
      expect(kept.code).toBe(2);
      // A store it was told to make there is no other user's lock: it cannot be made.
      expect(given.stderr).toBe(
        `baton run: the result store ${join(dir, "store")} cannot be written: cannot mkdir ${join(dir, "store")}: permission denied: ${nobody} may not create anything in ${dir} (root's, mode 755); give the store (--store) another directory, one you can write to [STORE_NOT_WRITABLE]\n`,
      );
      expect(given.code).toBe(2);
      const own = join(temp, "baton-65534");
      expect(none.stderr).toContain(
        `baton run: .baton beside the graph module cannot be used (cannot mkdir ${join(dir, ".baton")}: permission denied: ${nobody} may not create anything in ${dir} (root's, mode 755)), so this run's logs go to ${join(own, "logs")}\n`,
      );
      expect(none.stderr).toContain("every job completed");
      expect(none.code).toBe(0);
      expect(statSync(own)).toMatchObject({ uid: 65534, mode: 0o40700 });
      const [folder] = readdirSync(join(own, "logs"));
      expect(readdirSync(join(own, "logs", folder!))).toContain("run.log");
      expect(existsSync(join(dir, ".baton"))).toBe(false);

      // That folder must be the user's own, closed to others: another's is refused.
      rmSync(own, { recursive: true });
      mkdirSync(own, { mode: 0o777 });
      chmodSync(own, 0o777);
      const squatted = await asNobody("run", graph, "--in-process", "--no-store");
      expect(squatted.stderr).toContain(
        `or else in ${own}, which is not a folder of this user's closed to others (it must be a directory of yours, mode 700)`,
      );
      expect(squatted.code).toBe(2);
    },
  );

  it("refuses a bad or busy --listen, a bad --inspect URL and an unknown flag with one line and exit 2, no stack", async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const { port } = busy.address() as AddressInfo;
    try {
      const [noPort, taken, unknownFlag, badInspect, spacedInspect, otherScheme] =
        await Promise.all([
          batonRun("run", PIPELINE, "--listen", "127.0.0.1"),
          batonRun("run", PIPELINE, "--listen", `127.0.0.1:${port}`),
          batonRun("sim", "--bogus"),
          batonRun("run", PIPELINE, "--inspect=localhost:8080"),
          // After a space too, an address is --inspect's, not a second graph module.
          batonRun("run", PIPELINE, "--inspect", "localhost:8080"),
          batonRun("run", "--inspect", "ftp://localhost:8080", PIPELINE),
        ]);
      expect(noPort.code).toBe(2);
      expect(noPort.stderr).toContain(
        '"127.0.0.1" is not an address baton can use: write HOST:PORT',
      );
      expect(taken.code).toBe(2);
      expect(taken.stderr).toContain(
        `cannot listen at 127.0.0.1:${port}: the port is in use; pick another, or port 0 for any free one [CONFIG]`,
      );
      expect(unknownFlag.code).toBe(2);
      expect(unknownFlag.stderr).toBe(
        "baton sim: unknown flag --bogus (baton sim --help lists its flags) [CONFIG]\n",
      );
      expect(unknownFlag.stderr).not.toContain("usage: baton run");
      expect(badInspect.code).toBe(2);
      expect(badInspect.stderr).toContain(
        "the inspector's URL must be a WebSocket URL such as ws://localhost:8080 (where @statelyai/inspect's createInspectorServer listens), not \"localhost:8080\" [CONFIG]",
      );
      for (const [inspect, url] of [
        [spacedInspect, "localhost:8080"],
        [otherScheme, "ftp://localhost:8080"],
      ] as const) {
        expect(inspect.code).toBe(2);
        expect(inspect.stderr).toContain(`such as ws://localhost:8080`);
        expect(inspect.stderr).toContain(`not "${url}" [CONFIG]`);
      }
      for (const { stderr } of [
        noPort,
        taken,
        unknownFlag,
        badInspect,
        spacedInspect,
        otherScheme,
      ]) {
        expect(stderr).not.toMatch(STACK_LINE);
        expect(stderr.trim().split("\n")).toHaveLength(1);
      }
    } finally {
      busy.close();
    }
  });

  it.each([
    ["SIGINT", 130, "Ctrl-C"],
    ["SIGTERM", 143, "SIGTERM"],
    ["SIGHUP", 129, "SIGHUP"],
  ] as const)(
    "cancels on %s: exits %i within seconds and leaves no process or secret behind",
    async (signal, exitCode, again) => {
      const markers = tempDir("baton-sigint-");
      const run = baton(["run", "test/fixtures/slow.graph.ts", "--workers", "2"], {
        BATON_TEST_MARKERS: markers,
      });
      const pid = run.child.pid!;
      // Starting tsx and two worker processes takes 2 s here, far longer on a loaded machine.
      const deadline = Date.now() + 30_000;
      while (readdirSync(markers).length < 2) {
        if (run.child.exitCode !== null) throw new Error(`baton exited early: ${run.stderr()}`);
        if (Date.now() > deadline) throw new Error(`no job started: ${run.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const started = descendantsOf(pid);

      const store = run.child.spawnargs.at(-1)!;
      expect(readdirSync(join(store, "run"))).toEqual([
        expect.stringMatching(/^graph-[0-9a-f]{16}\.lock$/),
        expect.stringMatching(/\.secret$/),
      ]);
      process.kill(pid, signal);
      const { code, stderr } = await within(run.exit, 5_000, `exiting after ${signal}`);

      expect(code).toBe(exitCode);
      expect(stderr).toContain(
        `cancelling (${signal}): waiting for running jobs to stop and for results to be stored, 10 s at most (${again} again to force)`,
      );
      expect(readdirSync(join(store, "run"))).toEqual([]);
      expect(stderr).toMatch(/^total\s+0\s+0\s+0\s+3\s+0$/m);
      expect(isGone(pid)).toBe(true);
      expect(started.filter((child) => !isGone(child))).toEqual([]);
    },
  );
});
