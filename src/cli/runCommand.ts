import { join, resolve } from "node:path";
import type { Logger } from "pino";
import type { InspectionEvent } from "xstate";
import { ConfigError, PoolError, SlurmError, StoreError } from "../errors.ts";
import { formatDuration } from "../formatDuration.ts";
import type { Resources } from "../graph/job.ts";
import { checkSbatchOptions } from "../runtime/checkSbatchOptions.ts";
import { checkConnect, checkConnectListens } from "../runtime/coordinatorAddress.ts";
import { DashboardServer } from "../runtime/dashboardServer.ts";
import {
  endedLogsRetention,
  KEEP_ENDED_DEPLOYMENTS,
  KEEP_ENDED_LOGS_ENV,
  parseEndedLogsRetention,
} from "../runtime/deploymentLogs.ts";
import { createEngine } from "../runtime/engine.ts";
import { lockGraph, type RunRecord } from "../runtime/graphLock.ts";
import { inProcessPool } from "../runtime/inProcessPool.ts";
import {
  checkInspectorUrl,
  connectInspector,
  DEFAULT_INSPECTOR_URL,
  INSPECTOR_OPEN_TIMEOUT_MS,
} from "../runtime/inspector.ts";
import { loadJobs } from "../runtime/jobModule.ts";
import { localPool } from "../runtime/localPool.ts";
import { localWorkerLogOf } from "../runtime/localWorkerNames.ts";
import { createLogger, LOG_LEVELS } from "../runtime/logger.ts";
import { moduleSource } from "../runtime/moduleSource.ts";
import { MOST_KEPT_LOGS } from "../runtime/mostKeptLogs.ts";
import { nodeEntropy } from "../runtime/nodeEntropy.ts";
import { STORE_FULL_WAIT_MS } from "../runtime/resultWriter.ts";
import type { RunResult } from "../runtime/run.ts";
import {
  DEFAULT_KEEP_LOGS,
  endUnstartedRunLogs,
  markRunLogsEnded,
  pruneRunLogs,
  runLogsDir,
} from "../runtime/runLogs.ts";
import { removeGoneRegistrations } from "../runtime/runRegistration.ts";
import {
  DEFAULT_MAX_WORKERS,
  DEFAULT_UNREACHABLE_MS,
  IDLE_EXIT_MS,
  slurmPool,
} from "../runtime/slurmPool.ts";
import { graphOf, importUserModule, jobsOf } from "../runtime/userModule.ts";
import { COORDINATOR_OWN_FILES, checkWorkerCount } from "../runtime/workerCountLimit.ts";
import { DEFAULT_ABORT_GRACE_MS } from "../runtime/workerProcessOptions.ts";
import { parseListenAddress } from "../runtime/wsNet.ts";
import { batonCommand } from "./batonCommand.ts";
import { batonDirBesideGraph, besideGraph } from "./batonDirBesideGraph.ts";
import { choiceFlag } from "./choiceFlag.ts";
import { closeDashboard } from "./closeDashboard.ts";
import { codedMessage } from "./codedMessage.ts";
import { commandCatalog } from "./commandCatalog.ts";
import { dryRunReport } from "./dryRunReport.ts";
import { durationFlag } from "./durationFlag.ts";
import { emptyFlags } from "./emptyFlags.ts";
import { flushed } from "./flushed.ts";
import { handlersLeftBehind } from "./handlersLeftBehind.ts";
import { joinAddress, joinHint } from "./joinHint.ts";
import { joinWorkersAdvice } from "./joinWorkersAdvice.ts";
import { terminalStreams } from "./liveLine.ts";
import { loadLoggingCause } from "./loadLoggingCause.ts";
import { parseFlags } from "./parseFlags.ts";
import { poolWatch } from "./poolWatch.ts";
import { printHelp } from "./printHelp.ts";
import { ProgressBar } from "./progressBar.ts";
import { registerWithoutLock } from "./registerWithoutLock.ts";
import { resultJson } from "./resultJson.ts";
import { SIGNAL_EXIT, STOP_SIGNALS, type StopSignal } from "./signalExit.ts";
import { slurmResourcesAdvice, slurmResourcesFlag } from "./slurmResourcesFlag.ts";
import { summaryTable } from "./summaryTable.ts";
import { portGivenToUi, uiPortFlag, withoutUi } from "./uiPortFlag.ts";
import { wholeNumberFlag } from "./wholeNumberFlag.ts";

