/**
 * What README.md quotes of baton's output is what baton prints: each quote is produced here by
 * the code that prints it, and looked for in the README, so a change of wording that leaves
 * the README behind fails. The same holds the defaults README.md, ARCHITECTURE.md and the
 * TSDoc of src/ (what an editor shows on hover) state to the constants the code has (a default
 * changed without its docs fails, and a TSDoc default in numbers that no entry holds fails
 * too, saying what to add), the options the
 * public functions take to README's code (an option added without a word fails), and the files
 * they name to files baton has (a file renamed or removed without its docs fails).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { MOST_GPUS } from "../../src/cli/resourceAmount.ts";
import { summaryTable } from "../../src/cli/summaryTable.ts";
import { JOB_OPTIONS, job } from "../../src/graph/job.ts";
import { DEFAULT_RETRIES } from "../../src/graph/planGraph.ts";
import {
  CLOSE_WAIT_MS,
  DEFAULT_DEAD_AFTER_MS,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_HELLO_TIMEOUT_MS,
} from "../../src/machines/connection.ts";
import { DEFAULT_LEASE_TIMEOUT_MS, DEFAULT_MAX_LOST } from "../../src/machines/jobBoard.ts";
import { DEFAULT_TEARDOWN_TIMEOUTS, teardownDeadlineMs } from "../../src/machines/teardown.ts";
import { WATCHDOG_GRACE_MS, WATCHDOG_TOLERANCE } from "../../src/machines/watchdog.ts";
import { RANK_WATCH_EVERY_MS } from "../../src/rank/rank.ts";
import { ENGINE_OPTIONS } from "../../src/runtime/checkEngineOptions.ts";
import { LAUNCH_OPTIONS } from "../../src/runtime/checkLaunchSpec.ts";
import { DEFAULT_MAX_HANDSHAKES } from "../../src/runtime/coordinatorServer.ts";
import {
  DEFAULT_MAX_UPDATES_PER_SECOND,
  SERVER_OPTIONS,
} from "../../src/runtime/dashboardServer.ts";
import {
  ENDED_DEPLOYMENT_KEPT_MS,
  KEEP_ENDED_DEPLOYMENTS,
} from "../../src/runtime/deploymentLogs.ts";
import {
  createEngine,
  DEFAULT_CANCEL_GRACE_MS,
  DEFAULT_PROGRESS_INTERVAL_MS,
} from "../../src/runtime/engine.ts";
import { IN_PROCESS_RESTARTS_PER_WORKER, POOL_OPTIONS } from "../../src/runtime/inProcessPool.ts";
import {
  INSPECTOR_CLOSE_TIMEOUT_MS,
  INSPECTOR_MAX_BUFFERED_BYTES,
  INSPECTOR_MAX_PENDING,
  INSPECTOR_OPEN_TIMEOUT_MS,
} from "../../src/runtime/inspector.ts";
import {
  DEFAULT_MAX_RESTARTS,
  DEFAULT_RESTART_WINDOW_MS,
  LOCAL_POOL_OPTIONS,
} from "../../src/runtime/localPool.ts";
import { MOST_KEPT_LOGS } from "../../src/runtime/mostKeptLogs.ts";
import { DEFAULT_RANK_GROUP_TIMEOUTS } from "../../src/runtime/rankGroup.ts";
import { REMOTE_GUARD_GRACE_MS, REMOTE_START_TIMEOUT_MS } from "../../src/runtime/remoteRank.ts";
import { STORE_FULL_WAIT_MS } from "../../src/runtime/resultWriter.ts";
import type { JobOutcome, RunResult } from "../../src/runtime/run.ts";
import { DEFAULT_KEEP_LOGS } from "../../src/runtime/runLogs.ts";
import { SLURM_COMMAND_TIMEOUT_MS } from "../../src/runtime/slurmCommands.ts";
import {
  DEFAULT_MAX_WORKERS,
  DEFAULT_POLL_MS,
  DEFAULT_STOP_GRACE_MS,
  DEFAULT_STOP_TIMEOUT_MS,
  DEFAULT_UNREACHABLE_MS,
  DEFAULT_WORKER_RESOURCES,
  IDLE_EXIT_MS,
  SLURM_POOL_OPTIONS,
  WORKER_RESTARTS,
} from "../../src/runtime/slurmPool.ts";
import {
  SSH_CALL_TIMEOUT_MS,
  SSH_CONNECT_TIMEOUT_MS,
  SSH_CONTROL_PERSIST_MS,
} from "../../src/runtime/sshHost.ts";
import { DEFAULT_WELCOME_TIMEOUT_MS, SILENCE_LIMIT_PINGS } from "../../src/runtime/worker.ts";
import { DEFAULT_ABORT_GRACE_MS } from "../../src/runtime/workerProcessOptions.ts";
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_MAX_FRAME_BYTES } from "../../src/runtime/wsNet.ts";
import { SIMULATE_OPTIONS } from "../../src/sim/checkSimulateOptions.ts";
import { DRAWN_WORLD } from "../../src/sim/drawnRankGroups.ts";
import { LIVENESS_BASE_MS, LIVENESS_PER_JOB_MS } from "../../src/sim/simulate.ts";
import { FAULT_HORIZON_MS, SIMULATE_DEFAULTS } from "../../src/sim/simulateDefaults.ts";
import { SEEDS_OPTIONS } from "../../src/sim/simulateSeeds.ts";
import {
  DEFAULT_KEEP_FINISHED_ACTORS,
  DEFAULT_MAX_GRAPH_JOBS,
} from "../../src/viz/dashboardModel.ts";
import { ROOT } from "../fixtures/batonCli.ts";

const README = readFileSync(join(ROOT, "README.md"), "utf8");
const ARCHITECTURE = readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8");
/**
 * Every doc comment of `src/`, its comment leaders taken out, as an editor shows it on hover:
 * the defaults TSDoc states in numbers are held to the constants, as README's are.
 */
