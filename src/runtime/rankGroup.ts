/**
 * A rank group as its launcher's callers see it: what to launch (`LaunchSpec`), the ports,
 * timeouts and remote options it takes, the `RankGroup` handle and what it reports (rank
 * exits, group exit, drains). `launchGroup.ts` makes one.
 */
import type { Logger } from "pino";
import type { BarrierPassed } from "../machines/group.ts";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import type { Overrides } from "../overrides.ts";
import { MARKER_HEARTBEAT_MS, MARKER_STALE_MS } from "../rank/markerFormat.ts";
import type { LeftRunning } from "../rank/outcomeFormat.ts";
import { LEASE_STALE_MS } from "../rank/rankEnv.ts";
import type { RankEvidence } from "./cancelFile.ts";
import type { FolderNotRemoved } from "./folderNotRemoved.ts";
import type { InspectOption } from "./guardInspect.ts";
import type { Clock, Entropy, Files, Procs } from "./ports.ts";
import type { SshHostOptions } from "./sshHost.ts";
import type { TeardownReport, TeardownTimeouts } from "./tearDown.ts";

/** How `RankGroup.stop` stops the ranks. */
export interface RankGroupStopOptions {
  /** No more waiting for TERM: KILL what is left at once (still verified). Default false. */
  now?: boolean | undefined;
}

/** Every wait of a rank group, in ms; DESIGN §8's defaults. */
export interface RankGroupTimeouts {
  /** Launch to every rank ready (the barrier): 30 min. */
  loadTimeoutMs: number;
  /** A rank whose marker heartbeat does not advance for this long is lost: 45 s. */
  markerStaleMs: number;
  /** How often ranks rewrite their markers (`BATON_MARKER_HEARTBEAT_MS`): 10 s. */
  markerHeartbeatMs: number;
  /** The launcher's lease goes stale after this (`BATON_LEASE_STALE_MS`); renewed every third: 30 s. */
  leaseStaleMs: number;
  /** How often the launcher reads the ranks' markers and, while draining, their acks: 100 ms. */
  watchMs: number;
  /** How long `abort`/`abortAll` wait for the ranks' evidence: 30 s. */
  drainMs: number;
}

/**
 * What a rank group waits for when `launchGroup`'s `timeouts` does not say.
 *
 * @example
 * ```ts
 * const { loadTimeoutMs } = DEFAULT_RANK_GROUP_TIMEOUTS; // 30 minutes
 * launchGroup({ argv: ["python3", "serve.py"], worldSize: 2, timeouts: { loadTimeoutMs: 2 * loadTimeoutMs } });
 * ```
 */
export const DEFAULT_RANK_GROUP_TIMEOUTS: RankGroupTimeouts = {
  loadTimeoutMs: 30 * 60_000,
  markerStaleMs: MARKER_STALE_MS,
  markerHeartbeatMs: MARKER_HEARTBEAT_MS,
  leaseStaleMs: LEASE_STALE_MS,
  watchMs: 100,
  drainMs: 30_000,
};

/** The ports a group acts through; Node's by default. */
export interface LaunchPorts {
  procs: Procs;
  files: Files;
  clock: Clock;
  entropy: Entropy;
  /** A free TCP port for `MASTER_PORT` (default: one the kernel picks on 127.0.0.1). */
  freePort: () => Promise<number>;
  /** The last lines of a rank's log, quoted in its failure (default: read from the file). */
  logTail: (path: string, from?: number) => Promise<string>;
  /**
   * This machine's name (default `os.hostname()`): written in the lease and manifest, and
   * compared with a lease found there, whose pid is judged only on the machine that wrote it.
   */
  host: string;
}

/** How ranks on `ssh://` hosts are reached and started. */
export interface RemoteRanksOptions {
  /** The ssh client's settings: an ssh_config file (`configFile`), extra `-o` options, timeouts. */
  ssh?: SshHostOptions | undefined;
  /** The root state dir on every ssh host: absolute, or under the remote home (default `.baton/run`). */
  stateDir?: string | undefined;
  /** The remote ranks' working directory (default: the remote login directory). */
  cwd?: string | undefined;
  /** After the launcher is gone, how long the remote guard waits between TERM and KILL (3 s). */
  guardGraceMs?: number | undefined;
}

