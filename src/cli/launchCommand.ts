import { dirname, resolve } from "node:path";
import { ConfigError, RankGroupError, TeardownError } from "../errors.ts";
import type { BarrierPassed } from "../machines/group.ts";
import { DEFAULT_TEARDOWN_TIMEOUTS } from "../machines/teardown.ts";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";
import { rankList } from "../rank/rankList.ts";
import { DashboardServer } from "../runtime/dashboardServer.ts";
import {
  endedLogsRetention,
  KEEP_ENDED_DEPLOYMENTS,
  KEEP_ENDED_LOGS_ENV,
  parseEndedLogsRetention,
  pruneDeploymentLogs,
} from "../runtime/deploymentLogs.ts";
import { folderNotRemovedLine } from "../runtime/folderNotRemoved.ts";
import { launchGroup } from "../runtime/launchGroup.ts";
import { createLogger, LOG_LEVELS } from "../runtime/logger.ts";
import { MOST_KEPT_LOGS } from "../runtime/mostKeptLogs.ts";
import { nodeClock } from "../runtime/nodeClock.ts";
import { DEFAULT_RANK_GROUP_TIMEOUTS } from "../runtime/rankGroup.ts";
import { shellLine } from "../runtime/shellQuote.ts";
import { parseRankHost } from "../runtime/sshTarget.ts";
import { type GroupProgress, watchGroup } from "../viz/groupProgress.ts";
import { choiceFlag } from "./choiceFlag.ts";
import { closeDashboard } from "./closeDashboard.ts";
import { codedMessage } from "./codedMessage.ts";
import { commandCatalog } from "./commandCatalog.ts";
import { emptyFlags } from "./emptyFlags.ts";
import { exitSoon } from "./exitSoon.ts";
import { groupStatusLine } from "./groupStatusLine.ts";
import { leftRunningLine } from "./leftRunningLine.ts";
import { LiveLine } from "./liveLine.ts";
import { parseFlags } from "./parseFlags.ts";
import { printHelp } from "./printHelp.ts";
import { SIGNAL_EXIT, STOP_SIGNALS, type StopSignal } from "./signalExit.ts";
import { sshConfigFlag } from "./sshConfigFlag.ts";
import { stateDirExists } from "./stateDirExists.ts";
import { stoppingHow, stoppingLine } from "./stoppingLine.ts";
import { portGivenToUi, uiPortFlag, withoutUi } from "./uiPortFlag.ts";
import { MILLISECONDS, wholeNumberFlag } from "./wholeNumberFlag.ts";

/**
 * The most ranks one launcher starts: it holds a state machine (about 5 KB) and a process for
 * each, so a world of 10^8, one typo away from 10, would fill its memory before starting any.
 */
const MOST_RANKS = 65_536;

/** The exit code after `--time-limit-ms` ran out, as `timeout(1)` exits. */
const TIME_LIMIT_EXIT_CODE = 124;