const TSDOC = (readdirSync(join(ROOT, "src"), { recursive: true }) as string[])
  .filter((file) => file.endsWith(".ts"))
  .flatMap((file) =>
    [...readFileSync(join(ROOT, "src", file), "utf8").matchAll(/\/\*\*([\s\S]*?)\*\//g)].map(
      (comment) => comment[1]!.replace(/^[ \t]*\* ?/gm, ""),
    ),
  )
  .join("\n");

/** The folders of the repository whose files the docs name by path (`src/cli/main.ts`). */
const NAMED_ROOTS = ["src", "bench", "bin", "scripts", "examples", "test"];

/**
 * What `text` names in backticks outside its code blocks: each code span, whole, as Markdown
 * reads them (one may run over a line break, read as a space, and one opened by two backticks
 * may hold one). Paths are what a span is, so `src/a.ts` counts and a sentence naming one
 * does not.
 */
function backticked(text: string): string[] {
  const prose = text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
  return [...prose.matchAll(/(?<!`)(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g)].map((match) =>
    match[2]!.replace(/\n/g, " "),
  );
}

/**
 * The repository paths among `spans`: those under one of {@link NAMED_ROOTS} (and, under
 * test/, one of its folders: Node's own `test/parallel/…` is not baton's), leaving out
 * placeholders (`bench/NAME.ts`) and what a run makes (`examples/.baton/logs/`).
 */
function repositoryPaths(spans: string[]): string[] {
  const testFolders = readdirSync(join(ROOT, "test"));
  return spans.filter((span) => {
    const parts = span.replace(/\/$/, "").split("/");
    if (!/^[\w./-]+$/.test(span) || parts.length < 2 || !NAMED_ROOTS.includes(parts[0]!)) {
      return false;
    }
    if (parts[0] === "test" && !testFolders.includes(parts[1]!)) return false;
    return !parts.some((part) => part.startsWith(".") || /^[A-Z]+(\.|$)/.test(part));
  });
}

/** The names of every file under {@link NAMED_ROOTS}. */
function fileNames(): Set<string> {
  return new Set(
    NAMED_ROOTS.flatMap((root) =>
      readdirSync(join(ROOT, root), { recursive: true }).map((path) => basename(String(path))),
    ),
  );
}

/** A run whose one job failed as `outcome` says. */
function failedRun(outcome: Partial<JobOutcome>): RunResult {
  const id = "0287a67c56965a9a";
  const job = {
    id,
    kind: "parse",
    status: "failed",
    cause: "error",
    attempts: 1,
    cached: false,
    lostWorkers: [],
    ...outcome,
  } as unknown as JobOutcome;
  return {
    run: "r",
    ok: false,
    jobs: new Map([[id, job]]),
    counts: { completed: 0, failed: 1, skipped: 0, cancelled: 0, cached: 0 },
    durationMs: 1200,
    get: () => {
      throw new Error("not used");
    },
    toJSON: () => {
      throw new Error("not used");
    },
  };
}

describe("README.md's quotes of baton run's summary", () => {
  it("lists a job that threw a NonRetryableError as the README says", () => {
    const summary = summaryTable(
      failedRun({
        worker: "local-1",
        error: { name: "NonRetryableError", message: "the row has no id", retryable: false },
      }),
    );
    const listed = /^✗ parse \w+ (\(.*?\)):/m.exec(summary)?.[1];
    expect(listed).toMatch(/^\(error, 1 attempt.*not retried\)$/);
    expect(README).toContain(`\`baton run\` lists it as \`${listed}\``);
  });
});