/** What to launch: `worldSize` copies of `argv`, as ranks 0 … worldSize − 1. */
export interface LaunchSpec {
  argv: readonly string[];
  worldSize: number;
  /** The root state dir `S` (default `.baton/run` under `cwd`). */
  stateDir?: string | undefined;
  /** The deployment's name (`[A-Za-z0-9_.-]{1,64}`); default `dep-` and 12 random characters. */
  name?: string | undefined;
  /** Environment defaults for the ranks: a variable the operator already set wins. */
  env?: Readonly<Record<string, string>> | undefined;
  /** The operator's environment, which ranks inherit (default `process.env`). */
  operatorEnv?: Readonly<Record<string, string | undefined>> | undefined;
  /** The local ranks' working directory (default this process's). */
  cwd?: string | undefined;
  /**
   * Where each rank runs, one entry per rank (rank R on `hosts[R]`): `local`, or
   * `ssh://user@host[:port]` (started through the system ssh client). Default: all `local`.
   */
  hosts?: readonly string[] | undefined;
  /** For ranks on ssh hosts: how to reach them, their state dir and working directory. */
  remote?: RemoteRanksOptions | undefined;
  /**
   * `MASTER_ADDR` for every rank. Default `127.0.0.1` when every rank is local; otherwise
   * rank 0's host: this machine's host name (`os.hostname()`) when rank 0 is local, the ssh
   * host's address when it is remote.
   */
  masterAddr?: string | undefined;
  /**
   * `MASTER_PORT` for every rank (1–65535). Default: a port found free on this machine just
   * before the launch. Set it when only known ports are open between the hosts.
   */
  masterPort?: number | undefined;
  /**
   * Start the local ranks in a cgroup of the deployment's own (`Procs.containment`), so that
   * teardown and the reaper find every process they started, even one that left its process
   * group and emptied its environment (`setsid env -i ...`). Default true: used where the
   * machine allows it (cgroup v2, and root or a cgroup delegated to this user), and logged
   * and skipped where it does not. Ranks on ssh hosts are never contained.
   */
  contain?: boolean | undefined;
  timeouts?: Overrides<RankGroupTimeouts> | undefined;
  /** The teardown's TERM grace, KILL waits and sweep waits (DESIGN §8). */
  teardown?: Overrides<TeardownTimeouts> | undefined;
  ports?: Overrides<LaunchPorts> | undefined;
  /** A pino logger; silent by default. */
  logger?: Logger | undefined;
  /**
   * An XState inspection observer: it sees the group's machine, every rank's, the watchdog
   * of each lease the launcher holds (here and mirrored on ssh hosts) and, while the group
   * stops, the teardown's of the ranks on this machine (not an ssh host's). What it
   * throws is thrown again on a later tick, as XState does for a listener; the group goes on.
   */
  inspect?: InspectOption | undefined;
  /** Deliberate bugs for the teardown and the lease's watchdog (only tests and the simulation switch them on). */
  plantedBugs?: readonly PlantedBug[] | undefined;
}

export type { FolderNotRemoved, LeftRunning };

/** How one rank ended. */
export interface RankExit {
  rank: number;
  pid: number;
  code: number | null;
  signal: string | null;
}

/** A group that finished without failing: every rank exited 0, or it was stopped. */
export interface GroupExit {
  deployment: string;
  status: "succeeded" | "stopped";
  /** Why it was stopped. */
  reason?: string;
  ranks: RankExit[];
  /**
   * What the ranks left running and the teardown stopped: the processes in the group of a
   * rank that had exited on its own, and those the sweep found outside the ranks' groups.
   */
  leftRunning: LeftRunning[];
  /**
   * The deployment's folders (here, on ssh hosts) that its clear left empty and could not
   * remove (`folderNotRemovedLine` says why and what to do); logged as warnings too. Usually
   * none.
   */
  foldersNotRemoved: FolderNotRemoved[];
  teardown: TeardownReport;
}

/** What `abort`/`abortAll` saw: the cancel epoch written and each live rank's own evidence. */
export interface DrainReport {
  epoch: number;
  /** Every live rank applied the epoch (and, for `abortAll`, reports no request in flight). */
  drained: boolean;
  elapsedMs: number;
  /** The evidence of the ranks still running when the drain ended. */
  ranks: RankEvidence[];
}

/** A running rank group. */
export interface RankGroup {
  readonly deployment: string;
  /** The deployment's directory, `S/<deployment>`. */
  readonly dir: string;
  /** Each rank's stdout and stderr, by rank. */
  readonly logFiles: readonly string[];
  /**
   * The pids of the ranks started and not yet exited, each on its own host (each leads its own
   * process group there).
   */
  pids(): number[];
  /**
   * Resolves when the barrier is passed: every rank wrote its ready marker, or exited 0 before
   * it (`exitedRanks`, a program that never serves); rejects with the group's error if it never
   * gets there.
   */
  readonly ready: Promise<BarrierPassed>;
  /**
   * How the group ended; rejects with a `RankGroupError` (or a `TeardownError`). It settles
   * once: after an unverified teardown, a `stop()` that verifies the retry resolves with its
   * report, and `wait()` keeps its first answer.
   */
  wait(): Promise<GroupExit>;
  /** Cancels the requests `ids` on every rank and waits, bounded, for the ranks to apply it. */
  abort(ids: readonly string[], reason?: string): Promise<DrainReport>;
  /** Cancels everything in flight and waits, bounded, until every rank reports none. */
  abortAll(reason?: string): Promise<DrainReport>;
  /**
   * Stops every rank, verified (TERM, grace, KILL, KILL again, marker sweep, final check),
   * then removes the manifest and lease. Rejects with a `TeardownError` when something
   * survived; everything is kept and calling `stop()` again retries from the start. With
   * `{ now: true }` (a second Ctrl-C), the ranks get no more of their TERM grace: KILL at
   * once, still verified, in the teardown under way (and the reap of orphans a launch runs
   * first) as in any that follows.
   */
  stop(reason?: string, options?: RankGroupStopOptions): Promise<TeardownReport>;
}
