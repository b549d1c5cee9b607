import { resolve } from "node:path";
import { formatDuration } from "../formatDuration.ts";
import { DEFAULT_STATE_DIR } from "../rank/deploymentPaths.ts";
import {
  type DeploymentStatus,
  type RankStatus,
  readDeploymentStatuses,
} from "../rank/deploymentStatus.ts";
import { nodeClock } from "../runtime/nodeClock.ts";
import { nodeFiles } from "../runtime/nodeFiles.ts";
import { nodeProcs } from "../runtime/nodeProcs.ts";
import { commandCatalog } from "./commandCatalog.ts";
import { emptyFlags } from "./emptyFlags.ts";
import { leftRunningLine } from "./leftRunningLine.ts";
import { nothingInStateDir } from "./nothingInStateDir.ts";
import { parseFlags } from "./parseFlags.ts";
import { printHelp } from "./printHelp.ts";
import { describeRuns, readRunStatuses } from "./runStatus.ts";
import { stateDirExists } from "./stateDirExists.ts";

const STATUS_USAGE = `usage: ${commandCatalog.status.usage}

Lists the \`baton run\`s whose store's run/ folder is the state directory (the default
.baton/run), by the graph locks they hold: dead ones first (killed before they could remove
their lock: run \`baton reap\`), then running ones, with pid, host, graph, since when, jobs
done as of the lock's last renewal (every 10 s), where workers join, the store and the logs.
Runs that hold no lock (--no-store, --store-read-only) are listed the same from the
registration each keeps beside its run files (.baton/run beside the graph module), marked
(--no-store: no lock).

Then the rank-group deployments in the state directory, what needs attention first:
orphaned, then live, unreadable and ended ones, each the newest first (by when it ended,
else when it was launched); a last line counts them
(\`1 orphaned (run: baton reap …), 2 live, 17 ended\`), as one counts the runs; orphans
another machine launched are counted with that machine, where their reap is
(\`3 orphaned (2 here: run baton reap …; 1 launched on login1: run it there)\`).
A deployment is live (the launcher runs and renews its lease; up how long; a launcher on
another machine sharing the state directory by its lease's age alone, since its pid means
nothing here, and its ranks are "remote" too), orphaned (the
launcher's pid is gone or its lease is stale: run \`baton reap\`; launched how long ago, and
when its launcher was last seen: its lease's last renewal, or the last rank exit it
recorded), ended (how: succeeded, failed, stopped or reaped, why and when, each rank's exit
code or signal as its launcher recorded it, what the ranks left running that baton stopped
(\`baton stopped 1 process they left running: pid 4242 (sleep) of rank 0\`), and where the
logs are; perhaps leftovers \`baton reap\` removes) or unreadable (another user's, in a
shared state dir), with each rank's pid, phase (from its marker; "gone" when the pid is
dead, "reused" when another program has it now, "remote" for a rank on an ssh host, not
checked from here, "exited" once its exit is recorded, "reaped" when a reap stopped it after
its launcher died), age and heartbeat. Only reads; never signals or removes anything.

  --state-dir DIR   the root state directory (default: ${DEFAULT_STATE_DIR})
  --json            one JSON object: { stateDir, stateDirExists, runs: [...],
                    unreadableRunLocks: [...], deployments: [...] }, in the table's order
                    (unknown values are null; a run: { state: running | dead, why, pid,
                    host, graph, argv, withoutLock, startedAt, ageMs, store, logs, address,
                    listenAddress, secretFile, progress: { total, completed, failed,
                    running, agoMs }, lock, lockRenewedAgoMs }; a deployment's
                    reapOn: the machine whose baton reap reaps it, null for this one;
                    an orphan's launcherLastSeen: { at, agoMs }; an ended one's ended:
                    { status, reason, at, agoMs, ranForMs, ranAtLeast, leftRunning:
                    [{ pid, rank, host, program, outsideGroup }], null when not recorded:
                    a deployment reaped by an older baton })
  -h, --help        this help

Exit code: 0 whatever the deployments' states (read them from --json), 2 for bad usage (an
empty flag, a state dir that is a file or that this user may not list).`;

/**
 * `baton status`: prints the deployments of a state dir, as a table or (`--json`) as one
 * JSON object. Returns the exit code (0; 2 for bad usage).
 *
 * @example
 * ```ts
 * process.exitCode = await statusCommand(["--state-dir", "/srv/app/.baton/run", "--json"]);
 * ```
 */
