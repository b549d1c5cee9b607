import { join, resolve } from "node:path";
import { DEFAULT_TEARDOWN_TIMEOUTS } from "../machines/teardown.ts";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";
import { leaseHolder } from "../rank/leaseFormat.ts";
import { rankList } from "../rank/rankList.ts";
import { folderNotRemovedLine } from "../runtime/folderNotRemoved.ts";
import { createLogger, LOG_LEVELS } from "../runtime/logger.ts";
import { nodeClock } from "../runtime/nodeClock.ts";
import { nodeFiles } from "../runtime/nodeFiles.ts";
import { nodeProcs } from "../runtime/nodeProcs.ts";
import { reapDeployments } from "../runtime/reaper.ts";
import { reapRunFiles } from "../runtime/reapRunFiles.ts";
import { nodeSlurmCommands } from "../runtime/slurmCommands.ts";
import { choiceFlag } from "./choiceFlag.ts";
import { commandCatalog } from "./commandCatalog.ts";
import { emptyFlags } from "./emptyFlags.ts";
import { leftRunningLine } from "./leftRunningLine.ts";
import { nothingInStateDir } from "./nothingInStateDir.ts";
import { parseFlags } from "./parseFlags.ts";
import { printHelp } from "./printHelp.ts";
import { SIGNAL_EXIT } from "./signalExit.ts";
import { sshConfigFlag } from "./sshConfigFlag.ts";
import { stateDirExists } from "./stateDirExists.ts";
import { MILLISECONDS, wholeNumberFlag } from "./wholeNumberFlag.ts";

/** The signals that cut a reap's grace short, and a second time end it. */
const REAP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

const REAP_USAGE = `usage: ${commandCatalog.reap.usage}

Finds the deployments in the state directory whose launcher is dead (its pid is gone, or its
lease is stale or another launcher's), stops their ranks with a verified teardown, and
removes their manifests; then removes the empty cgroups that deployments of this state dir
which are gone left behind. Deployments with a live launcher are left alone. \`baton launch\`
does this too, every time it starts. In a store's run/ folder (.baton/run, the default) it
also cancels the Slurm allocations that \`baton run --slurm\` coordinators killed on this
host left in the queue (their batch scripts name their pools; a live coordinator's are
left alone), and removes the dead runs' files and graph locks (or registrations, for runs
that take no lock: --no-store, --store-read-only; \`baton status\` lists those runs as
dead until then, or until the next \`baton run\` there removes them). Without Slurm's
commands on the PATH it cannot look at their queue: it says so and keeps the scripts, for
a reap on this host with the commands on its PATH (the allocations end by themselves once
they start, as their workers cannot reach the dead run; no failure, exit 0). The report (a
line per deployment: reaped and why, and what its ranks left running that the reap stopped,
each by pid, program and rank, then a line for its folder if the clear left it empty and
could not remove it (no failure: why, and what to do); live, another machine's or user's,
NOT reaped and why, its empty cgroup removed; a line per dead run whose lock or registration
it removed, or NOT and why; a line per Slurm pool: its cancelled allocations, or why not)
goes to stdout; warnings and errors to stderr.

  --state-dir DIR   state directory (default: ${DEFAULT_STATE_DIR})
  --grace-ms MS     after SIGTERM, how long orphans get before SIGKILL (default ${DEFAULT_TEARDOWN_TIMEOUTS.termGraceMs})
  --ssh-config FILE ssh_config file for reaching the ssh hosts of remote ranks
  --json            print the report as JSON instead: { stateDir, stateDirExists,
                    reaped, live, failed, foreign, otherUsers, waiting, cgroups, runs,
                    runsNotRemoved, slurm };
                    each reaped: { deployment, why, elapsedMs, swept, stoppedRanks,
                    leftRunning: [{ pid, rank, host, program, outsideGroup }],
                    foldersNotRemoved: [{ dir, host, reason }] (its folder left empty
                    that the clear could not remove: no failure) }; each
                    waiting (a fresh lease, no manifest, its launcher maybe starting):
                    { deployment, pid, host, staleInMs } (host: the launcher's machine
                    when another one's, else null; a lease of this machine whose
                    launcher's pid is gone is reaped at once instead);
                    each of cgroups (an empty one removed): { deployment, cgroup }; each
                    of runs (a dead run's lock removed): { pid, host, graph, why }; each
                    of runsNotRemoved: { pid, host, graph, path, error }; slurm:
                    { cancelled: [{ pool, run, allocations }], failed: [{ pool, run,
                    error }], unchecked: [{ pool, run, script }] } (run: the dead
                    coordinator's run files' stem; unchecked: Slurm's commands not on the
                    PATH, the batch script kept)
  --log-level L     ${LOG_LEVELS.join(" | ")} (default: warn)
  -h, --help        this help

Ctrl-C (or SIGTERM, SIGHUP) sends SIGKILL at once to the orphans still in their grace, and
the reap is verified all the same; a second one leaves it unfinished (exit 130, 143 or 129;
the manifests stay, for the next reap).

Exit code: 0 when nothing is left to reap, 1 when some deployment could not be reaped (its
manifest stays, and launching that deployment is refused until a reap succeeds), a dead
run's lock or registration could not be removed, or a Slurm command failed cancelling some
dead run's allocations, 2 for bad usage.`;

