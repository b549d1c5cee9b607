import { formatDuration } from "../formatDuration.ts";
import { type LockedProgress, type RunWithoutLock, readGraphLocks } from "../runtime/graphLock.ts";
import type { Files } from "../runtime/ports.ts";

/**
 * A `baton run` as `baton status` shows it, found by the graph lock it holds in a store's
 * `run/` folder, or by its registration there when it takes no lock (`withoutLock`):
 * `running`, or `dead` (`why`: killed before it could remove its file, which `baton reap`
 * removes). Unknown values are absent (null in `--json`).
 */
export interface RunStatus {
  state: "running" | "dead";
  /** Why a dead run is judged gone: its process is gone, its pid was reused, not renewed. */
  why?: string;
  pid: number;
  host: string;
  /** The graph module's real path. */
  graph: string;
  argv: string[];
  /** The flag with which it takes no lock (`--no-store`, `--store-read-only`). */
  withoutLock?: RunWithoutLock;
  /** When it took its lock, as an ISO time, and how long ago. */
  startedAt: string;
  ageMs: number;
  /** Its result store and log folder. */
  store?: string;
  logs?: string;
  /**
   * Where workers join it (`baton worker --connect`) and with which secret file; where it
   * listens, when that is a wildcard address (`ws://0.0.0.0:7000`) that `address` names this
   * host in place of.
   */
  address?: string;
  listenAddress?: string;
  secretFile?: string;
  /** Its jobs as of its lock's last write, `agoMs` ago (the lock is written every 10 s). */
  progress?: LockedProgress & { agoMs: number };
  /** Its lock file (its registration, for a run without lock), and how long ago the run last wrote it. */
  lock: string;
  lockRenewedAgoMs: number;
}

/**
 * The runs that hold a graph lock in `stateDir` (`readGraphLocks`), what needs attention
 * first: dead runs, then running ones, each the newest first; and the locks this user may
 * not read, as problems.
 *
 * @example
 * ```ts
 * const { runs } = await readRunStatuses(".baton/run", nodeFiles());
 * ```
 */
export async function readRunStatuses(
  stateDir: string,
  files: Files,
): Promise<{ runs: RunStatus[]; problems: string[] }> {
  const { runs, problems } = await readGraphLocks(stateDir, files);
  const now = Date.now();
  const statuses = runs.map((run): RunStatus => {
    // Whole ms, as every other time status gives: a lock's modification time has fractions.
    const renewedAgoMs = Math.round(run.renewedAgoMs);
    return {
      state: run.gone === undefined ? "running" : "dead",
      ...(run.gone !== undefined && { why: run.gone }),
      pid: run.pid,
      host: run.host,
      graph: run.graph,
      argv: run.argv,
      ...(run.withoutLock !== undefined && { withoutLock: run.withoutLock }),
      startedAt: new Date(run.startedAt).toISOString(),
      ageMs: now - run.startedAt,
      ...(run.store !== undefined && { store: run.store }),
      ...(run.logs !== undefined && { logs: run.logs }),
      ...(run.address !== undefined && { address: run.address }),
      ...(run.listenAddress !== undefined && { listenAddress: run.listenAddress }),
      ...(run.secretFile !== undefined && { secretFile: run.secretFile }),
      ...(run.progress !== undefined && {
        progress: { ...run.progress, agoMs: renewedAgoMs },
      }),
      lock: run.path,
      lockRenewedAgoMs: renewedAgoMs,
    };
  });
  statuses.sort(
    (a, b) =>
      Number(a.state === "running") - Number(b.state === "running") ||
      b.startedAt.localeCompare(a.startedAt) ||
      a.pid - b.pid,
  );
  return { runs: statuses, problems };
}

/**
 * The part of `baton status`'s table that lists runs: a block per run, then a line counting
 * them (`1 dead run (run: baton reap --state-dir D), 2 running runs`).
 *
 * @example
 * ```ts
 * process.stdout.write(describeRuns(".baton/run", runs, problems));
 * ```
 */
export function describeRuns(stateDir: string, runs: RunStatus[], problems: string[]): string {
  const blocks = runs.map((run) => {
    const head = [
      `run pid ${run.pid} on ${run.host}`,
      run.state === "running" ? "running" : `dead (${run.why})`,
      run.state === "running"
        ? `up ${formatDuration(run.ageMs)}`
        : `started ${formatDuration(run.ageMs)} ago, ${run.withoutLock === undefined ? "lock" : "registration"} last written ${formatDuration(run.lockRenewedAgoMs)} ago`,
      run.graph,
      run.withoutLock !== undefined && `(${run.withoutLock}: no lock)`,
    ].filter(Boolean);
    const lines = [
      run.progress && `  jobs: ${describeProgress(run.progress)}`,
      run.state === "running" &&
        run.address !== undefined &&
        `  workers join at ${run.address}${run.listenAddress === undefined ? "" : ` (listening on ${run.listenAddress})`}${run.secretFile === undefined ? "" : ` with --secret-file ${run.secretFile}`}`,
      run.store !== undefined && `  results: ${run.store}`,
      run.logs !== undefined &&
        `  logs: ${run.logs}${run.state === "dead" ? " (run.log says how far it got)" : ""}`,
      run.state === "dead" &&
        `  \`baton reap --state-dir ${stateDir}\` removes its ${run.withoutLock === undefined ? "lock" : "registration"} and run files, and cancels the Slurm allocations it left`,
    ].filter((line): line is string => typeof line === "string");
    return [head.join("  "), ...lines].join("\n");
  });
  const dead = runs.filter((run) => run.state === "dead").length;
  const running = runs.length - dead;
  const counts = [
    dead > 0 &&
      `${dead} dead run${dead === 1 ? "" : "s"} (run: baton reap --state-dir ${stateDir})`,
    running > 0 && `${running} running run${running === 1 ? "" : "s"}`,
  ].filter(Boolean);
  const unreadable = problems.map((problem) => `! ${problem}`);
  return `${[...blocks, ...unreadable].join("\n\n")}\n\n${counts.join(", ") || "no run can be read"}\n`;
}

/** `12 of 40 done (1 failed), 3 running, as of 4.0 s ago`. */
function describeProgress(progress: NonNullable<RunStatus["progress"]>): string {
  const done = progress.completed + progress.failed;
  const failed = progress.failed > 0 ? ` (${progress.failed} failed)` : "";
  return `${done} of ${progress.total} done${failed}, ${progress.running} running, as of ${formatDuration(progress.agoMs)} ago`;
}