export const LAUNCH_USAGE = `usage: ${commandCatalog.launch.usage}

Starts N ranks of the command, like torchrun, on this machine or on ssh hosts, and waits for
them. Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
GROUP_WORLD_SIZE (its host's index and the number of hosts, as torchrun's), MASTER_ADDR,
MASTER_PORT (--master-port, or a free port), BATON_DEPLOYMENT, BATON_STATE_DIR and
BATON_LAUNCHER_PID, and writes its output to STATE_DIR/DEPLOYMENT/rank-R.log here. Orphans
of launchers that died are reaped first. Once the group has ended, the folders of this
user's deployments that ended over 7 days ago are removed, all but the newest 20 that ended
(--keep-ended-logs). From another terminal, \`baton status\` (with the same --state-dir)
shows the group and its ranks, and how it ended; \`baton reap\` stops the ranks of a
launcher that was killed (the next launch does too).

  --world N            number of ranks, at most ${MOST_RANKS} (required unless --hosts gives
                       them)
  --hosts LIST         where the ranks run, in rank order: comma-separated hosts, each
                       \`local\` or \`ssh://USER@HOST[:PORT]\`, optionally \`*COUNT\` for COUNT
                       ranks in a row (local*2,ssh://alice@gpu-2*2 = ranks 0-1 here, 2-3 on
                       gpu-2); the ranks listed must add up to --world (default: all local)
  --ssh-config FILE    ssh_config file for the ssh hosts (default: ~/.ssh/config)
  --remote-state-dir D state directory on the ssh hosts (default: ~/.baton/run there)
  --remote-cwd DIR     working directory of the remote ranks (default: the remote home)
  --master-addr ADDR   MASTER_ADDR (default: 127.0.0.1 when all ranks are local, else rank
                       0's host)
  --master-port PORT   MASTER_PORT (default: a port found free on this machine)
  --state-dir DIR      state directory (default: ${DEFAULT_STATE_DIR})
  --name NAME          deployment name (default: dep- and 12 random characters)
  --grace-ms MS        after SIGTERM, how long ranks get before SIGKILL (default ${DEFAULT_TEARDOWN_TIMEOUTS.termGraceMs};
                       a second Ctrl-C cuts it short)
  --load-timeout-ms MS every rank must write its ready marker (README, "Writing a rank") or
                       exit 0 within this, else the group is stopped (default ${DEFAULT_RANK_GROUP_TIMEOUTS.loadTimeoutMs}:
                       ${DEFAULT_RANK_GROUP_TIMEOUTS.loadTimeoutMs / 60_000} min; a program that writes none needs a longer one)
  --time-limit-ms MS   stop every rank (verified, as for Ctrl-C) once the group has run
                       this long, and exit 124, like timeout(1) (default: no limit)
  --no-contain         do not start the local ranks in a cgroup of their own (by default
                       they are, where the machine allows it: cgroup v2, as root or in a
                       delegated cgroup; a rank that makes cgroups of its own needs this)
  --keep-ended-logs R  how long the logs of this user's ended deployments stay in the
                       state dir: COUNT[,AGE] keeps the newest COUNT (1 to ${MOST_KEPT_LOGS}) and any
                       that ended within AGE (7d, 12h, or 0; default 7d); forever keeps them
                       all (default: $${KEEP_ENDED_LOGS_ENV}, else ${KEEP_ENDED_DEPLOYMENTS},7d)
  --ui                 serve a live dashboard of the group on 127.0.0.1 (its URL, with a
                       token, is printed on stderr): the group's, each rank's and the
                       teardown's state on their state charts; it closes with the launch
  --ui-port P          the dashboard's port (default: any free port)
  --ui-keep            keep the dashboard open after the launch until Ctrl-C
  --log-level L        ${LOG_LEVELS.join(" | ")} (default: warn)
  -h, --help           this help

Exit code: 0 when every rank exited 0 (what they left running is stopped, and named by
pid, program and rank); the first failing rank's code (128 + the signal's
number when it was killed) when one failed, after the others were stopped; 127 when the
command is not there (here or on an ssh host) and 126 when it cannot be executed (a
directory, no x bit, a bad #! line), as a shell; 1 when the launch failed otherwise or the
ranks could not all be stopped; 2 for bad usage; 130 / 143 / 129 / 131 after SIGINT /
SIGTERM / SIGHUP / SIGQUIT and 124 after --time-limit-ms, once every rank is verified gone
(Ctrl-C, or closing the terminal, stops the ranks; it never leaves one behind: run baton
in tmux, screen or setsid to keep a group through a logout). A second Ctrl-C sends SIGKILL
at once to the ranks still in their --grace-ms, verified all the same.`;

/**
 * `baton launch --world N -- cmd args…`: launches a rank group, reports where its logs are,
 * and exits with the group's code, after removing the logs of this user's deployments that
 * ended long ago (`pruneDeploymentLogs`, as `--keep-ended-logs` or `BATON_KEEP_ENDED_LOGS`
 * says). SIGINT, SIGTERM, SIGHUP and SIGQUIT (`STOP_SIGNALS`) stop the group with a verified
 * teardown before the command returns. With `--ui`, the dashboard closes once the group has
 * ended, or with `--ui-keep` after the Ctrl-C that follows (`closeDashboard`, as `baton run`).
 *
 * @example
 * ```ts
 * process.exitCode = await launchCommand(["--world", "2", "--", "python3", "train.py"]);
 * ```
 */