export const RUN_USAGE = `usage: ${commandCatalog.run.usage}

Runs a graph of jobs and waits for it to finish.

  --jobs FILE        job module (kind → handler) (default: the graph module's \`jobs\`
                     export)
  --workers N        worker processes to start on this machine, such as 8 (default: one
                     per core; 0 = only workers that join with \`baton worker\`); at most
                     what its memory holds (64 MiB each) and ulimit -u allows (12 threads
                     each); more than the cores only helps jobs that wait, and is warned
                     about; with --in-process: the workers inside this process (1 or more)
  --listen HOST:PORT where workers connect, such as 0.0.0.0:7000 for workers on other
                     machines; port 0 takes a free one (default: 127.0.0.1:0, and no
                     socket at all with --in-process)
  --connect HOST:PORT
                     the address workers on other machines reach this run at, when it is
                     not --listen's, such as login1:7000 for --listen 0.0.0.0:7000: each
                     --slurm worker's --connect and the join command printed; only with
                     --listen (default: --listen; for Slurm workers a wildcard host
                     becomes this machine's host name)
  --secret-file FILE the secret workers prove, kept in this file (hex, chmod 600) for run
                     after run, and made when missing; with a fixed --listen, workers
                     started with baton worker --retry-for then join this run started again
                     after a crash, or a later one (default: a new secret for each run, in
                     the store's run/ folder, removed when the run ends)
  --store DIR        result store (default: .baton/ beside the graph module, which must
                     be a folder you can write in); a rerun skips the jobs whose results
                     are stored there
  --force            recompute every job, even those with stored results (default: reuse
                     them)
  --store-read-only  reuse the results stored in --store (or .baton beside the graph module)
                     without writing anything there: a read-only mount, a colleague's store;
                     what this run computes is not stored, so a rerun computes it again;
                     its logs go where --no-store puts them, never into that store (with
                     .baton as the store, to baton-UID/logs/ in the temp directory), and
                     the run says where
  --store-full-wait DURATION
                     how long to wait when the store's disk has no room for results
                     (they are held, no job starts and no attempt is spent; the run says
                     so) before stopping the run, keeping what was stored, such as 30s or
                     1h (default ${STORE_FULL_WAIT_MS / 60_000}m)
  --fail-fast        stop at the first job that fails for good (after its retries): the
                     jobs running are cancelled, none starts (default: the rest goes on)
  --dry-run          plan and check the graph and look its jobs up in the store, then say
                     what a run would do (per kind: jobs, stored, to run) without starting
                     anything or writing a file; with --json, the plan as JSON
  --no-store         keep no results: nothing is reused and nothing is written (each result
                     costs the store two fsyncs, which caps tiny jobs at several hundred a
                     second); logs still go to .baton/logs/ beside the graph module, or
                     where you may not write there, to baton-UID/logs/ in the temp directory
  --handler-thread   worker processes run the job handlers on a thread of their own, so that
                     a handler's synchronous work (minutes of computation) never keeps a
                     worker from answering the coordinator's pings; each job then costs
                     about 0.1 ms of CPU more (default: on the connection's thread)
  --abort-grace DURATION
                     worker processes give an aborted job's handler this long to return
                     (to save a checkpoint) before they go on without it, such as 30s, and
                     the run waits as long for them when it ends (baton worker
                     --abort-grace); with --in-process, baton exits once the handlers it
                     runs have had this long since their abort, or since the run ended,
                     naming any that did not stop (default ${DEFAULT_ABORT_GRACE_MS / 1000}s)
  --in-process       run the workers inside this process instead (no sockets; with --listen
                     and --secret-file, workers started with baton worker join them)
  --slurm            run the workers in Slurm allocations (one worker each), scaled to the
                     jobs ready or running; --listen must then be reachable from the nodes
  --max-workers N    with --slurm: the most allocations at once, such as 16 (default ${DEFAULT_MAX_WORKERS}); at
                     most this process's ulimit -n less ${COORDINATOR_OWN_FILES} (each worker's connection is
                     an open file here)
  --partition P      with --slurm: sbatch --partition, such as cpu (default: Slurm's own)
  --slurm-resources cpus=N,gpus=N,memory=MIB
                     with --slurm: what each worker offers to the jobs' requires, asked of
                     Slurm as --cpus-per-task, --mem and --gres=gpu:N, such as
                     cpus=4,memory=16384,gpus=1 (memory in MiB, no unit; each name at most
                     once; default cpus=1 and nothing else)
  --slurm-opt=OPT    with --slurm: one more sbatch option (repeatable; the = is needed),
                     such as --slurm-opt=--time=1:00:00 --slurm-opt=--qos=low; not one
                     the pool sets itself (--job-name, --array, --output, --error) nor
                     what each allocation gets (--cpus-per-task, --mem, --gpus: give
                     --slurm-resources)
  --slurm-unreachable-after DURATION
                     with --slurm: stop the run (SLURM_UNREACHABLE) when no Slurm command
                     has worked this long after the start, such as 90s or 5m (default
                     ${DEFAULT_UNREACHABLE_MS / 1000}s); once one has worked, a failing one is retried as long as the
                     run lasts
  --slurm-idle-exit DURATION
                     with --slurm: a worker with no job for this long leaves the run and
                     its allocation ends, giving its node back (a job sent to it as it
                     leaves runs elsewhere; allocations are submitted again when jobs come),
                     such as 1m or 30m, or never (default ${IDLE_EXIT_MS / 60_000}m)
  --json             print the result as JSON on stdout (default: a table on stderr,
                     with the values of the jobs the graph module exports)
  --log-level L      ${LOG_LEVELS.join(" | ")}
                     (default: warn): for stderr and the worker processes' logs
                     (worker-N.log); the run's own log, run.log, takes info too (both in
                     a folder per run in the store's logs/)
  --keep-logs N      keep the log folders of the last N runs (default ${DEFAULT_KEEP_LOGS}, at most
                     ${MOST_KEPT_LOGS}); older ones are removed when a run starts, unless written
                     in the last day
  --keep-ended-logs COUNT[,AGE]|forever
                     for rank jobs, how long the logs of this user's ended deployments
                     stay in their state dir: COUNT[,AGE] keeps the newest COUNT (1 to
                     ${MOST_KEPT_LOGS}) and any that ended within AGE (7d, 12h, or 0; default
                     7d), such as 5,2d; forever keeps them all (default:
                     $${KEEP_ENDED_LOGS_ENV}, else ${KEEP_ENDED_DEPLOYMENTS},7d); for this run's own workers (one
                     started with baton worker reads its own)
  --inspect [URL]    stream XState inspection events to a Stately inspector
                     (default ${DEFAULT_INSPECTOR_URL}); secrets are never sent, inputs
                     and results are cut to 1 KiB
  --inspect-unreachable-after DURATION
                     with --inspect: an inspector that has not taken the connection this
                     long after the start is unreachable (one warning; its events are
                     dropped and the run goes on), such as 30s (default ${INSPECTOR_OPEN_TIMEOUT_MS / 1000}s)
  --ui               serve a live dashboard on 127.0.0.1 (its URL, with a token, is
                     printed on stderr); it closes when the run ends
  --ui-port P        the dashboard's port, such as 8080 (default: any free port)
  --ui-keep          keep the dashboard open after the run until Ctrl-C
  -h, --help         this help

Exit code: 0 when every job completed, 1 when some did not or the workers failed (a
crash loop, Slurm), 2 for bad usage or a bad graph, 130 when interrupted (143 on
SIGTERM, 129 on SIGHUP, 131 on SIGQUIT). Ctrl-C, SIGTERM, SIGHUP (the terminal closed, the
ssh session dropped) or SIGQUIT cancels (handlers see their AbortSignal, local workers
stop); a second one stops at once. One after the run has failed (its workers, a full
store), or while it stops because its workers failed or its store stayed full, changes
nothing: the exit code stays 1.`;