export async function statusCommand(argv: string[]): Promise<number> {
  const { values, mistake } = parseFlags("status", {
    args: argv,
    options: commandCatalog.status.flags,
  });
  if (values.help) return printHelp(STATUS_USAGE, mistake);
  emptyFlags("status", values, ["state-dir"]);
  const stateDir = resolve(values["state-dir"]);
  const exists = stateDirExists(stateDir);
  const ports = { files: nodeFiles(), procs: nodeProcs(), clock: nodeClock() };
  const deployments = await readDeploymentStatuses(ports, stateDir);
  const { runs, problems } = await readRunStatuses(stateDir, ports.files);
  const anyRun = runs.length + problems.length > 0;
  process.stdout.write(
    values.json
      ? `${JSON.stringify(
          { stateDir, stateDirExists: exists, runs, unreadableRunLocks: problems, deployments },
          (_, value) => value ?? null,
        )}\n`
      : [
          anyRun && describeRuns(stateDir, runs, problems),
          deployments.length > 0
            ? describeDeployments(stateDir, deployments)
            : !anyRun &&
              `${await nothingInStateDir("no runs or deployments", stateDir, exists, ports)}\n`,
        ]
          .filter(Boolean)
          .join("\n"),
  );
  return 0;
}

/** The table `baton status` prints. */
function describeDeployments(stateDir: string, deployments: DeploymentStatus[]): string {
  const blocks = deployments.map((dep) => {
    // An orphan's launcher is not up: what counts is since when nobody has seen it.
    const lastSeen = dep.launcherLastSeen;
    const head = [
      dep.deployment,
      dep.state === "live" ? "live" : `${dep.state} (${dep.reason})`,
      dep.launcher && `launcher ${dep.launcher.pid}${launcherNote(dep.launcher, lastSeen)}`,
      dep.worldSize !== undefined && `world ${dep.worldSize}`,
      dep.ageMs !== undefined &&
        (dep.state === "live"
          ? `up ${formatDuration(dep.ageMs)}`
          : `launched ${formatDuration(dep.ageMs)} ago`),
      dep.lease &&
        lastSeen === undefined &&
        `lease renewed ${formatDuration(dep.lease.ageMs)} ago${dep.lease.stale ? " (stale)" : ""}`,
      dep.ended && endedNote(dep.ended),
      dep.cgroup && `contained: ${describeCgroup(dep.cgroup)}`,
    ].filter(Boolean);
    // An ended deployment's ranks have no heartbeat to show; what is known is how they exited.
    const running = dep.state !== "ended";
    const exits = dep.ended !== undefined || dep.ranks.some((rank) => rank.exit !== undefined);
    const columns: [string, (rank: RankStatus) => string][] = [
      ["RANK", (rank) => String(rank.rank)],
      ["PID", (rank) => (rank.pid === undefined ? "-" : String(rank.pid))],
      ["PHASE", (rank) => (rank.phase === "remote" ? `remote (${rank.host})` : rank.phase)],
      ...(running ? LIVE_COLUMNS : []),
      ...(exits ? EXIT_COLUMNS : []),
    ];
    const rows = [
      columns.map(([title]) => title),
      ...dep.ranks.map((rank) => columns.map(([, cell]) => cell(rank))),
    ];
    const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
    const table = rows.map(
      (row) =>
        `  ${row
          .map((cell, column) => cell.padEnd(widths[column]!))
          .join("  ")
          .trimEnd()}`,
    );
    const reaped = dep.ranks.some((rank) => rank.phase === "reaped")
      ? "; reaped: it still ran, and the reap stopped it"
      : "";
    // What its ranks left running and the teardown stopped, as `baton launch` said it.
    const leftRunning =
      dep.ended &&
      (dep.ended.leftRunning === undefined
        ? "what its ranks left running was not recorded (the reap that ended it was an older baton's)"
        : leftRunningLine(dep.ended.leftRunning));
    const notes = [
      // What to do about an orphan, unless its reason already says when baton reap will.
      ...(dep.state === "orphaned" && !dep.reason?.includes("baton reap")
        ? [
            `  \`baton reap --state-dir ${stateDir}\` ${nothingRuns(dep) ? "clears its control files (nothing of it runs any more)" : "stops its ranks (verified) and clears its control files"}`,
          ]
        : []),
      ...(dep.ended !== undefined && dep.ranks.some((rank) => rank.exit === undefined)
        ? [
            `  (EXIT -: its launcher died before that rank exited, so nobody recorded how; its log may say${reaped})`,
          ]
        : []),
      ...(leftRunning === undefined ? [] : [`  ${leftRunning}`]),
      ...(dep.ranks.some((rank) => rank.log !== undefined)
        ? [`  logs: ${stateDir}/${dep.deployment}/rank-*.log`]
        : []),
    ];
    const problems = dep.problems.map((problem) => `  ! ${problem}`);
    return [head.join("  "), ...(dep.ranks.length > 0 ? table : []), ...notes, ...problems].join(
      "\n",
    );
  });
  return `${blocks.join("\n\n")}\n\n${summary(stateDir, deployments)}\n`;
}

/**
 * The table's last line, how many deployments are in each state, in the table's order:
 * `1 orphaned (run: baton reap --state-dir D), 2 live, 17 ended`.
 */
function summary(stateDir: string, deployments: DeploymentStatus[]): string {
  const counts = new Map<DeploymentStatus["state"], number>();
  for (const { state } of deployments) counts.set(state, (counts.get(state) ?? 0) + 1);
  return [...counts]
    .map(([state, count]) =>
      state === "orphaned"
        ? `${count} orphaned (${orphansReap(
            stateDir,
            deployments.filter((dep) => dep.state === "orphaned"),
          )})`
        : `${count} ${state}`,
    )
    .join(", ");
}