export async function launchCommand(argv: string[]): Promise<number> {
  const split = argv.indexOf("--");
  const own = split === -1 ? argv : argv.slice(0, split);
  const { values, positionals, mistake } = parseFlags(
    "launch",
    { args: own, allowPositionals: true, options: commandCatalog.launch.flags },
    // An unknown flag may be the ranks' command's own, given without the -- before it.
    "if it is the command's own, put the command after -- (baton launch --world 2 -- cmd --its-flags)",
  );
  if (values.help) return printHelp(LAUNCH_USAGE, mistake);
  emptyFlags("launch", values, [
    "state-dir",
    "name",
    "ssh-config",
    "remote-state-dir",
    "remote-cwd",
    "master-addr",
  ]);
  const command = split === -1 ? positionals : [...positionals, ...argv.slice(split + 1)];
  const portToUi = portGivenToUi(positionals.slice(0, 1), values.ui, "the ranks' command");
  if (portToUi) throw portToUi;
  if (command.length === 0) {
    throw new ConfigError(
      "no command to run: give it after -- (baton launch --world 2 -- cmd args; baton launch --help shows how)",
    );
  }
  const hosts = values.hosts === undefined ? undefined : hostList(values.hosts);
  if (values.world === undefined && hosts === undefined) {
    throw new ConfigError(
      "no number of ranks: give --world N, the number of ranks to start (or --hosts, which places them)",
    );
  }
  const world =
    wholeNumberFlag("--world", values.world, "a whole number of ranks", { most: MOST_RANKS }) ??
    hosts?.length ??
    0;
  if (hosts !== undefined && hosts.length !== world) {
    throw new ConfigError(
      `--hosts places ${hosts.length} rank${hosts.length === 1 ? "" : "s"} but --world is ${world}: list one host per rank, or HOST*COUNT`,
    );
  }
  const sshConfig = sshConfigFlag(values["ssh-config"]);
  const remote = {
    ...(sshConfig !== undefined && { ssh: { configFile: sshConfig } }),
    ...(values["remote-state-dir"] !== undefined && { stateDir: values["remote-state-dir"] }),
    ...(values["remote-cwd"] !== undefined && { cwd: values["remote-cwd"] }),
  };
  const level = choiceFlag("--log-level", values["log-level"] as string, LOG_LEVELS);
  const masterPort = wholeNumberFlag("--master-port", values["master-port"], "a TCP port", {
    most: 65_535,
  });
  const graceMs = wholeNumberFlag("--grace-ms", values["grace-ms"], MILLISECONDS);
  /** What the lines that say the group begins to stop give the ranks. */
  const termGraceMs = graceMs ?? DEFAULT_TEARDOWN_TIMEOUTS.termGraceMs;
  const loadTimeoutMs = wholeNumberFlag(
    "--load-timeout-ms",
    values["load-timeout-ms"],
    MILLISECONDS,
  );
  const timeLimitMs = wholeNumberFlag("--time-limit-ms", values["time-limit-ms"], MILLISECONDS);
  const keepEndedLogs =
    values["keep-ended-logs"] === undefined
      ? endedLogsRetention(process.env)
      : parseEndedLogsRetention(values["keep-ended-logs"], "--keep-ended-logs");
  const uiPort = uiPortFlag(values["ui-port"], { ui: values.ui });
  if (values["ui-keep"] && !values.ui) throw withoutUi("--ui-keep");
  // A state dir that is a file, or that this user may not list, is refused as baton status and
  // baton reap refuse it: in the same words, before any dashboard or deployment name.
  stateDirExists(resolve(values["state-dir"] ?? DEFAULT_STATE_DIR));
  const status = process.stderr.isTTY === true ? liveStatus(process.stderr) : undefined;
  // On a terminal, log lines go above the status line, which they were glued to the end of.
  // Its stderr is for people, piped to a file or not, as baton run's is (ARCHITECTURE, logs):
  // the same lines as on a terminal, not JSON among its human lines.
  const logger = createLogger({
    level,
    pretty: true,
    ...(status && { stderr: (text: string) => status.line.print(text) }),
  });
  // Opened before any rank starts: a port that is taken fails the launch, not a running group.
  const ui = values.ui ? await DashboardServer.start({ port: uiPort, logger }) : undefined;
  if (ui !== undefined) process.stderr.write(`dashboard: ${ui.url}\n`);
  const shown = ui?.showGroup();
  const say = (line: string) => {
    const text = `baton launch: ${line}\n`;
    if (status !== undefined) status.line.print(text);
    else process.stderr.write(text);
  };
  /** What the group does now, for what a signal says it stops. */
  let groupState = "reaping";
  /**
   * Why the launcher stopped the group (a signal, the time limit), its exit code then, and
   * whether a later signal cut the grace short.
   */
  let stopped: { exitCode: number; beforeAnyRank: boolean; now?: true } | undefined;
  /** Whether the line that says where the ranks' logs are was printed. */
  let logsSaid = false;
  const watchers = [
    status?.show,
    shown?.report,
    (progress: GroupProgress) => {
      // Where the logs are is said once a rank has started, and so has one: a launch refused
      // before (a name another launcher holds, a program not there, an ssh host that does not
      // answer) has none to point at.
      if (!logsSaid && progress.ranks.some((rank) => rank.pid !== undefined)) {
        logsSaid = true;
        say(
          `deployment ${progress.deployment}: ${world} rank${world === 1 ? "" : "s"} of ${shellLine(command)}; logs in ${group.dir}/rank-*.log`,
        );
      }
      // A stop of the launcher's own (a signal, the time limit) said so already.
      if (groupState !== "stopping" && progress.state === "stopping" && stopped === undefined) {
        const line = stoppingLine(progress, termGraceMs);
        if (line !== undefined) say(line);
      }
      groupState = progress.state;
    },
  ].filter((show) => show !== undefined);
  let group: ReturnType<typeof launchGroup>;
  try {
    group = launchGroup({
      argv: command,
      worldSize: world,
      ...(hosts !== undefined && { hosts }),
      ...(Object.keys(remote).length > 0 && { remote }),
      ...(values["master-addr"] !== undefined && { masterAddr: values["master-addr"] }),
      ...(masterPort !== undefined && { masterPort }),
      ...(values["state-dir"] !== undefined && { stateDir: values["state-dir"] }),
      ...(values.name !== undefined && { name: values.name }),
      ...(graceMs !== undefined && { teardown: { termGraceMs: graceMs } }),
      ...(loadTimeoutMs !== undefined && { timeouts: { loadTimeoutMs } }),
      ...(values["no-contain"] && { contain: false }),
      logger,
      inspect: watchGroup((progress) => {
        for (const show of watchers) show(progress);
      }),
    });
  } catch (error) {
    // A launch refused before any rank started (a bad --name) leaves no dashboard open.
    await ui?.close();
    throw error;
  }
  if (shown !== undefined) {
    group.wait().then(
      (exit) => shown.ended(exit.status === "succeeded"),
      () => shown.ended(false),
    );
  }
  group.ready.then(
    (barrier) => say(barrierLine(barrier, world)),
    () => {},
  );

  let stopping: Promise<unknown> | undefined;
  /** The group's own stop (a rank failed) was cut short by a signal. */
  let hurried = false;
  /** `signalled`: a signal began the stop, so the next Ctrl-C is a second one. */
  const stopAll = (why: string, reason: string, exitCode: number, signalled: boolean) => {
    if (stopped?.now || hurried) {
      say(`${why}: still stopping the ranks (a teardown is verified before baton exits)`);
      return;
    }
    // A second Ctrl-C, as in docker compose: the grace is what the user will not wait for. So
    // is a first one while the group stops on its own, as the line that said so offered; the
    // group's outcome (its failed rank's code and log) stays the launch's.
    if (stopped !== undefined || groupState === "stopping") {
      if (stopped !== undefined) stopped.now = true;
      else hurried = true;
      say(
        `${why}: no more grace, SIGKILL to what is left ${stopped?.beforeAnyRank ? "of the orphans being reaped" : `of ${group.deployment}`} (a teardown is verified before baton exits)`,
      );
      void group.stop(reason, { now: true }).catch(() => {});
      return;
    }
    stopped = { exitCode, beforeAnyRank: groupState === "reaping" };
    say(
      stopped.beforeAnyRank
        ? `${why}: no rank of ${group.deployment} was started, and none will be (a reap of orphans under way finishes first)`
        : `${why}: stopping every rank of ${group.deployment} ${stoppingHow(termGraceMs, signalled ? "a second Ctrl-C" : "Ctrl-C")}`,
    );
    stopping = group.stop(reason).catch((error: unknown) => error);
  };
  const onSignal = (signal: StopSignal) =>
    stopAll(signal, `${signal} to the launcher`, SIGNAL_EXIT[signal], true);
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  const clock = nodeClock();
  const timeLimit =
    timeLimitMs === undefined
      ? undefined
      : clock.setTimeout(() => {
          const why = `time limit of ${timeLimitMs} ms reached`;
          stopAll(why, why, TIME_LIMIT_EXIT_CODE, false);
        }, timeLimitMs);
  /**
   * The group's code is to be exited with even if the ranks' child handles or the lease's
   * renewal hold the process open (after the dashboard, which --ui-keep holds open on purpose).
   */
  let holding = false;
  const leftHolding = (code: number) => {
    holding = true;
    return code;
  };
  /** The launch's exit code once the group has ended; throws for an error of baton's. */
  const groupExit = async (): Promise<number> => {
    try {
      const exit = await group.wait();
      for (const folder of exit.foldersNotRemoved) say(`warning: ${folderNotRemovedLine(folder)}`);
      if (stopped !== undefined) {
        await stopping;
        say(
          stopped.beforeAnyRank
            ? "stopped before any rank started"
            : `stopped; every rank is gone (verified in ${exit.teardown.elapsedMs} ms)`,
        );
        return stopped.exitCode;
      }
      say(["every rank exited 0", leftRunningLine(exit.leftRunning)].filter(Boolean).join("; "));
      return 0;
    } catch (error) {
      // A teardown that could not be verified keeps the ranks' child handles and the lease's
      // renewal alive: the launcher exits anyway, and `baton reap` takes over from its manifest.
      const unverified = (code: number) => {
        say(
          `the manifest is kept: run \`baton reap --state-dir ${values["state-dir"] ?? DEFAULT_STATE_DIR}\` to try the teardown again`,
        );
        return leftHolding(code);
      };
      if (error instanceof TeardownError) {
        say(error.message);
        return unverified(1);
      }
      if (!(error instanceof RankGroupError)) throw error;
      if (error.code === "STOPPED" || stopped !== undefined) {
        const stopError = await stopping;
        if (stopError instanceof Error) {
          say(stopError.message);
          return stopError instanceof TeardownError ? unverified(1) : leftHolding(1);
        }
        return stopped?.exitCode ?? 130;
      }
      say(codedMessage(error.message, error.code));
      const code = error.details.exitCode ?? 1;
      return error.details.teardownError ? unverified(code) : leftHolding(code);
    }
  };
  let code: number | undefined;
  try {
    code = await groupExit();
    return code;
  } finally {
    status?.stop();
    clock.clearTimeout(timeLimit);
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    // As a rank job does: once the group has ended, its own folder is the newest.
    await pruneDeploymentLogs(dirname(group.dir), {
      now: clock.now(),
      logger,
      retention: keepEndedLogs,
    });
    // A launch that ended keeps its dashboard with --ui-keep (Ctrl-C, no longer ours, ends
    // the wait); one baton failed closes it.
    if (ui !== undefined) {
      if (code === undefined) await ui.close();
      else await closeDashboard(ui, { keep: values["ui-keep"], what: "launch" });
    }
    if (holding && code !== undefined) exitSoon(code, EXIT_GRACE_MS);
  }
}