/** Why the run was cancelled, by the signal that cancelled it: the reason its jobs are given. */
const CANCELLED_BY: Record<StopSignal, string> = {
  SIGINT: "interrupted (Ctrl-C)",
  SIGTERM: "terminated (SIGTERM)",
  SIGHUP: "hung up (SIGHUP)",
  SIGQUIT: "quit (SIGQUIT)",
};

/** `baton run`: plans, runs and reports a graph. Returns the exit code. */
export async function runCommand(argv: string[]): Promise<number> {
  const { values, positionals, mistake } = parseFlags("run", {
    args: withInspectUrl(argv),
    allowPositionals: true,
    options: commandCatalog.run.flags,
  });
  if (values.help) return printHelp(RUN_USAGE, mistake);
  emptyFlags("run", values, ["jobs", "secret-file", "store", "partition", "slurm-resources"]);
  const portToUi = portGivenToUi(positionals, values.ui);
  if (portToUi) throw portToUi;
  const graphPath = positionals[0];
  if (!graphPath || positionals.length > 1) {
    throw new ConfigError(
      positionals.length > 1
        ? `give one graph module, not ${positionals.length} (${positionals.join(", ")}) (baton run --help shows how)`
        : "give the graph module to run, such as baton run examples/pipeline.graph.ts (baton run --help shows how)",
    );
  }
  const level = choiceFlag("--log-level", values["log-level"] as string, LOG_LEVELS);
  const inProcess = values["in-process"];
  if (inProcess && values.workers === "0") {
    throw new ConfigError(
      "--workers 0 with --in-process runs no worker: --in-process runs the workers inside this process (1 or more); for only workers that join with baton worker, leave out --in-process",
    );
  }
  const count = wholeNumberFlag("--workers", values.workers, "a number of workers", {
    least: inProcess ? 1 : 0,
  });
  if (count !== undefined) {
    checkWorkerCount("--workers", count, inProcess ? "inProcess" : "processes");
  }
  if (inProcess && values["handler-thread"]) {
    throw new ConfigError(
      "--handler-thread is for worker processes, and --in-process runs the handlers inside this process: leave one out",
    );
  }
  const abortGraceMs = durationFlag("--abort-grace", values["abort-grace"]);
  if (values.listen !== undefined) parseListenAddress(values.listen);
  checkConnect("", values.connect, "--connect");
  checkConnectListens(values.connect, values.listen, "baton run");
  // Only worker processes get a secret file of the run's: one made for --in-process is lost.
  if (inProcess && values.listen !== undefined && values["secret-file"] === undefined) {
    throw new ConfigError(
      "--in-process with --listen: a worker joins only with the run's secret, which --in-process keeps in memory; add --secret-file FILE to keep it in a file workers can read (baton run then prints how they join), or leave out --listen",
    );
  }
  if (values.inspect !== undefined) checkInspectorUrl(values.inspect);
  const inspectorOpenMs = inspectorOpenFlag(values);
  const slurm = checkSlurmFlags(values);
  const uiPort = uiPortFlag(values["ui-port"], { ui: values.ui });
  if (values["ui-keep"] && !values.ui) throw withoutUi("--ui-keep");
  const given = (flags: readonly (keyof typeof values)[]) =>
    flags.find((flag) => values[flag] !== undefined && values[flag] !== false);
  const keeping = given(["store", "force", "store-full-wait", "store-read-only"]);
  if (values["no-store"] && keeping !== undefined) {
    throw new ConfigError(`--no-store keeps no results, so it does not go with --${keeping}`);
  }
  const readOnly = values["store-read-only"];
  const writing = given(["force", "store-full-wait"]);
  if (readOnly && writing !== undefined) {
    throw new ConfigError(
      `--store-read-only reuses the stored results and writes none, so it does not go with --${writing}`,
    );
  }
  const storeFullWaitMs = durationFlag("--store-full-wait", values["store-full-wait"]);
  const dryRun = values["dry-run"];
  const watcher = (["ui", "ui-keep", "inspect"] as const).find(
    (flag) => values[flag] !== undefined && values[flag] !== false,
  );
  if (dryRun && watcher) {
    throw new ConfigError(`--dry-run starts nothing to watch: leave out --${watcher}`);
  }
  const keepLogs =
    wholeNumberFlag("--keep-logs", values["keep-logs"], "a whole number of runs", {
      most: MOST_KEPT_LOGS,
      beyond: "to keep a run's logs for good, copy its folder out of the store's logs/",
    }) ?? DEFAULT_KEEP_LOGS;
  // Rank jobs read it where they run: this run's workers inherit it, a bad one fails here.
  if (values["keep-ended-logs"] !== undefined) {
    parseEndedLogsRetention(values["keep-ended-logs"], "--keep-ended-logs");
    process.env[KEEP_ENDED_LOGS_ENV] = values["keep-ended-logs"];
  } else endedLogsRetention(process.env);
  /** The store a signal before the run started names: refined once the store is settled. */
  let storeNamed = values["no-store"] ? undefined : (values.store ?? besideGraph(graphPath));
  let locking: ReturnType<typeof lockGraph> | undefined;
  /** What lists a run that takes no lock for baton status. */
  let registration: RunRecord | undefined;
  /** That registration as it is made: a stop signal before the run lets it go once made. */
  let registering: Promise<RunRecord | undefined> | undefined;
  // A stop signal before the run has started, from here on (loading the graph module can take
  // seconds), has nothing to cancel: the lock (or registration) goes and the command ends as
  // the signal asks, saying so. Node's default, to end at once, said nothing (thirty-seventh
  // session: Ctrl-C in the first seconds of baton run --in-process) and left a lock taken for
  // baton status to list as a dead run's. From the lock on, startup goes no further than the
  // step under way (`starting`), which the handler lets finish before it lets go of what
  // startup holds: a startup that went on (its log, its pool) beside the release starved it on
  // a loaded machine past the fallback's second, and the lock was left.
  /** The stop signal that came before the run started. */
  let stoppedBy: StopSignal | undefined;
  /** The startup step under way once the lock is being taken. */
  let step: Promise<unknown> | undefined;
  /** The log folder of a run that had not started, once its log is made. */
  let unstartedLogs: { dir: string; logger: Logger } | undefined;
  /** Runs a startup step; should a stop signal come meanwhile, startup ends there. */
  const starting = async <T>(made: Promise<T>): Promise<T> => {
    step = made;
    const value = await made;
    if (stoppedBy !== undefined) await new Promise<never>(() => {});
    return value;
  };
  const beforeRun = (signal: StopSignal) => {
    if (stoppedBy !== undefined) {
      process.stderr.write(
        `\nstopping now (a second ${signal}); a lock left behind is taken over by the next baton run\n`,
      );
      process.exit(SIGNAL_EXIT[signal]);
    }
    stoppedBy = signal;
    const store =
      storeNamed === undefined
        ? "no result is kept (--no-store)"
        : `the store ${storeNamed} is as it was`;
    process.stderr.write(
      `\nstopped (${signal}) before the run started: no job had started, so none was cancelled, and ${store}; the same baton run again starts the run\n`,
    );
    exitReleasing(
      signal,
      (async () => {
        await step?.catch(() => undefined);
        await (await locking?.catch(() => undefined))?.release();
        await (await registering?.catch(() => undefined))?.release();
        if (unstartedLogs) await endUnstartedRunLogs(unstartedLogs.dir, unstartedLogs.logger);
      })(),
    );
  };
  const listenBeforeRun = (on: boolean) => {
    for (const signal of STOP_SIGNALS) process[on ? "on" : "off"](signal, beforeRun);
  };
  listenBeforeRun(true);
  try {
    const graphModule = await loadLoggingCause({ level }, () => importUserModule(graphPath));
    // A module that is no graph module is told so before it is asked for handlers; a promise it
    // exports as its graph is awaited before another module loads, so that its rejection is
    // this command's error, not an unhandled one.
    const graph = await graphOf(graphModule, graphPath);
    const jobsPath = values.jobs ?? graphPath;
    const jobsFile = values.jobs;
    const jobsModule = jobsFile
      ? await loadLoggingCause({ level }, () => importUserModule(jobsFile))
      : graphModule;
    const jobs = loadJobs(jobsOf(jobsModule, jobsPath), moduleSource(jobsPath));
    // A dry run only looks at the store: it makes nothing, and what it cannot read holds nothing.
    // A store only read keeps the run's own files where --no-store does, never in that store.
    const readsOnly = readOnly ? (values.store ?? besideGraph(graphPath)) : undefined;
    const batonDir =
      (values.store === undefined || readOnly) && !dryRun
        ? batonDirBesideGraph(graphPath, {
            keepsResults: !values["no-store"] && !readOnly,
            readsOnly,
          })
        : undefined;
    // A read-only run says where its logs go when it says what it reuses.
    if (batonDir?.instead !== undefined && !readOnly) {
      process.stderr.write(
        `baton run: .baton beside the graph module cannot be used (${batonDir.instead}), so this run's logs go to ${join(batonDir.dir, "logs")}\n`,
      );
    }
    const storeDir = readsOnly ?? values.store ?? batonDir?.dir ?? besideGraph(graphPath);
    /** Where the run's logs and run files go: the store's folder, unless the store is only read. */
    const filesDir = readOnly ? (batonDir?.dir ?? storeDir) : storeDir;
    const logsRoot = join(filesDir, "logs");
    const logsDir = runLogsDir(logsRoot, Date.now(), nodeEntropy().id(8));
    /**
     * The flag with which this run takes no graph lock, having no store it writes to guard; a
     * dry run, which writes nothing, neither locks nor registers.
     */
    const withoutLock = values["no-store"]
      ? "--no-store"
      : readOnly
        ? "--store-read-only"
        : undefined;
    if (storeNamed !== undefined) storeNamed = storeDir;
    // A second run of this graph on this store fails here, before it writes anything.
    locking =
      withoutLock === undefined && !dryRun
        ? lockGraph(storeDir, graphPath, { logs: logsDir })
        : undefined;
    let lock: Awaited<typeof locking>;
    try {
      lock = await starting(locking ?? Promise.resolve(undefined));
    } catch (error) {
      listenBeforeRun(false);
      throw error;
    }
    try {
      // Only now the run's log, so that a module or graph that does not load leaves no empty one;
      // a dry run writes nothing, not even its log.
      const tty = process.stderr.isTTY === true && !values.json && !dryRun;
      const bar = tty ? new ProgressBar(process.stderr) : undefined;
      // What a handler in this process (--in-process) prints goes above the bar, not after it.
      const unadopt = bar?.adopt(terminalStreams());
      /** Writes `text` on stderr, above the progress bar on a terminal. */
      const say = (text: string) => (bar ? bar.print(text) : process.stderr.write(text));
      // Its stderr is for people, piped to a file or not: the same lines as on a terminal, not
      // JSON among the human lines; run.log keeps the JSON.
      const logger = createLogger({
        level,
        pretty: true,
        ...(!dryRun && { file: join(logsDir, "run.log") }),
        ...(bar && { stderr: say }),
      });
      if (!dryRun) unstartedLogs = { dir: logsDir, logger };
      if (lock?.tookOver) logger.info({ lock: lock.path }, `took over ${lock.tookOver}`);
      // What runs killed there left for baton status, before this one's own is made.
      if (!dryRun) await starting(removeGoneRegistrations(join(filesDir, "run"), { logger }));
      // Beside its run files.
      if (withoutLock !== undefined && !dryRun) {
        registering = registerWithoutLock(withoutLock, {
          graphPath,
          dir: join(filesDir, "run"),
          ...(!values["no-store"] && { store: storeDir }),
          logs: logsDir,
          logger,
        });
        registration = await starting(registering);
      }
      /** What lists this run for baton status: its lock, or its registration. */
      const record = lock ?? registration;
      if (!dryRun) {
        await starting(pruneRunLogs(logsRoot, { keep: keepLogs, now: Date.now(), logger }));
      }
      const inspector =
        values.inspect === undefined
          ? undefined
          : connectInspector(values.inspect, { logger, openTimeoutMs: inspectorOpenMs });
      const ui = values.ui
        ? await starting(DashboardServer.start({ port: uiPort, logger }))
        : undefined;
      if (ui) process.stderr.write(`dashboard: ${ui.url}\n`);
      /** What the workers started as processes are given, by the local pool or by Slurm. */
      const workerProcesses = {
        jobsModule: resolve(jobsPath),
        ...(values.connect !== undefined && { connect: values.connect }),
        handlerThread: values["handler-thread"],
        logLevel: level,
        abortGraceMs,
      };
      /** Whether the pool failed: the run is then stopping on its own. */
      let poolFailed = false;
      /** The in-process workers, and what their handlers may hold the process open with. */
      const leftBehind = inProcess
        ? handlersLeftBehind(
            inProcessPool({
              ...(count !== undefined && { count }),
              ...(abortGraceMs !== undefined && { abortGraceMs }),
            }),
            abortGraceMs ?? DEFAULT_ABORT_GRACE_MS,
            values["abort-grace"] === undefined
              ? `--abort-grace, default ${DEFAULT_ABORT_GRACE_MS / 1000}s`
              : `--abort-grace ${values["abort-grace"]}`,
          )
        : undefined;
      /** How workers join, printed once the pool has started (`listening` comes before). */
      let joinCommand: string | undefined;
      const engine = createEngine({
        ...((inspector || ui) && {
          inspect: (event: InspectionEvent) => {
            inspector?.inspect.next?.(event);
            ui?.inspect(event);
          },
        }),
        jobs,
        logger,
        ...(values["no-store"]
          ? { batonDir: storeDir }
          : readOnly
            ? { store: storeDir, storeReadOnly: true, batonDir: filesDir }
            : { store: storeDir }),
        logsDir,
        force: values.force,
        ...(storeFullWaitMs !== undefined && { storeFullWaitMs }),
        failFast: values["fail-fast"],
        workers: poolWatch(
          slurm
            ? {
                ...slurmPool({
                  ...workerProcesses,
                  ...slurm,
                  ...(values.partition !== undefined && { partition: values.partition }),
                  sbatchOptions: values["slurm-opt"] ?? [],
                }),
                // A graph that asks more than the workers offer: the way out is this flag.
                offerMore: slurmResourcesAdvice,
              }
            : leftBehind
              ? {
                  ...leftBehind.pool,
                  // They offer this machine's too: the way out is worker processes that join.
                  offerMore: (enough: Resources) =>
                    `leave out --in-process and ${joinWorkersAdvice(enough)}`,
                }
              : {
                  ...localPool({ ...workerProcesses, ...(count !== undefined && { count }) }),
                  // Its workers offer this machine's: the way out is workers that join.
                  offerMore: joinWorkersAdvice,
                },
          {
            failed: () => {
              poolFailed = true;
            },
            started: () => {
              if (joinCommand !== undefined) say(joinCommand);
            },
          },
        ),
        ...(values.listen !== undefined && { listen: values.listen }),
        ...(values["secret-file"] !== undefined && { secretFile: values["secret-file"] }),
      });
      if (dryRun) {
        const plan = await engine.plan(graph);
        const store = values["no-store"] ? undefined : { dir: storeDir, force: values.force };
        if (values.json) {
          process.stdout.write(
            `${JSON.stringify({ dryRun: true, store: store ?? null, ...plan })}\n`,
          );
        } else process.stderr.write(dryRunReport(plan, store));
        return 0;
      }
      if (readOnly) {
        const instead =
          batonDir?.instead === undefined
            ? ""
            : ` (not in .baton beside the graph module: ${batonDir.instead})`;
        process.stderr.write(
          `baton run: reusing the results stored in ${storeDir} without writing anything there (--store-read-only): what this run computes is not stored, so a rerun computes it again; its logs go to ${logsDir}${instead}\n`,
        );
      }
      let run: ReturnType<typeof engine.run>;
      try {
        run = engine.run(graph);
      } catch (error) {
        // A graph refused as it is planned started nothing: no empty log folder is left of it.
        await endUnstartedRunLogs(logsDir, logger);
        throw error;
      }
      ui?.watch(run);
      // Workers are meant to join from elsewhere: say how (a `--workers 0` run waits for them),
      // once the pool has started (not for a Slurm pool that fails as Slurm is missing).
      if (count === 0 || values.listen !== undefined) {
        run.on("listening", (listening) => {
          joinCommand = joinHint(listening, jobsPath, {
            handlerThread: values["handler-thread"],
            abortGrace: values["abort-grace"],
            lasting: values.listen !== undefined && values["secret-file"] !== undefined,
            connect: values.connect,
            baton: batonCommand(),
          });
        });
      }
      if (record) {
        // For baton status: where workers join at once, how far the run is (see below).
        if (!inProcess || values.listen !== undefined) {
          run.on("listening", (listening) => {
            const { secretFile } = listening;
            const secret = secretFile === undefined ? {} : { secretFile: resolve(secretFile) };
            void record.note(
              { ...joinAddress(listening, values.connect), ...secret },
              { now: true },
            );
          });
        }
        // The first report at once, so baton status shows how far a run is from its first
        // seconds, not only from the first renewal (10 s on); the others with the renewals.
        let reported = false;
        run.on("progress", ({ total, counts }) => {
          const running = counts.running + counts.storing;
          void record.note(
            { progress: { total, completed: counts.completed, failed: counts.failed, running } },
            { now: !reported },
          );
          reported = true;
        });
      }
      if (bar) {
        run.on("store.reading", (reading) => bar.drawReading(reading));
        run.on("progress", (progress) => bar.draw(progress));
        // What handlers report, under the bar until their job leaves running. The `job` listener
        // costs every job's every change an event: only a run whose handlers report takes it.
        let followingJobs = false;
        run.on("job.progress", (report) => {
          bar.jobProgress(report);
          if (followingJobs) return;
          followingJobs = true;
          run.on("job", ({ id, state }) => {
            if (state !== "running") bar.jobLeftRunning(id);
          });
        });
      }
      /** The result store had no room for --store-full-wait: the run is stopping for it. */
      let storeStopping: string | undefined;
      // A full store holds the run up: say so at once, and again when it goes on; the run's
      // stop for it is said once the run has stopped, with its failure.
      run.on("store.full", ({ message, dir, stopping }) => {
        if (stopping) storeStopping = dir;
        else say(`baton run: ${message}\n`);
      });
      /** The signal that interrupted the run: Ctrl-C, a kill or scheduler, a hang-up, Ctrl-\. */
      let interrupted: StopSignal | undefined;
      /** Whether the run has ended: its result is then being written, which a signal waits for. */
      let ended = false;
      const onSignal = (signal: StopSignal) => {
        const again = signal === "SIGINT" ? "Ctrl-C" : signal;
        if (interrupted) {
          process.stderr.write(`\nstopping now (second ${again})\n`);
          exitReleasing(signal, record?.release() ?? Promise.resolve());
          return;
        }
        interrupted = signal;
        if (ended && result === undefined) {
          // The run failed (its pool, a full store: said above) or threw: nothing to cancel or
          // write, and the command ends with that failure's code, not the signal's.
          process.stderr.write(
            `\n${signal}: the run has already failed, so there is nothing to cancel and no result to write; baton exits with the failure's code once it has let go of the run's lock and logs (${again} again to stop now)\n`,
          );
          return;
        }
        if (ended) {
          // Even should stdout's reader close it now (bin/baton.js ends the command with this).
          process.exitCode = SIGNAL_EXIT[signal];
          process.stderr.write(
            `\nstopping (${signal}) once the result is written (${again} again to stop now)\n`,
          );
          return;
        }
        // Its workers are stopping (a job that ignores its abort holds one up to its grace): the
        // run rejects with the pool's, or the store's, error once they have, which is said then.
        const because = poolFailed
          ? "its worker pool failed"
          : storeStopping !== undefined
            ? `the result store ${storeStopping} had no room (its disk is full) for ${formatDuration(storeFullWaitMs ?? STORE_FULL_WAIT_MS)} (--store-full-wait)`
            : undefined;
        if (because !== undefined) {
          process.stderr.write(
            `\n${signal}: the run is already stopping because ${because}, so there is nothing to cancel; baton says why and exits once its workers have stopped (${again} again to stop now)\n`,
          );
          return;
        }
        const storing = values["no-store"] || readOnly ? "" : " and for results to be stored";
        say(
          `cancelling (${signal}): waiting for running jobs to stop${storing}, 10 s at most (${again} again to force)\n`,
        );
        run.cancel(CANCELLED_BY[signal]);
      };
      listenBeforeRun(false);
      for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
      const unlisten = () => {
        for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
      };
      let result: RunResult | undefined;
      /** The command's exit code once the run has ended: the signal's, else the run's. */
      const exitCode = () => (interrupted ? SIGNAL_EXIT[interrupted] : result?.ok ? 0 : 1);
      try {
        try {
          result = await run;
        } catch (error) {
          // The pool failing (a crash loop, a failed allocation), or a store that stayed full,
          // fails the run: exit 1, not usage's 2.
          const failed =
            error instanceof PoolError ||
            error instanceof SlurmError ||
            (error instanceof StoreError && error.code === "STORE_FULL");
          if (!failed) throw error;
          bar?.clear();
          process.stderr.write(
            `baton run: the run failed: ${codedMessage(error.message, error.code)}\n`,
          );
          return leftBehind?.exit(1) ?? 1;
        } finally {
          ended = true;
          await record?.release();
          // Its workers have stopped: pruning may remove this folder once it is old enough.
          await markRunLogsEnded(logsDir, logger);
          bar?.clear();
          unadopt?.();
          await inspector?.close();
          // A run that threw closes its dashboard here; a finished one's closes after its result.
          if (ui && !result) await ui.close();
        }
        // Set before the results are written: a reader that closes stdout early ends the command
        // at once with it (bin/baton.js), where it ended a failed run with 0.
        process.exitCode = exitCode();
        // A first signal from the run's end waits for the result to be written whole, as a pipe's
        // reader takes it (Node's default ended the command at once with it cut); a second one
        // stops at once.
        const output = values.json ? process.stdout : process.stderr;
        if (values.json) for (const piece of resultJson(result)) output.write(piece);
        else {
          output.write(
            summaryTable(result, {
              storeReadOnly: readOnly,
              runLog: join(logsDir, "run.log"),
              keepsResults: !values["no-store"] && !readOnly,
              graph,
              // The run's own worker processes log beside run.log.
              ...(!slurm &&
                !inProcess && { workerLog: (w: string) => localWorkerLogOf(logsDir, w) }),
            }),
          );
        }
        await flushed(output);
      } finally {
        unlisten();
      }
      const code = exitCode();
      process.exitCode = code;
      if (ui) await closeDashboard(ui, { keep: values["ui-keep"], what: "run" });
      // Its lock already let go (above): a handler still running here holds the exit no longer.
      return leftBehind?.exit(code) ?? code;
    } finally {
      listenBeforeRun(false);
      // Whatever failed after the lock was taken (a dashboard port that is taken), it goes.
      await (lock ?? registration)?.release();
    }
  } finally {
    // A graph, flag or store refused before the lock: the listener goes with the command.
    listenBeforeRun(false);
  }
}