/** `text` with each run of spaces and line breaks one space, as it reads. */
const asRead = (text: string) => text.replace(/\s+/g, " ");
const seconds = (ms: number) => `${ms / 1000} s`;
const minutes = (ms: number) => ms / 60_000;
const days = (ms: number) => ms / 86_400_000;
/** A count as TSDoc writes one, its thousands apart: `60 000`. */
const spaced = (n: number) => n.toLocaleString("en-US").replaceAll(",", " ");
const { termGraceMs, killWaitMs, killAgainWaitMs, sweepTermWaitMs, sweepKillWaitMs, pollMs } =
  DEFAULT_TEARDOWN_TIMEOUTS;
const { loadTimeoutMs, markerStaleMs, watchMs, drainMs } = DEFAULT_RANK_GROUP_TIMEOUTS;

/** The defaults the TSDoc of src/ states, each as the code's constant makes it. */
const TSDOC_DEFAULTS = [
  `Failed attempts retried before the job is terminal (default ${DEFAULT_RETRIES}: at most ${DEFAULT_RETRIES + 1} attempts)`,
  `Inputs are copied with \`toJson\` and \`retries\` defaults to ${DEFAULT_RETRIES}.`,
  `Losses of a worker while running one job before it is failed as poison (default ${DEFAULT_MAX_LOST})`,
  `Losses of a worker while running one job before it fails as poison (default ${DEFAULT_MAX_LOST})`,
  `A lease not renewed by a heartbeat for this long expires (default ${seconds(DEFAULT_LEASE_TIMEOUT_MS)}; 0 = never)`,
  `A lease without a heartbeat for this long expires (default ${seconds(DEFAULT_LEASE_TIMEOUT_MS)})`,
  `A connection that sends no hello within this is closed with 4003 (default ${seconds(DEFAULT_HELLO_TIMEOUT_MS)})`,
  `Interval of liveness probes (default ${seconds(DEFAULT_HEARTBEAT_MS)})`,
  `A worker silent for this long is closed with 4005, releasing its lease (default ${seconds(DEFAULT_DEAD_AFTER_MS)})`,
  `Frames larger than this are refused and their connection closed with 4004 (default ${DEFAULT_MAX_FRAME_BYTES / 2 ** 20} MiB)`,
  `Each end refuses messages over its \`maxFrameBytes\` (default ${DEFAULT_MAX_FRAME_BYTES / 2 ** 20} MiB)`,
  `How long \`cancel()\` waits for running jobs to stop (default ${seconds(DEFAULT_CANCEL_GRACE_MS)})`,
  `How many runs' log folders the default \`logs/\` keeps (default ${DEFAULT_KEEP_LOGS})`,
  `(\`ENOSPC\`, \`EDQUOT\`; default ${minutes(STORE_FULL_WAIT_MS)} minutes)`,
  `How long a run waits for room on a full store by default before it stops (${minutes(STORE_FULL_WAIT_MS)} minutes)`,
  `Failed probes in a row that trigger the abort stage (default ${WATCHDOG_TOLERANCE})`,
  `How long the re-probe window after an abort lasts (default ${WATCHDOG_GRACE_MS} ms)`,
  `Most updates a page receives per second (default ${DEFAULT_MAX_UPDATES_PER_SECOND})`,
  `one more fails the pool (default ${DEFAULT_MAX_RESTARTS})`,
  `the run rejects with a \`PoolError\` (\`WORKER_CRASH_LOOP\`) (default ${DEFAULT_MAX_RESTARTS})`,
  `The restart budget's sliding window, in ms (default ${spaced(DEFAULT_RESTART_WINDOW_MS)})`,
  `counts deaths in, in ms (default ${spaced(DEFAULT_RESTART_WINDOW_MS)}: a minute)`,
  `The most allocations (one worker each) held at once (default ${DEFAULT_MAX_WORKERS})`,
  `How often the queue is read and the pool rescaled (default ${DEFAULT_POLL_MS} ms)`,
  `before \`scancel\` (default ${seconds(DEFAULT_STOP_GRACE_MS)}, or \`abortGraceMs\``,
  `to confirm every allocation gone (default ${seconds(DEFAULT_STOP_TIMEOUT_MS)})`,
  `gives its node back (default ${minutes(IDLE_EXIT_MS)} min;`,
  `Time from launch for every rank to be ready (the barrier), default ${minutes(loadTimeoutMs)} min`,
  `No fresh heartbeat in the marker for this long means the rank is lost (default ${seconds(markerStaleMs)})`,
  `DESIGN §8: ${seconds(termGraceMs)} grace, ${seconds(killWaitMs)} after each KILL, ${seconds(sweepTermWaitMs)} and ${seconds(sweepKillWaitMs)} per swept pid, probes ≤ ${pollMs} ms apart.`,
  `in its TERM grace (${seconds(termGraceMs)} by default)`,
  `the newest ${KEEP_ENDED_DEPLOYMENTS}, and ${days(ENDED_DEPLOYMENT_KEPT_MS) === 7 ? "a week" : `${days(ENDED_DEPLOYMENT_KEPT_MS)} days`} of them.`,
  `How long connecting may take (\`ConnectTimeout\`, rounded up to seconds; default ${seconds(SSH_CONNECT_TIMEOUT_MS)})`,
  `How long one call may take before its ssh client is killed (default ${seconds(SSH_CALL_TIMEOUT_MS)})`,
  `outlives its last call (\`ControlPersist\`; default ${seconds(SSH_CONTROL_PERSIST_MS)})`,
  `How long the remote guard waits between TERM and KILL when the session drops (default ${seconds(REMOTE_GUARD_GRACE_MS)})`,
  `How long until the remote side reports the rank's pid (default ${seconds(REMOTE_START_TIMEOUT_MS)})`,
  `past this the oldest are dropped (default ${INSPECTOR_MAX_PENDING.toLocaleString("en-US")})`,
  `events are dropped until it catches up (default ${INSPECTOR_MAX_BUFFERED_BYTES / 2 ** 20} MiB)`,
  `for the connection to open, drain and close (default ${seconds(INSPECTOR_CLOSE_TIMEOUT_MS)})`,
  `How long the connection may take to open (default ${seconds(INSPECTOR_OPEN_TIMEOUT_MS)})`,
  `How often the launcher's pid and lease are checked (default ${RANK_WATCH_EVERY_MS} ms)`,
  `How often the launcher's pid and lease are checked (default ${RANK_WATCH_EVERY_MS} ms, as \`createRank\`'s)`,
  `before it is killed and counted as failed (default ${seconds(SLURM_COMMAND_TIMEOUT_MS)})`,
  `without a shell, with a timeout (default ${seconds(SLURM_COMMAND_TIMEOUT_MS)}, then SIGKILL)`,
  `Longest any Slurm command may take (default ${seconds(SLURM_COMMAND_TIMEOUT_MS)})`,
  `before the pool fails with \`SLURM_UNREACHABLE\` (default ${seconds(DEFAULT_UNREACHABLE_MS)};`,
  `by default beyond the newest ${KEEP_ENDED_DEPLOYMENTS}, after ${days(ENDED_DEPLOYMENT_KEPT_MS) === 7 ? "a week" : `${days(ENDED_DEPLOYMENT_KEPT_MS)} days`};`,
  `aborted handler gets to return before its thread is ended (default ${seconds(DEFAULT_ABORT_GRACE_MS)})`,
  `(\`baton worker --abort-grace\`; default ${DEFAULT_ABORT_GRACE_MS})`,
  `a duration such as \`7d\` or \`12h\`, or 0; default ${days(ENDED_DEPLOYMENT_KEPT_MS)}d)`,
  `the coordinator's own default gives a worker up after ${DEFAULT_DEAD_AFTER_MS / DEFAULT_HEARTBEAT_MS} pings'`,
  `Default: ${SILENCE_LIMIT_PINGS} × the ping interval`,
  `(${seconds(SILENCE_LIMIT_PINGS * DEFAULT_HEARTBEAT_MS)} at the default ${seconds(DEFAULT_HEARTBEAT_MS)})`,
  `and \`runWorker\` returns. Default ${seconds(DEFAULT_WELCOME_TIMEOUT_MS)}.`,
  `(default the Net's: ${DEFAULT_MAX_FRAME_BYTES / 2 ** 20} MiB over WebSocket)`,
  `How long \`connect\` waits for the coordinator to accept (default ${seconds(DEFAULT_CONNECT_TIMEOUT_MS)})`,
  `to answer its close before dropping the connection (default ${seconds(CLOSE_WAIT_MS)})`,
  `before the allocation fails (default ${WORKER_RESTARTS})`,
  `default: ${minutes(LIVENESS_BASE_MS)} minutes after the last fault ends, plus ${minutes(LIVENESS_PER_JOB_MS)} minutes for each job`,
  `Most connections still handshaking at once (default ${DEFAULT_MAX_HANDSHAKES})`,
  `How often a run emits \`progress\` (default ${DEFAULT_PROGRESS_INTERVAL_MS} ms)`,
  `What each worker offers (default \`{ cpus: ${DEFAULT_WORKER_RESOURCES.cpus} }\`)`,
  `cpus not given stays the pool's default ${DEFAULT_WORKER_RESOURCES.cpus}.`,
  `Size of the drawn graph (default ${SIMULATE_DEFAULTS.jobs},`,
  `In-process workers (default ${SIMULATE_DEFAULTS.workers},`,
  `a typo such as \`wrkers\` ran on the default ${SIMULATE_DEFAULTS.workers}`,
  `launches rank groups of up to \`world\` ranks (default ${DRAWN_WORLD})`,
  `A graph with more jobs than this is drawn by kind (default ${DEFAULT_MAX_GRAPH_JOBS})`,
  `older ones are dropped (default ${DEFAULT_KEEP_FINISHED_ACTORS})`,
  `a whole number or \`Infinity\` (default ${IN_PROCESS_RESTARTS_PER_WORKER} × count)`,
  `(a whole number of at least 1; default: ${seconds(FAULT_HORIZON_MS.default)}, ${seconds(FAULT_HORIZON_MS.heavy)} for \`"heavy"\`)`,
  `the default profile's 0–4 within ${seconds(FAULT_HORIZON_MS.default)}, the length of a lease`,
];