/**
 * The live status line of a launch on a terminal: redrawn whenever the group or a rank
 * changes state, and every second for the time since the launch.
 */
function liveStatus(out: NodeJS.WriteStream) {
  const line = new LiveLine(out);
  const startedAt = Date.now();
  let latest: GroupProgress | undefined;
  const draw = () => {
    if (latest !== undefined) line.draw(groupStatusLine(latest, Date.now() - startedAt));
  };
  const ticker = setInterval(draw, 1_000);
  ticker.unref();
  return {
    line,
    show(progress: GroupProgress) {
      latest = progress;
      draw();
    },
    stop() {
      clearInterval(ticker);
      line.clear();
    },
  };
}

/** What passing the barrier meant: ranks ready, or ranks that exited 0 without ever serving. */
function barrierLine({ readyRanks, exitedRanks }: BarrierPassed, world: number): string {
  if (exitedRanks.length === 0)
    return world === 1 ? "the rank is ready" : `all ${world} ranks ready`;
  const exited = `${rankList(exitedRanks)} exited 0 before the launcher saw a ready marker`;
  return readyRanks.length === 0 ? exited : `${exited}; ${rankList(readyRanks)} ready`;
}

/** How long the launcher lets its last log lines out before it exits over what still runs. */
const EXIT_GRACE_MS = 1_000;

