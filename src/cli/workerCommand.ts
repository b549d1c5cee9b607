import { hostname } from "node:os";
import { resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import { formatDuration } from "../formatDuration.ts";
import type { Resources } from "../graph/job.ts";
import { DEFAULT_DEAD_AFTER_MS, DEFAULT_HEARTBEAT_MS } from "../machines/connection.ts";
import { coordinatorUrl, whyNoCoordinator } from "../runtime/coordinatorAddress.ts";
import { createLogger, LOG_LEVELS } from "../runtime/logger.ts";
import { machineResources } from "../runtime/machineResources.ts";
import { moduleSource } from "../runtime/moduleSource.ts";
import { nodeClock } from "../runtime/nodeClock.ts";
import { nodeEntropy } from "../runtime/nodeEntropy.ts";
import type { Link, Net } from "../runtime/ports.ts";
import { readSecret, SECRET_ENV } from "../runtime/secret.ts";
import { settledWithin } from "../runtime/settledWithin.ts";
import {
  DEFAULT_WELCOME_TIMEOUT_MS,
  runWorker,
  SILENCE_LIMIT_PINGS,
  type WorkerExit,
} from "../runtime/worker.ts";
import { HANDLER_EXITED_EXIT, REFUSED_EXIT } from "../runtime/workerExitCodes.ts";
import { DEFAULT_ABORT_GRACE_MS } from "../runtime/workerProcessOptions.ts";
import { DEFAULT_CONNECT_TIMEOUT_MS, wsNet } from "../runtime/wsNet.ts";
import { CloseCode, CONNECTION_BROKE, describeClose } from "../transport/closeCodes.ts";
import { choiceFlag } from "./choiceFlag.ts";
import { commandCatalog } from "./commandCatalog.ts";
import { durationFlag } from "./durationFlag.ts";
import { emptyFlags } from "./emptyFlags.ts";
import { watchEventLoopStalls } from "./eventLoopStalls.ts";
import { exitSoon } from "./exitSoon.ts";
import { loadLoggingCause } from "./loadLoggingCause.ts";
import { memoryAmount } from "./memoryAmount.ts";
import { parseFlags } from "./parseFlags.ts";
import { printHelp } from "./printHelp.ts";
import { MOST_GPUS, resourceAmount } from "./resourceAmount.ts";
import { SIGNAL_EXIT, STOP_SIGNALS, type StopSignal } from "./signalExit.ts";
import { MILLISECONDS, wholeNumberFlag } from "./wholeNumberFlag.ts";

const WORKER_USAGE = `usage: ${commandCatalog.worker.usage}

Connects to a coordinator and runs its jobs, one at a time, until the coordinator stops it.

  --connect URL        the coordinator's address, ws://HOST:PORT or HOST:PORT, as in the
                       baton worker command baton run prints, such as ws://10.0.0.5:7000
                       (required)
  --secret-file FILE   the run's secret (hex) in a file only its owner can read (chmod 600);
                       or set BATON_SECRET (one of the two is required; this flag wins when
                       both are given). The secret never goes on the command line.
  --jobs FILE          job module (kind → handler): the same file the coordinator loaded
                       (required)
  --name NAME          this worker's name in the coordinator's logs (default: HOSTNAME-PID);
                       each worker needs its own: one that another worker process connected
                       under holds is refused (exit 4; with --retry-for it keeps trying: the
                       coordinator lets go of one whose host was lost, in 20 s by default)
  --cpus N             cpus offered to the jobs' requires, such as 4 or 0.5 (default: this
                       machine's cores; more is warned about: the jobs then share them)
  --gpus N             gpus offered, such as 1 (default: 0; at most ${MOST_GPUS})
  --memory MIB         memory offered, in MiB, such as 16384 for 16 GiB (default: this
                       machine's memory; more is warned about, as for --cpus)
  --handler-thread     run the job handlers on a thread of their own, so that a handler's
                       synchronous work (minutes of computation) never keeps the worker from
                       answering the coordinator's pings; each job then costs about 0.1 ms
                       of CPU more (default: on the connection's thread); the job module
                       then loads on that thread, again for each thread that died
  --log-level L        ${LOG_LEVELS.join(" | ")}
                       (default: warn): what this worker logs on stderr
  --silence-limit-ms MS
                       give up on a coordinator not heard from (no frame, no ping) for this
                       many milliseconds, such as 120000 across a network that stalls
                       (default: ${SILENCE_LIMIT_PINGS} times the ping interval it announces: ${SILENCE_LIMIT_PINGS * DEFAULT_HEARTBEAT_MS} for ${DEFAULT_HEARTBEAT_MS / 1000} s)
  --welcome-timeout-ms MS
                       give up when the coordinator has not accepted the connection, or not
                       sent its welcome after that, within this many milliseconds, such as
                       60000 across a slow network (default: ${DEFAULT_CONNECT_TIMEOUT_MS} to accept it, as a
                       frozen coordinator never does, then ${DEFAULT_WELCOME_TIMEOUT_MS} for the welcome)
  --retry-for DURATION when the coordinator cannot be reached, goes away or goes silent,
                       or another worker process holds this one's --name, keep trying to
                       connect (backing off from 0.5 s to 10 s) for this long, such as 90s,
                       10m or 2h, and join the run it serves then: a coordinator started
                       later, or started again after a crash with the same --listen and
                       --secret-file; a --secret-file the run has not made yet is waited
                       for too (default: no retry, exit 3, or 4 for the --name, 2 for
                       a missing --secret-file)
  --idle-exit DURATION leave the run after this long without a job, such as 5m, and exit 0,
                       giving back the machine it holds (baton run --slurm starts its
                       workers so, to end idle allocations); a job sent to it as it leaves
                       goes back to the coordinator, to run elsewhere (default: stay until
                       the run ends)
  --abort-grace DURATION
                       how long an aborted job's handler gets to return (to save a
                       checkpoint, stop what it started) before the worker goes on without
                       it, such as 30s: when the worker stops (a signal, the coordinator
                       stopped or lost) it then exits, and with --handler-thread a handler
                       aborted by a cancel or its timeout has its thread ended (default ${DEFAULT_ABORT_GRACE_MS / 1000}s)
  -h, --help           this help

Exit code: 0 when the coordinator stopped the worker (close 1000: the run ended; to serve
one run after another, start it again in a loop) or it left after --idle-exit; 2 for bad
usage or a job module that does not load (with --handler-thread, also one that no longer
loads, or changed, when a stopped handler's thread is replaced: the worker fails its job
and leaves); 3 when the connection could not be made, ended abnormally, or the coordinator
went silent (no welcome within --welcome-timeout-ms of connecting, or, after it, nothing
for --silence-limit-ms: its host may have crashed or the network dropped the connection),
with --retry-for once it ran out; 4 when the coordinator refused this worker's setup (the
wrong secret or job module, no shared protocol version, a --name another worker process
connected under holds, with --retry-for once it ran out: fix it, since starting again the
same way ends the same); 5 when a job handler ended the process with process.exit(0) (a
pool replaces the worker); 130 / 143 / 129 / 131 after SIGINT / SIGTERM / SIGHUP (the
terminal closed, the ssh session dropped) / SIGQUIT (the running job is aborted and goes
back to the coordinator; a second signal stops at once).`;

/**
 * Close codes that end a worker through no fault of its setup (the coordinator or its host went
 * away, the network failed, the coordinator was too busy, stopped hearing it, or went silent):
 * connecting again can help. With `--retry-for` the worker does so; without, its message says
 * to start it again.
 */
const CUT_OFF: ReadonlySet<number> = new Set([
  CloseCode.goingAway,
  CONNECTION_BROKE,
  1011,
  CloseCode.leaseExpired,
  CloseCode.tooManyHandshakes,
  CloseCode.coordinatorSilent,
]);
/**
 * Close codes by which the coordinator refused this worker's setup (a protocol violation, the
 * wrong secret, no shared protocol version, a frame over its limit, another job module, a
 * name another worker process holds):
 * starting it again the same way ends the same way, so it exits 4, which `localPool` and the
 * Slurm batch script do not restart. With `--retry-for`, a name held (4010) is tried again
 * first: the process holding it may be one whose host is gone unseen.
 */
const REFUSED: ReadonlySet<number> = new Set([
  CloseCode.protocolViolation,
  CloseCode.authFailed,
  CloseCode.versionMismatch,
  CloseCode.frameTooLarge,
  CloseCode.codeMismatch,
  CloseCode.nameInUse,
]);
const AGAIN =
  "; start the worker again once the coordinator is reachable, or give it --retry-for DURATION to have it try by itself (a run started again keeps its address and secret only when baton run is given --listen HOST:PORT and --secret-file FILE)";

/**
 * What to do after a loss without `--retry-for`: start again once the coordinator is
 * reachable, except for a host name that did not resolve, where the coordinator's reachability
 * is not yet the question: the connect error already says what to check (the name's spelling,
 * this machine's DNS), so a name not found (ENOTFOUND) ends on starting again once that is
 * fixed, and name servers that did not answer (EAI_AGAIN) on `--retry-for`, which waits for
 * them.
 */
function againAdvice(exit: WorkerExit | Error): string {
  if (
    !(exit instanceof Error) &&
    exit.code === CloseCode.leaseExpired &&
    exit.runningJob?.cancelled
  )
    return "; this worker exits now, which ends that handler: start it again to rejoin the run (a local pool starts another by itself)";
  const code =
    exit instanceof Error ? (exit.cause as { code?: unknown } | undefined)?.code : undefined;
  if (code === "ENOTFOUND") return "; then start the worker again";
  if (code === "EAI_AGAIN") {
    return "; or give it --retry-for DURATION to have it try by itself until they answer";
  }
  return AGAIN;
}

/** The first wait before connecting again, doubled after each failed attempt up to the most. */
const FIRST_RETRY_MS = 500;
const MOST_RETRY_MS = 10_000;

/**
 * `baton worker`: loads a job module, connects to a coordinator over WebSockets, proves the
 * run secret and runs jobs until the coordinator closes the connection. Returns the exit code.
 * Meant for the `baton` process itself: it handles SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * (`STOP_SIGNALS`) while it runs, and once it has returned the process exits within the abort
 * grace (`--abort-grace`, DESIGN §8's, 5 s by default) even if a handler would keep it alive.
 *
 * @example
 * ```ts
 * process.exitCode = await workerCommand([
 *   "--connect", "ws://10.0.0.5:7000", "--secret-file", "/run/baton/run.secret", "--jobs", "jobs.ts",
 * ]);
 * ```
 */
export async function workerCommand(argv: string[]): Promise<number> {
  const { values, mistake } = parseFlags("worker", {
    args: argv,
    options: commandCatalog.worker.flags,
  });
  if (values.help) return printHelp(WORKER_USAGE, mistake);
  emptyFlags("worker", values, ["jobs", "secret-file", "name"]);
  if (values.connect === undefined || values.jobs === undefined) {
    // Everything missing at once, the secret too, rather than one more refusal per try.
    const missing = [
      values.connect === undefined ? "--connect" : [],
      values.jobs === undefined ? "--jobs" : [],
      values["secret-file"] === undefined && !process.env[SECRET_ENV]
        ? `--secret-file (or ${SECRET_ENV})`
        : [],
    ].flat();
    throw new ConfigError(
      `give ${missing.slice(0, -1).join(", ")}${missing.length > 1 ? " and " : ""}${missing.at(-1)}: the baton worker command that baton run prints has them all (baton worker --help shows how)`,
    );
  }
  const address = coordinatorAddress(values.connect);
  const level = choiceFlag("--log-level", values["log-level"] as string, LOG_LEVELS);
  const name = values.name ?? `${hostname()}-${process.pid}`;
  /** This process's, the same on each connection: a reconnect replaces its own lost one. */
  const instance = nodeEntropy().id();
  const machine = machineResources();
  const resources: Resources = {
    cpus: resourceAmount("--cpus", values.cpus) ?? machine.cpus,
    gpus:
      resourceAmount("--gpus", values.gpus, {
        most: MOST_GPUS,
        instead: ", the gpus of this worker's machine (nvidia-smi -L lists them)",
      }) ?? machine.gpus,
    memory: memoryAmount("--memory", values.memory, (mib) => `--memory ${mib}`) ?? machine.memory,
  };
  for (const warning of overOffers(resources, machine)) process.stderr.write(warning);
  const silenceLimitMs = wholeNumberFlag(
    "--silence-limit-ms",
    values["silence-limit-ms"],
    MILLISECONDS,
  );
  const welcomeTimeoutMs = wholeNumberFlag(
    "--welcome-timeout-ms",
    values["welcome-timeout-ms"],
    MILLISECONDS,
  );
  const retryForMs = durationFlag("--retry-for", values["retry-for"]);
  const idleExitMs = durationFlag("--idle-exit", values["idle-exit"]);
  const graceMs = durationFlag("--abort-grace", values["abort-grace"]) ?? DEFAULT_ABORT_GRACE_MS;
  /**
   * How long a worker that lost its coordinator waits for the aborted job's handler before it
   * says the handler does not stop: past the grace after which `--handler-thread` ends one.
   */
  const stuckMs = 2 * graceMs;
  // Started before the run that makes its secret file, the worker waits for it as it would for
  // the coordinator.
  const secret = await readSecret({
    secretFile: values["secret-file"],
    env: process.env,
    wait:
      retryForMs === undefined
        ? undefined
        : {
            ms: retryForMs,
            as: `${values["retry-for"]} (--retry-for)`,
            said: (message) => process.stderr.write(`baton worker: ${message}\n`),
          },
  });
  const secretFrom =
    values["secret-file"] === undefined
      ? "this worker's secret came from BATON_SECRET"
      : `this worker's secret was read from ${resolve(values["secret-file"])}${process.env.BATON_SECRET ? " (--secret-file is used, not BATON_SECRET)" : ""}`;
  // Job handlers may start programs; they have no use for the run's secret.
  delete process.env.BATON_SECRET;
  const logger = createLogger({ level });
  const jobsPath = values.jobs;
  // Each way of running the handlers is loaded only when it is the one this worker uses: with
  // --handler-thread the job module (and the baton it imports: the engine, rank groups, the
  // sim) loads only on the handler thread, and this thread loads neither it nor the user
  // module loader, about half of the modules it loaded before it connects.
  const jobs = values["handler-thread"]
    ? await (await import("./handlerThread.ts")).startHandlerThread({
        module: jobsPath,
        level,
        pretty: process.stderr.isTTY === true,
        abortGraceMs: graceMs,
        logger,
      })
    : await loadLoggingCause({ level }, async () =>
        (await import("../runtime/userModule.ts")).loadJobsFile(jobsPath),
      );
  /** The job module's code as loaded: one changed since is why a coordinator started later refuses it. */
  const loaded = jobs.source;
  /** What this worker used, for the refusals that name it: to compare with `baton run`'s hint. */
  const setup: Readonly<Record<number, () => string>> = {
    [CloseCode.authFailed]: () =>
      joinedRun !== undefined
        ? `${secretFrom}, with which it joined a run at this address before: a run started again has a new secret unless baton run is given --secret-file FILE, which keeps it`
        : secretFrom,
    // The coordinator's reason names the two hashes and says to deploy the same module; said
    // once with the code's meaning before this, the advice came twice in other words.
    [CloseCode.codeMismatch]: () =>
      `this worker loaded ${resolve(jobsPath)}${changedSince(jobsPath, loaded) ? ", which has changed since (it or a local file it imports): start the worker again, to load it as it is now" : ": give --jobs the file the coordinator loaded (baton run's --jobs, or its graph module without --jobs), with the same local files it imports"}`,
    [CloseCode.nameInUse]: () =>
      `if the worker that had it is gone unseen (its host lost), the coordinator lets the name go within ${formatDuration(DEFAULT_DEAD_AFTER_MS)} by default${retryForMs === undefined ? ": start this one again then, or give it --retry-for DURATION to have it wait for that" : ""}`,
  };

  let link: Link | undefined;
  let signalled: StopSignal | undefined;
  let stopped!: () => void;
  const stopping = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const goodbye = (signal: string) => `worker ${name} stopping (${signal})`;
  const onSignal = (signal: StopSignal) => {
    if (signalled !== undefined) process.exit(SIGNAL_EXIT[signal]);
    signalled = signal;
    // Between connections (waiting to try again) there is no job to give back.
    const job = link ? "; the running job is aborted and goes back to the coordinator" : "";
    process.stderr.write(
      `baton worker: ${signal}: stopping${job} (${signal} again to stop at once)\n`,
    );
    link?.close(CloseCode.goingAway, goodbye(signal));
    stopped();
  };
  // A frozen coordinator's host accepts the TCP connection and never answers the handshake.
  const net = wsNet(welcomeTimeoutMs === undefined ? {} : { connectTimeoutMs: welcomeTimeoutMs });
  const tracked: Net = {
    listen: (at, options) => net.listen(at, options),
    async connect(at, options) {
      link = await net.connect(at, options);
      if (signalled !== undefined) link.close(CloseCode.goingAway, goodbye(signalled));
      return link;
    },
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  const stalls = watchEventLoopStalls();
  /** A lost coordinator: what happened, then why it may be this worker's own doing. */
  const say = (message: string) => {
    const note = stalls.note();
    process.stderr.write(`baton worker: ${message}\n${note ? `baton worker: ${note}\n` : ""}`);
  };
  /** When the worker lost its coordinator, or first failed to reach it; reset by a welcome. */
  let lostAt: number | undefined;
  /** Attempts since `lostAt`, for the backoff. */
  let attempts = 0;
  /** Jobs run to a result over every connection so far. */
  let jobsFinished = 0;
  /** The run it last joined, if any. */
  let joinedRun: string | undefined;
  /** A refusal of its name (4010) was said since `lostAt`: it is said once, however often. */
  let toldNameHeld = false;
  const onWelcome = (run: string) => {
    // A worker that said it was trying says when it got through; one started on a terminal
    // says that it is in, where it said nothing until the run ended.
    // A run started again at the address (after a crash, to resume) is another run: "again"
    // only for the one it had joined.
    if (lostAt !== undefined) {
      const again =
        joinedRun === undefined
          ? ""
          : joinedRun === run
            ? " again"
            : `, a new run there (it had joined run ${joinedRun})`;
      process.stderr.write(`baton worker: joined run ${run} at ${address}${again}\n`);
    } else if (joinedRun === undefined && process.stderr.isTTY === true) {
      process.stderr.write(
        `baton worker: joined run ${run} at ${address} as ${name}: it runs the run's jobs until the run ends (Ctrl-C leaves the run, giving back a job it holds)\n`,
      );
    }
    joinedRun = run;
    lostAt = undefined;
    attempts = 0;
    toldNameHeld = false;
  };
  process.on("exit", onHandlerExit);
  try {
    for (;;) {
      logger.info({ address, name, resources, kinds: jobs.kinds }, "worker connecting");
      const outcome = runWorker({
        net: tracked,
        address,
        jobs,
        name,
        instance,
        resources,
        secret,
        logger,
        onWelcome,
        ...(silenceLimitMs !== undefined && { silenceLimitMs }),
        ...(welcomeTimeoutMs !== undefined && { welcomeTimeoutMs }),
        ...(idleExitMs !== undefined && { idleExitMs }),
        abortGraceMs: graceMs,
      }).then(
        (exit): WorkerExit | Error => exit,
        (error: Error) => error,
      );
      await Promise.race([outcome, stopping]);
      if (signalled !== undefined) {
        await settledWithin(outcome, graceMs, nodeClock());
        return exitSoon(
          SIGNAL_EXIT[signalled],
          graceMs,
          `baton worker: still running ${formatDuration(graceMs)} after ${signalled} (--abort-grace), most likely a job handler that does not stop on ctx.signal: stopping without it`,
        );
      }
      const exit = await outcome;
      link = undefined;
      if (!(exit instanceof Error)) jobsFinished += exit.jobsFinished;
      const jobsHere = `${jobsFinished} job${jobsFinished === 1 ? "" : "s"} finished here`;
      if (!(exit instanceof Error) && exit.broken !== undefined) {
        say(
          `left the run at ${address} after ${jobsHere}, the last failed: ${exit.broken}. A new worker would fail so too; put the job module back as it was when the run started, or start the run again (results already stored are reused)`,
        );
        return exitSoon(2, graceMs);
      }
      if (!(exit instanceof Error) && exit.idle) {
        process.stderr.write(
          `baton worker: left the run at ${address} after ${jobsHere}: no job for ${values["idle-exit"]} (--idle-exit)\n`,
        );
        return exitSoon(0, graceMs);
      }
      if (!(exit instanceof Error) && exit.code === CloseCode.normal) {
        // Said at any log level: a worker started by hand elsewhere otherwise ends in silence.
        process.stderr.write(
          `baton worker: the coordinator at ${address} stopped this worker (${exit.reason || "no reason given"}) after ${jobsHere}\n`,
        );
        return exitSoon(0, graceMs);
      }
      const message = lossMessage(exit, address, setup);
      // Another process holds the name (4010): with --retry-for, it may be one whose host is
      // gone unseen, whose connection the coordinator lets go within its ping limit.
      const nameHeld = !(exit instanceof Error) && exit.code === CloseCode.nameInUse;
      if (
        !(exit instanceof Error) &&
        REFUSED.has(exit.code) &&
        !(nameHeld && retryForMs !== undefined)
      ) {
        say(message);
        return exitSoon(REFUSED_EXIT, graceMs);
      }
      if (!(exit instanceof Error) && !CUT_OFF.has(exit.code) && !nameHeld) {
        say(message);
        return exitSoon(3, graceMs);
      }
      if (retryForMs === undefined) {
        say(`${message}${againAdvice(exit)}`);
        return exitSoon(3, graceMs);
      }
      lostAt ??= Date.now();
      const leftMs = lostAt + retryForMs - Date.now();
      if (leftMs <= 0 && nameHeld) {
        say(
          `${message}; gave up: the name was not let go within ${values["retry-for"]} (--retry-for)`,
        );
        return exitSoon(REFUSED_EXIT, graceMs);
      }
      if (leftMs <= 0) {
        say(
          `${message}; gave up: the coordinator was not reachable again within ${values["retry-for"]} (--retry-for)`,
        );
        return exitSoon(3, graceMs);
      }
      if (attempts === 0 || (nameHeld && !toldNameHeld))
        say(`${message}; trying again for up to ${values["retry-for"]} (--retry-for)`);
      toldNameHeld ||= nameHeld;
      logger.info({ address, attempts, leftMs, reason: message }, "coordinator lost; trying again");
      // One job at a time: a job aborted by the loss must have stopped before the next lease.
      if (!(exit instanceof Error)) {
        const returned = (ms: number) =>
          settledWithin(Promise.race([exit.jobStopped, stopping]), ms, nodeClock());
        if (!(await returned(stuckMs)) && signalled === undefined) {
          say(
            `the handler of the job this worker was running has not returned ${formatDuration(stuckMs)} after it was aborted (it does not stop on ctx.signal); a worker runs one job at a time, so it connects again once that handler returns, for up to ${values["retry-for"]} (--retry-for) since it lost the coordinator (with --handler-thread, a handler that does not stop is ended ${formatDuration(graceMs)} after it is aborted: --abort-grace)`,
          );
          if (!(await returned(lostAt + retryForMs - Date.now())) && signalled === undefined) {
            say(
              `gave up: the handler of the job this worker was running did not return within ${values["retry-for"]} (--retry-for) of losing the coordinator`,
            );
            return exitSoon(3, graceMs);
          }
        }
        if (signalled !== undefined) return exitSoon(SIGNAL_EXIT[signalled], graceMs);
      }
      // Cut short by a signal, leaving no timer to hold the process open until it fires.
      await settledWithin(stopping, Math.min(backoffMs(attempts), leftMs), nodeClock());
      if (signalled !== undefined) return exitSoon(SIGNAL_EXIT[signalled], graceMs);
      attempts += 1;
    }
  } finally {
    process.off("exit", onHandlerExit);
    if ("close" in jobs) await jobs.close();
    stalls.stop();
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
}

/**
 * Listens for the process's exit while `baton worker` serves a run, when baton itself never
 * ends it with 0 (it returns first, or exits with a signal's code): an exit with 0 then is a
 * job handler's `process.exit(0)`, which is said, and made {@link HANDLER_EXITED_EXIT} so that
 * a pool replaces the worker rather than take it for stopped by its coordinator.
 */
function onHandlerExit(code: number): void {
  if (code !== 0) return;
  process.exitCode = HANDLER_EXITED_EXIT;
  process.stderr.write(
    `baton worker: this process is ending with exit code 0 while it serves a run, which baton never does: a job handler called process.exit(0)? A handler returns its result or throws; the worker exits ${HANDLER_EXITED_EXIT} instead, so that a pool replaces it (the job it ran goes back to the coordinator)\n`,
  );
}

/**
 * The coordinator's address from `--connect`: HOST:PORT or ws://HOST:PORT, as `baton run`
 * prints it. Port 0, which means "any free port" to `baton run --listen`, names no coordinator.
 */
function coordinatorAddress(text: string): string {
  const url = coordinatorUrl(text);
  if (url === undefined) {
    throw new ConfigError(
      `--connect: "${text}" is not a coordinator's address${whyNoCoordinator(text)}: give the HOST:PORT or ws://HOST:PORT it listens on, as in the baton worker command baton run printed (for example ws://10.0.0.5:7000; an IPv6 host in brackets)`,
    );
  }
  return url;
}

/**
 * A warning for each of `--cpus` and `--memory` that offers more than this machine has: the
 * coordinator then sends this worker jobs that require that much, which share what there is.
 */
function overOffers(offered: Resources, machine: Resources): string[] {
  return (
    [
      ["--cpus", offered.cpus, machine.cpus, "cores"],
      ["--memory", offered.memory, machine.memory, "MiB of memory"],
    ] as const
  ).flatMap(([flag, offer = 0, has = 0, what]) =>
    offer > has
      ? [
          `baton worker: ${flag} ${offer} offers more than this machine's ${has} ${what}: jobs that require up to ${offer} are sent here, and share the ${has}\n`,
        ]
      : [],
  );
}

/** What a broken connection (1006) means to a worker: the coordinator's end, or the network. */
const COORDINATOR_BROKE =
  "connection broke: it ended without a close frame, as when the network failed or the coordinator's process ended without closing it (a crash, kill -9, the out-of-memory killer, its machine going down); check that baton run is still running there (baton status on its machine) and its run.log";

/**
 * What ended a connection that the coordinator did not end normally, for stderr. `setup` says,
 * by close code, what of this worker's own the coordinator refused (its secret, its module).
 */
function lossMessage(
  exit: WorkerExit | Error,
  address: string,
  setup: Readonly<Record<number, () => string>>,
): string {
  if (exit instanceof Error) return exit.message;
  if (exit.code === CloseCode.coordinatorSilent) {
    return `gave up on the coordinator at ${address} (code ${exit.code}): ${exit.reason}; check that it is still running and reachable from here`;
  }
  const closed = `connection to the coordinator at ${address} closed with code ${exit.code}`;
  const { runningJob } = exit;
  if (exit.code === CloseCode.leaseExpired && runningJob?.cancelled) {
    // Not a blocked event loop nor the network: the coordinator told the worker to stop the
    // job, and its handler did not return.
    return `${closed} (${exit.reason || "no reason given"}): the handler of job ${runningJob.id} (${runningJob.kind}) did not return after its abort (it does not stop on ctx.signal), so the coordinator gave its lease up and runs the job again elsewhere if it has attempts left; a handler on the worker's own thread cannot be stopped, and it ends only with this process: make the handler return (or throw) once ctx.signal aborts, or start the worker with --handler-thread (baton run --handler-thread), which ends such a handler --abort-grace after its abort and keeps the worker`;
  }
  // The code's meaning says "the peer", either side's; here it is the coordinator.
  const meaning = exit.code === CONNECTION_BROKE ? COORDINATOR_BROKE : describeClose(exit.code);
  const used = setup[exit.code]?.();
  const mine = used === undefined ? "" : `; ${used}`;
  // A reason that already says what the code means (a refused proof's) is not told twice.
  if (exit.reason !== "" && label(exit.reason) === label(meaning)) {
    return `${closed}: ${exit.reason}${mine}`;
  }
  return `${closed} (${exit.reason || "no reason given"}): ${meaning}${mine}`;
}

/**
 * Whether the job module at `path` no longer holds `source`, the code this worker loaded: it,
 * or a local file it imports, was changed, or it can no longer be read.
 */
function changedSince(path: string, source: string): boolean {
  try {
    return moduleSource(path) !== source;
  } catch {
    return true;
  }
}

/** What a message is about: its text before the first colon. */
function label(text: string): string {
  const colon = text.indexOf(":");
  return colon < 0 ? text : text.slice(0, colon);
}

/** The wait before connecting again after `attempts` failed ones: doubling, a fifth either way. */
function backoffMs(attempts: number): number {
  const ms = Math.min(FIRST_RETRY_MS * 2 ** attempts, MOST_RETRY_MS);
  return ms * (0.8 + 0.4 * Math.random());
}