/**
 * Defaults TSDoc states in numbers that are no constant's value, each with why: the default
 * of a parameter written beside it, another program's, or a number in an example.
 */
const NOT_A_CONSTANT: [phrase: string, why: string][] = [
  [
    "The most values shown; the rest are counted (default 5)",
    "graphValueLines' parameter, beside it",
  ],
  ["a longer one is cut (default 200)", "graphValueLines' parameter, beside it"],
  ["a decimal number from 0 to `most` (default 2^53 - 1;", "Number.MAX_SAFE_INTEGER"],
  ["`least` (default 1) to `most`", "a parameter's default, beside it"],
  ["Port on 127.0.0.1 (default 0: any free port)", "port 0, the kernel's choice"],
  ["the mode (default 0600)", "a Files method's parameter"],
  ["with the mode set explicitly, default 0600)", "a Files method's parameter"],
  ["A URL-safe id of `size` characters (default 21)", "nanoid's size, nodeEntropy's parameter"],
  ["(default: one the kernel picks on 127.0.0.1)", "an address, not the default"],
  ["default `dep-` and 12 random characters", "launchGroup's `randomId(entropy, 12)`"],
  ["Default `127.0.0.1` when every rank", "an address"],
  ["Undefined: ssh's own default (22,", "ssh's, not baton's"],
  ["KILLs it takes to die (default 1;", "SimProcs' `?? 1`"],
  ["before its parent reaps it (default 0)", "SimProcs' `?? 0`"],
  ["in virtual ms from the simulation's start (default 0)", "a given launch's `atMs ?? 0`"],
  ["The simulation's own pid (default 100)", "SimProcs' `?? 100`"],
  ["The simulation's uid (default 1000)", "SimProcs' `?? 1000`"],
  ["First pid handed out (default 300)", "SimProcs' `?? 300`"],
];