/**
 * `--hosts`: comma-separated hosts in rank order, each optionally `*COUNT` for COUNT ranks in
 * a row, `MOST_RANKS` in all. Each host spec is checked here (`parseRankHost`), before
 * `--world` is compared with the count: `--world 2 --hosts gpu-2` is told that `gpu-2` is no
 * host spec (its `ssh://USER@` is missing), not that it places 1 rank.
 */
function hostList(text: string): string[] {
  const entries = text.split(",").map((entry) => {
    const star = entry.lastIndexOf("*");
    const host = star === -1 ? entry : entry.slice(0, star);
    const count = star === -1 ? "1" : entry.slice(star + 1);
    if (host === "" || !/^[1-9]\d{0,5}$/.test(count)) {
      throw new ConfigError(
        `--hosts entry "${entry}" must be a host (\`local\` or ssh://USER@HOST[:PORT]) with an optional *COUNT, as in local*2,ssh://alice@gpu-2*2`,
      );
    }
    parseRankHost(host);
    return { host, count: Number(count) };
  });
  const ranks = entries.reduce((sum, { count }) => sum + count, 0);
  if (ranks > MOST_RANKS) {
    throw new ConfigError(`--hosts places ${ranks} ranks; a launch starts at most ${MOST_RANKS}`);
  }
  return entries.flatMap(({ host, count }) => Array.from({ length: count }, () => host));
}
