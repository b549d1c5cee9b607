import type { StateFileFormat } from "./stateFile.ts";

/** How a deployment ended: as its launcher saw it, or reaped after its launcher died. */
export const OUTCOME_STATUSES = ["succeeded", "failed", "stopped", "reaped"] as const;
/**
 * How a deployment ended, as `baton status` shows it: every rank exited 0 (`succeeded`), the
 * group failed (`failed`: a rank failed or was lost, say), it was stopped or ran out of time
 * (`stopped`), or its launcher died and the reaper cleaned up (`reaped`).
 */
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

/** How a rank's process ended, as its launcher learned it: its exit code or the signal that killed it. */
export interface RankExitRecord {
  /** Milliseconds since the epoch: when the launcher learned it. */
  at: number;
  /** Its exit code; absent when a signal killed it. */
  code?: number;
  /** The signal that killed it (`SIGKILL`); absent when it exited with a code. */
  signal?: string;
}

/** One rank as the launcher started it, and how it ended once that is known. */
export interface OutcomeRank {
  rank: number;
  /** `"local"`, or `ssh://user@host[:port]`. */
  host: string;
  /** Its pid on its host. */
  pid: number;
  /** Absent while it runs, and for a rank whose launcher died before it exited. */
  exit?: RankExitRecord;
  /** The reaper found it still running (its launcher dead) and stopped it. */
  reaped?: boolean;
}

/**
 * A process the ranks left running, which the launcher's teardown stopped: a child a rank
 * started and forgot, in the rank's process group once the rank had exited on its own, or
 * one that had left it (`setsid`) and that the teardown's sweep found.
 */
export interface LeftRunning {
  pid: number;
  /** The rank whose process group held it, or whose `RANK` its environment carried. */
  rank?: number;
  /** Its ssh host's spec; absent on this machine. */
  host?: string;
  /** Its program (`argv[0]`, without the arguments) when the teardown signalled it. */
  program: string;
  /** It had left its rank's process group, and only the sweep found it. */
  outsideGroup: boolean;
}

/**
 * `S/<dep>/outcome.json`: what a deployment was and how it ended, kept with its ranks' logs
 * after its control files are gone. The launcher writes it beside its manifest, again each
 * time it learns a rank's exit, and once more with `ended` when its teardown is verified; the
 * reaper adds `ended` (`reaped`) when it reaps the deployment of a launcher that died. It is
 * not a control file: no reaper or launch acts on it (a launch of the same name replaces it),
 * and it is pruned with the logs.
 */
export interface Outcome {
  deployment: string;
  /** The launcher's pid and instance token (as in its manifest). */
  launcher: { pid: number; token: string };
  worldSize: number;
  argv: string[];
  /** Milliseconds since the epoch. */
  startedAt: number;
  ranks: OutcomeRank[];
  /** Absent while the deployment runs (or its launcher died and it was not reaped yet). */
  ended?: {
    /** Milliseconds since the epoch: when its teardown was verified. */
    at: number;
    status: OutcomeStatus;
    /** The failure (`rank 1 exited with code 3`), the stop's reason, or why it was reaped. */
    reason?: string;
    /** What the ranks left running and the teardown stopped; absent when nothing. */
    leftRunning?: LeftRunning[];
  };
}

/**
 * The outcome record's format, `baton.outcome/1`.
 *
 * @example
 * ```ts
 * const outcome = await readStateFile(files, OUTCOME_FORMAT, paths.outcome);
 * outcome?.ended?.status; // "failed"
 * ```
 */
export const OUTCOME_FORMAT: StateFileFormat<Outcome> = {
  id: "baton.outcome/1",
  decode: (fields) => ({
    deployment: fields.deployment(),
    launcher: fields.object("launcher", (launcher) => ({
      pid: launcher.integer("pid", 1),
      token: launcher.string("token"),
    })),
    worldSize: fields.integer("worldSize", 1),
    argv: fields.strings("argv"),
    startedAt: fields.integer("startedAt", 0),
    ranks: fields.list("ranks", (rank) => ({
      rank: rank.integer("rank", 0),
      host: rank.string("host"),
      pid: rank.integer("pid", 1),
      ...(rank.has("exit") && {
        exit: rank.object("exit", (exit) => ({
          at: exit.integer("at", 0),
          ...(exit.has("code") && { code: exit.integer("code", 0) }),
          ...(exit.has("signal") && { signal: exit.string("signal") }),
        })),
      }),
      ...(rank.has("reaped") && { reaped: rank.boolean("reaped") }),
    })),
    ...(fields.has("ended") && {
      ended: fields.object("ended", (ended) => ({
        at: ended.integer("at", 0),
        status: ended.oneOf("status", OUTCOME_STATUSES),
        ...(ended.has("reason") && { reason: ended.string("reason") }),
        ...(ended.has("leftRunning") && {
          leftRunning: ended.list("leftRunning", (left) => ({
            pid: left.integer("pid", 1),
            ...(left.has("rank") && { rank: left.integer("rank", 0) }),
            ...(left.has("host") && { host: left.string("host") }),
            program: left.string("program"),
            outsideGroup: left.boolean("outsideGroup"),
          })),
        }),
      })),
    }),
  }),
};