describe.each([
  [
    "README.md",
    README,
    [
      `(\`leaseTimeoutMs\`, default ${seconds(DEFAULT_LEASE_TIMEOUT_MS)},`,
      `(\`helloTimeoutMs\`, ${seconds(DEFAULT_HELLO_TIMEOUT_MS)}; \`heartbeatMs\`, the ping interval, ${seconds(DEFAULT_HEARTBEAT_MS)}; \`deadAfterMs\`, ${seconds(DEFAULT_DEAD_AFTER_MS)};`,
      `\`maxFrameBytes\` (${DEFAULT_MAX_FRAME_BYTES / 2 ** 20} MiB)`,
      `a failed job is retried \`retries\` times (default ${DEFAULT_RETRIES}),`,
      `before it fails as poison, default ${DEFAULT_MAX_LOST};`,
      `up to \`--max-workers\` (default ${DEFAULT_MAX_WORKERS};`,
      `a worker that has had no job for ${minutes(IDLE_EXIT_MS)} minutes leaves the run`,
      `\`windowMs\` (${DEFAULT_MAX_RESTARTS} in ${seconds(DEFAULT_RESTART_WINDOW_MS)} by default;`,
      `how often the pool reads the queue and rescales (default ${seconds(DEFAULT_POLL_MS)};`,
      `before \`scancel\` (default ${seconds(DEFAULT_STOP_GRACE_MS)}, or the workers' \`abortGraceMs\` when longer)`,
      `\`STOP_UNCONFIRMED\`, naming them (default ${seconds(DEFAULT_STOP_TIMEOUT_MS)};`,
      `\`maxUpdatesPerSecond\`, default ${DEFAULT_MAX_UPDATES_PER_SECOND}, the most a page is sent a second`,
      `the default \`logs/\` keeps, default ${DEFAULT_KEEP_LOGS}:`,
      `a service running many graphs a day keeps ${DEFAULT_KEEP_LOGS},`,
      `\`--keep-logs N\` (at most ${MOST_KEPT_LOGS.toLocaleString("en-US")}:`,
      `default ${minutes(STORE_FULL_WAIT_MS)} minutes, after which it stops and rejects with \`STORE_FULL\``,
      `\`--store-full-wait\` (default ${minutes(STORE_FULL_WAIT_MS)}m)`,
      `\`--handler-thread\` ends such a handler after the grace, ${seconds(DEFAULT_ABORT_GRACE_MS)})`,
      `named after twice the abort grace, ${seconds(2 * DEFAULT_ABORT_GRACE_MS)},`,
      `\`--gpus\` takes at most ${MOST_GPUS.toLocaleString("en-US")},`,
      `once \`--load-timeout-ms\` is up, ${minutes(loadTimeoutMs)} min by default`,
      `after \`--grace-ms\`, ${seconds(termGraceMs)} by default`,
      `one whose heartbeat is ${seconds(markerStaleMs)} old`,
      `ended more than ${days(ENDED_DEPLOYMENT_KEPT_MS)} days ago, all but the newest ${KEEP_ENDED_DEPLOYMENTS} that ended`,
    ],
  ],
  [
    "ARCHITECTURE.md",
    ARCHITECTURE,
    [
      `Timeouts (\`TeardownTimeouts\`, all overridable): \`termGraceMs\` ${seconds(termGraceMs)}, \`killWaitMs\` ${seconds(killWaitMs)}, \`killAgainWaitMs\` ${seconds(killAgainWaitMs)}, \`sweepTermWaitMs\` ${seconds(sweepTermWaitMs)}, \`sweepKillWaitMs\` ${seconds(sweepKillWaitMs)}, \`pollMs\` ${pollMs} ms`,
      `(\`teardownDeadlineMs\`, ${seconds(teardownDeadlineMs(DEFAULT_TEARDOWN_TIMEOUTS))} by default,`,
      `\`markerStale\` (\`markerStaleMs\`, ${seconds(markerStaleMs)})`,
      `arms \`barrierTimeout\` (\`loadTimeoutMs\`, ${minutes(loadTimeoutMs)} min)`,
      `every \`watchMs\` (${watchMs} ms) the launcher reads`,
      `or \`drainMs\` (${seconds(drainMs)}) passes`,
      `below \`tolerance\` strikes (default ${WATCHDOG_TOLERANCE})`,
      `grace is DESIGN's ${seconds(WATCHDOG_GRACE_MS)}, or a sixth of \`leaseStaleMs\``,
      `\`keepLogs\` (${DEFAULT_KEEP_LOGS} by default,`,
      `up to \`retries\` (default ${DEFAULT_RETRIES}) the job is ready again`,
      `at \`maxLost\` (${DEFAULT_MAX_LOST}) losses the job fails as \`poison\``,
      `A hello must arrive within ${seconds(DEFAULT_HELLO_TIMEOUT_MS)} (4003).`,
      `no job for \`idleExitMs\` (default ${minutes(IDLE_EXIT_MS)} min;`,
      `\`graceMs\` (${seconds(DEFAULT_STOP_GRACE_MS)}, or the workers' \`abortGraceMs\` when that is longer)`,
      `after \`stopTimeoutMs\` (${seconds(DEFAULT_STOP_TIMEOUT_MS)}) it rejects with \`STOP_UNCONFIRMED\``,
      `diffs at most ${DEFAULT_MAX_UPDATES_PER_SECOND} times a second (\`maxUpdatesPerSecond\`)`,
    ],
  ],
  ["TSDoc (src/)", TSDOC, TSDOC_DEFAULTS],
])("the defaults %s states", (_doc, text, phrases) => {
  it.each(phrases)("are the code's: %s", (phrase) => {
    expect(asRead(text)).toContain(phrase);
  });
});