/**
 * `baton reap`: reaps the orphaned deployments of a state dir and reports each one. The first
 * SIGINT, SIGTERM or SIGHUP cuts the orphans' TERM grace short (`hurry`: KILL at once, still
 * verified); a second ends the command at once, the reap unfinished and its manifests kept.
 *
 * @example
 * ```ts
 * process.exitCode = await reapCommand(["--state-dir", ".baton/run"]);
 * ```
 */
export async function reapCommand(argv: string[]): Promise<number> {
  const { values, mistake } = parseFlags("reap", {
    args: argv,
    options: commandCatalog.reap.flags,
  });
  if (values.help) return printHelp(REAP_USAGE, mistake);
  emptyFlags("reap", values, ["state-dir", "grace-ms", "ssh-config", "log-level"]);
  const level = choiceFlag("--log-level", values["log-level"] as string, LOG_LEVELS);
  const grace = wholeNumberFlag("--grace-ms", values["grace-ms"], MILLISECONDS);
  const sshConfig = sshConfigFlag(values["ssh-config"]);
  const stateDir = resolve(values["state-dir"] ?? DEFAULT_STATE_DIR);
  const exists = stateDirExists(stateDir);
  const ports = { procs: nodeProcs(), files: nodeFiles(), clock: nodeClock() };
  const hurry = new AbortController();
  const onSignal = (signal: "SIGINT" | "SIGTERM" | "SIGHUP") => {
    if (hurry.signal.aborted) {
      process.stderr.write(
        `baton reap: ${signal} again: stopping with the reap unfinished; its manifests stay, for the next \`baton reap\`\n`,
      );
      process.exit(SIGNAL_EXIT[signal]);
    }
    hurry.abort();
    process.stderr.write(
      `baton reap: ${signal}: no more grace, SIGKILL to the orphans still running (the reap is verified before baton exits; ${signal} again leaves it unfinished)\n`,
    );
  };
  for (const signal of REAP_SIGNALS) process.on(signal, onSignal);
  // Its stderr is for people, piped to a file or not, as baton run's is (ARCHITECTURE, logs):
  // the same lines as on a terminal, not JSON among its warnings.
  const logger = createLogger({ level, pretty: true });
  let report: Awaited<ReturnType<typeof reapDeployments>>;
  let runFiles: Awaited<ReturnType<typeof reapRunFiles>>;
  try {
    report = await reapDeployments({
      stateDir,
      ...ports,
      logger,
      ...(grace !== undefined && { teardown: { termGraceMs: grace } }),
      ...(sshConfig !== undefined && { ssh: { configFile: sshConfig } }),
      hurry: hurry.signal,
    });
    // After the rank groups, whatever Slurm says: a machine without Slurm still reaps them.
    runFiles = await reapRunFiles(stateDir, {
      files: ports.files,
      slurm: nodeSlurmCommands(),
      logger,
    });
  } finally {
    for (const signal of REAP_SIGNALS) process.off(signal, onSignal);
  }
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify(
        {
          stateDir,
          stateDirExists: exists,
          reaped: report.reaped.map(
            ({ deployment, why, stopped, leftRunning, foldersNotRemoved, teardown }) => ({
              deployment,
              why,
              elapsedMs: teardown.elapsedMs,
              swept: teardown.swept,
              stoppedRanks: stopped,
              leftRunning,
              foldersNotRemoved,
            }),
          ),
          live: report.live,
          failed: report.failed.map(({ deployment, error }) => ({
            deployment,
            error: error.message,
          })),
          foreign: report.foreign,
          otherUsers: report.otherUsers,
          waiting: report.waiting,
          cgroups: report.cgroups,
          runs: runFiles.locks.map(({ pid, host, graph, gone }) => ({
            pid,
            host,
            graph,
            why: gone,
          })),
          runsNotRemoved: runFiles.locksNotRemoved.map(({ run, error }) => ({
            pid: run.pid,
            host: run.host,
            graph: run.graph,
            path: run.path,
            error: error.message,
          })),
          slurm: {
            cancelled: runFiles.cancelled.map(({ pool, run, allocations }) => ({
              pool,
              run,
              allocations,
            })),
            failed: runFiles.failed.map(({ pool, run, error }) => ({
              pool,
              run,
              error: error.message,
            })),
            unchecked: runFiles.unchecked.map(({ pool, run, runFile }) => ({
              pool,
              run,
              script: join(stateDir, runFile),
            })),
          },
          // An unknown value (the owner nobody could tell) is null, as in baton status: every key stays.
        },
        (_, value) => value ?? null,
      )}\n`,
    );
  } else {
    // The report is the command's output, as baton status's table is: stdout. Stderr is for
    // its log's warnings and for an error that stops it; the exit code says if a reap failed.
    const say = (line: string) => process.stdout.write(`${line}\n`);
    for (const {
      deployment,
      why,
      stopped,
      leftRunning,
      foldersNotRemoved,
      teardown,
    } of report.reaped) {
      const ranks = stopped.length === 0 ? "" : `; stopped ${rankList(stopped)} (still running)`;
      const left = leftRunningLine(leftRunning);
      say(
        `${deployment}: reaped (${why})${ranks}; verified in ${teardown.elapsedMs} ms${left === undefined ? "" : `; ${left}`}`,
      );
      for (const folder of foldersNotRemoved) say(`${deployment}: ${folderNotRemovedLine(folder)}`);
    }
    for (const { deployment, pid } of report.live) say(`${deployment}: live (launcher pid ${pid})`);
    for (const { deployment, host } of report.foreign)
      say(`${deployment}: launched on ${host}, not here`);
    for (const { deployment, owner } of report.otherUsers)
      say(`${deployment}: ${owner === undefined ? "another user's" : `${owner}'s`}, left alone`);
    for (const { deployment, error } of report.failed)
      say(`${deployment}: NOT reaped: ${error.message}`);
    for (const { deployment, pid, host, staleInMs } of report.waiting)
      say(
        `${deployment}: a lease and no manifest: launcher ${leaseHolder({ pid, host })} is starting, or died before it wrote its manifest; left alone until its lease is stale, in ${Math.ceil(staleInMs / 1000)} s (reap again then)`,
      );
    for (const { deployment, cgroup } of report.cgroups)
      say(`${deployment}: removed the empty cgroup its last launch left behind, ${cgroup}`);
    for (const { pid, host, graph, gone, withoutLock } of runFiles.locks)
      say(
        `dead run pid ${pid} on ${host} of ${graph}: removed its ${withoutLock === undefined ? "graph lock (" : `registration (a ${withoutLock} run; `}${gone})`,
      );
    for (const { run, error } of runFiles.locksNotRemoved)
      say(`dead run pid ${run.pid} on ${run.host} of ${run.graph}: NOT removed: ${error.message}`);
    for (const { pool, run, allocations } of runFiles.cancelled)
      say(
        `Slurm pool ${pool} of dead run ${run}: cancelled its allocation${allocations.length === 1 ? "" : "s"} ${allocations.join(", ")}`,
      );
    for (const { pool, run, error } of runFiles.failed)
      say(
        `Slurm pool ${pool} of dead run ${run}: allocations NOT cancelled: ${error.message}; cancel them with \`scancel -n ${pool}\` (its batch script stays, for the next reap)`,
      );
    for (const { pool, run, runFile } of runFiles.unchecked)
      say(
        `Slurm pool ${pool} of dead run ${run}: allocations not looked for, as Slurm's commands (squeue, scancel) are not on this machine's PATH; any still queued end by themselves once they start (their workers cannot reach the dead run); to cancel them sooner, run \`scancel -n ${pool}\` where Slurm is, or baton reap on this host with Slurm's commands on the PATH (the batch script naming the pool stays for it: ${join(stateDir, runFile)})`,
      );
    const { reaped, live, failed, waiting, cgroups } = report;
    const runLines =
      runFiles.locks.length +
      runFiles.locksNotRemoved.length +
      runFiles.cancelled.length +
      runFiles.failed.length +
      runFiles.unchecked.length;
    if (
      reaped.length + live.length + failed.length + waiting.length + cgroups.length + runLines ===
      0
    ) {
      say(await nothingInStateDir("nothing to reap", stateDir, exists, ports));
    }
  }
  // Slurm's commands missing here fail nothing (`unchecked`): the allocations end by themselves,
  // and a reap on this host with them on the PATH, or scancel where Slurm is, cancels them.
  return report.failed.length + runFiles.failed.length + runFiles.locksNotRemoved.length === 0
    ? 0
    : 1;
}