/**
 * Where to run `baton reap` for `orphans`: here for those a reap here reaps, and on its
 * machine for each another machine launched (`reapOn`), which a reap here leaves alone:
 * `2 here: run baton reap --state-dir D; 1 launched on login1: run it there`.
 */
function orphansReap(stateDir: string, orphans: DeploymentStatus[]): string {
  const reap = `baton reap --state-dir ${stateDir}`;
  const elsewhere = new Map<string, number>();
  for (const { reapOn } of orphans) {
    if (reapOn !== undefined) elsewhere.set(reapOn, (elsewhere.get(reapOn) ?? 0) + 1);
  }
  if (elsewhere.size === 0) return `run: ${reap}`;
  const here = orphans.filter(({ reapOn }) => reapOn === undefined).length;
  const machines = [...elsewhere]
    .map(([host, count], index) => `${count} ${index === 0 ? "launched " : ""}on ${host}`)
    .join(", ");
  const there = elsewhere.size === 1 ? "there" : "on each";
  return here === 0
    ? `${machines}: run ${reap} ${there}`
    : `${here} here: run ${reap}; ${machines}: run it ${there}`;
}

/**
 * Whether nothing of a deployment runs: every rank is known gone (not one on an ssh host,
 * unseen from here), and its cgroup, if it has one, holds no stray.
 */
function nothingRuns(dep: DeploymentStatus): boolean {
  return (
    dep.ranks.every((rank) => rank.alive === false) &&
    (dep.cgroup === undefined || dep.cgroup.processes === 0)
  );
}

/**
 * How long an ended deployment ran and when it ended: `ran 2.8 s, ended 2 h 05 min ago`; a reaped one
 * says `reaped`, and `ran at least` when some rank ended unseen after its launcher died.
 */
function endedNote(ended: NonNullable<DeploymentStatus["ended"]>): string {
  const when = `${ended.status === "reaped" ? "reaped" : "ended"} ${formatDuration(ended.agoMs)} ago`;
  if (ended.ranForMs === undefined) return when;
  return `ran ${ended.ranAtLeast ? "at least " : ""}${formatDuration(ended.ranForMs)}, ${when}`;
}

/**
 * What follows the launcher's pid: ` (gone, last seen 45.0 s ago)`, ` (on login1: its pid is not
 * looked up here)` for a lease of another machine, nothing for a live one of this machine.
 */
function launcherNote(
  { host, alive }: NonNullable<DeploymentStatus["launcher"]>,
  lastSeen: DeploymentStatus["launcherLastSeen"],
): string {
  const notes = [
    alive === undefined &&
      `on ${host ?? "a machine its lease does not name"}: its pid is not looked up here`,
    alive === false && "gone",
    lastSeen !== undefined && `last seen ${formatDuration(lastSeen.agoMs)} ago`,
  ].filter(Boolean);
  return notes.length === 0 ? "" : ` (${notes.join(", ")})`;
}

/**
 * The columns of a running (live or orphaned) deployment's ranks: what their markers say. A
 * rank whose process is gone (or another program's) has no age; its heartbeat says when it
 * was last seen.
 */
const LIVE_COLUMNS: [string, (rank: RankStatus) => string][] = [
  [
    "AGE",
    (rank) => (rank.ageMs === undefined || rank.alive === false ? "-" : formatDuration(rank.ageMs)),
  ],
  [
    "HEARTBEAT",
    (rank) =>
      rank.heartbeatAgeMs === undefined
        ? "-"
        : `${formatDuration(rank.heartbeatAgeMs)} ago${rank.heartbeatStale ? " (stale)" : ""}`,
  ],
  ["ACTIVE", (rank) => (rank.active === undefined ? "-" : String(rank.active))],
  ["EPOCH", (rank) => (rank.epoch === undefined ? "-" : String(rank.epoch))],
];

/** The columns of ranks that exited: how (`code 3`, `SIGKILL`) and when, as their launcher recorded it. */
const EXIT_COLUMNS: [string, (rank: RankStatus) => string][] = [
  ["EXIT", ({ exit }) => (exit === undefined ? "-" : (exit.signal ?? `code ${exit.code ?? "?"}`))],
  ["EXITED", ({ exit }) => (exit === undefined ? "-" : `${formatDuration(exit.agoMs)} ago`)],
];

/** What a deployment's cgroup holds: its processes, or that it is gone, or why it cannot be read. */
function describeCgroup(cgroup: NonNullable<DeploymentStatus["cgroup"]>): string {
  if (cgroup.processes !== undefined) {
    return `${cgroup.processes} process${cgroup.processes === 1 ? "" : "es"}`;
  }
  return cgroup.gone ? "cgroup gone" : `cannot read ${cgroup.path}: ${cgroup.error}`;
}