/**
 * How long a stopped command waits for its lock to go before it ends all the same: a disk that
 * does not answer (a hung NFS mount). It was a second, which a release on a machine loaded past
 * its cores outlasted (the lock was left); a second stop signal ends the command at once.
 */
const RELEASE_WAIT_MS = 5_000;

/**
 * Ends the command as `signal` asks once `releasing` (the run's lock going) has settled, or
 * after {@link RELEASE_WAIT_MS}, should the disk keep it from settling.
 */
function exitReleasing(signal: StopSignal, releasing: Promise<unknown>): void {
  const exit = () => process.exit(SIGNAL_EXIT[signal]);
  setTimeout(exit, RELEASE_WAIT_MS);
  releasing.then(exit, exit);
}

/**
 * The Slurm flags go with `--slurm`, and `--slurm` with no other kind of worker. Returns
 * `--max-workers` (default {@link DEFAULT_MAX_WORKERS}), `--slurm-unreachable-after`, `--slurm-idle-exit` and
 * `--slurm-resources` (when given) with `--slurm`, undefined without.
 */
function checkSlurmFlags(values: {
  slurm?: boolean;
  "in-process"?: boolean;
  workers?: string;
  "max-workers"?: string;
  partition?: string;
  "slurm-resources"?: string;
  "slurm-opt"?: string[];
  "slurm-unreachable-after"?: string;
  "slurm-idle-exit"?: string;
}):
  | { maxWorkers: number; unreachableMs?: number; idleExitMs?: number; resources?: Resources }
  | undefined {
  if (!values.slurm) {
    const stray = (
      [
        "max-workers",
        "partition",
        "slurm-resources",
        "slurm-opt",
        "slurm-unreachable-after",
        "slurm-idle-exit",
      ] as const
    ).find((flag) => values[flag] !== undefined);
    if (stray) throw new ConfigError(`--${stray} goes with --slurm`);
    return undefined;
  }
  if (values["in-process"] || values.workers !== undefined) {
    throw new ConfigError(
      "--slurm runs the workers in Slurm allocations: leave out --in-process and --workers (use --max-workers)",
    );
  }
  const unreachableMs = durationFlag(
    "--slurm-unreachable-after",
    values["slurm-unreachable-after"],
  );
  const idleExitMs = durationFlag("--slurm-idle-exit", values["slurm-idle-exit"], {
    never: true,
  });
  const maxWorkers =
    wholeNumberFlag("--max-workers", values["max-workers"], "a number of allocations") ??
    DEFAULT_MAX_WORKERS;
  checkWorkerCount("--max-workers", maxWorkers, "connected");
  const resources = slurmResourcesFlag(values["slurm-resources"]);
  checkSbatchOptions(values["slurm-opt"], "baton run");
  return {
    maxWorkers,
    ...(unreachableMs !== undefined && { unreachableMs }),
    ...(idleExitMs !== undefined && { idleExitMs }),
    ...(resources !== undefined && { resources }),
  };
}