/**
 * Where `text` states a default in numbers, as it reads: `(default 30 s)`, `default: 5`,
 * `defaults to 3`, `by default before it stops (5 minutes)`: the word, then its first number
 * within a few words.
 */
function statedDefaults(text: string): { at: number; end: number }[] {
  return [...text.matchAll(/\bdefaults?\b[^.;,)]{0,30}?(?<![§\d])\d+/gi)].map((match) => ({
    at: match.index,
    end: match.index + match[0].length,
  }));
}

/** Where `phrase` stands in `text`, each place. */
function placesOf(text: string, phrase: string): { from: number; to: number }[] {
  const places: { from: number; to: number }[] = [];
  for (let at = text.indexOf(phrase); at !== -1; at = text.indexOf(phrase, at + 1)) {
    places.push({ from: at, to: at + phrase.length });
  }
  return places;
}

describe("the defaults TSDoc states", () => {
  it("are each held to the code's constant by an entry of TSDOC_DEFAULTS, or said in NOT_A_CONSTANT why none", () => {
    const read = asRead(TSDOC.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, ""));
    const held = [...TSDOC_DEFAULTS, ...NOT_A_CONSTANT.map(([phrase]) => phrase)].flatMap(
      (phrase) => placesOf(read, asRead(phrase)),
    );
    const unheld = statedDefaults(read)
      .filter(({ at, end }) => !held.some(({ from, to }) => from <= at && end <= to))
      .map(({ at, end }) => read.slice(Math.max(0, at - 60), end + 20));
    expect(
      unheld,
      "a TSDoc comment states a default in numbers that no test holds to the code: add its phrase to TSDOC_DEFAULTS in test/unit/readmeQuotes.test.ts, the number made from the constant the code uses (as `(default ` + seconds(MY_DEFAULT_MS) + `)`), or, where no constant is that default, to NOT_A_CONSTANT with why",
    ).toEqual([]);
  });
});

describe.each([
  ["createEngine", ENGINE_OPTIONS],
  ["inProcessPool", POOL_OPTIONS],
  ["localPool", LOCAL_POOL_OPTIONS],
  ["slurmPool", SLURM_POOL_OPTIONS],
  ["launchGroup", LAUNCH_OPTIONS],
  ["DashboardServer.start", SERVER_OPTIONS],
  ["job", JOB_OPTIONS],
  ["simulate", SIMULATE_OPTIONS],
  ["simulateSeeds", SEEDS_OPTIONS],
])("README.md's options of %s", (_api, options) => {
  it("name every option it takes, in code", () => {
    const code = new Set(
      [...backticked(README), ...README.matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)].flatMap(
        (span) => (typeof span === "string" ? span : span[1]!).match(/\w+/g) ?? [],
      ),
    );
    expect(Object.keys(options).filter((name) => !code.has(name))).toEqual([]);
  });
});

describe.each([
  ["README.md", README],
  ["ARCHITECTURE.md", ARCHITECTURE],
])("the files %s names", (_doc, text) => {
  it("exist where it says, each path it gives", () => {
    const missing = repositoryPaths(backticked(text)).filter(
      (path) => !existsSync(join(ROOT, path)),
    );
    expect(missing).toEqual([]);
  });

  it("exist somewhere, each camelCase file name it gives without a folder", () => {
    const names = fileNames();
    const missing = backticked(text).filter(
      (span) => /^[a-z]+[A-Z]\w*(\.\w+)*\.(ts|mts|mjs)$/.test(span) && !names.has(span),
    );
    expect(missing).toEqual([]);
  });
});

describe("README.md, to a user of the installed package", () => {
  it("says how to run a program of theirs in TypeScript, which the Node baton supports does not run itself", () => {
    const { engines } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      engines: { node: string };
    };
    // Node runs a .ts file itself only from 22.18 on (23.6 for 23): not baton's oldest, 20.
    expect(Number(/\d+/.exec(engines.node)?.[0])).toBeLessThan(22);
    expect(README.replace(/\s+/g, " ")).toContain(
      'Node 20 runs no `.ts` file itself (`Unknown file extension ".ts"`): run a program of yours in TypeScript with tsx (`npm install -D tsx`, then `npx tsx app.ts`)',
    );
  });

  it("says what result.jobs is, a Map, whose outcomes Object.values does not see", async () => {
    const spec = job("double", 21);
    const result = await createEngine({ jobs: { double: (n: number) => n * 2 }, workers: 1 }).run([
      spec,
    ]);
    expect(result.jobs).toBeInstanceOf(Map);
    expect(Object.values(result.jobs)).toEqual([]);
    expect(README.replace(/\s+/g, " ")).toContain(
      "`result.jobs` holds every outcome by id (a `Map`: `result.jobs.values()`, not `Object.values`)",
    );
  });
});