/**
 * `--inspect-unreachable-after`: how long the inspector may take to open the connection
 * (`connectInspector`'s `openTimeoutMs`), undefined when absent; a `ConfigError` for a value
 * that is no duration, or without `--inspect`.
 */
function inspectorOpenFlag(values: {
  inspect?: string;
  "inspect-unreachable-after"?: string;
}): number | undefined {
  const text = values["inspect-unreachable-after"];
  if (text !== undefined && values.inspect === undefined) {
    throw new ConfigError(
      "--inspect-unreachable-after goes with --inspect, which streams to an inspector: add --inspect, or leave --inspect-unreachable-after out",
    );
  }
  return durationFlag("--inspect-unreachable-after", text);
}

/**
 * What after `--inspect` is its URL, not the graph module: an address with a scheme
 * (`ws://`, `http://`, or one `checkInspectorUrl` refuses) or a bare `host:port`.
 */
const INSPECT_VALUE = /^([a-z][a-z0-9+.-]*:\/\/|[\w.-]+:\d+(\/|$))/i;

/** `--inspect` takes an optional URL: a bare `--inspect` means the default inspector. */
function withInspectUrl(argv: string[]): string[] {
  return argv.flatMap((arg, i) =>
    arg === "--inspect" && !INSPECT_VALUE.test(argv[i + 1] ?? "")
      ? [`--inspect=${DEFAULT_INSPECTOR_URL}`]
      : [arg],
  );
}
