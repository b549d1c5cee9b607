import { argumentError } from "../argumentError.ts";
import { ConfigError, RankFileError } from "../errors.ts";
import { ACK_FORMAT, type Ack } from "../rank/ackFormat.ts";
import { CANCEL_FORMAT, type Cancel, type CancelScope } from "../rank/cancelFormat.ts";
import { deploymentPaths, rankFileName } from "../rank/deploymentPaths.ts";
import { MARKER_FORMAT, type Marker, type MarkerPhase } from "../rank/markerFormat.ts";
import { encodeStateFile, readStateFile } from "../rank/stateFile.ts";
import { requireObject } from "../requireObject.ts";
import type { Clock, Files } from "./ports.ts";
import { requireMethods } from "./requireMethods.ts";
import { requireWhole } from "./requireWhole.ts";

/** What to cancel: every request in flight, or the requests with these ids. */
export interface CancelOrder {
  scope: CancelScope;
  /** The request ids (`scope: "requests"`, at least one); ignored for `"all"`. */
  ids?: readonly string[] | undefined;
  reason: string;
}

/** What one rank's own files say about a cancel epoch. */
export interface RankEvidence {
  rank: number;
  /** The rank acked this epoch or a later one (or started after it: its marker's watermark). */
  applied: boolean;
  /** The highest epoch the rank's ack or marker reports; 0 if none. */
  epoch: number;
  /** Requests in flight per the rank's newest record (marker or ack); undefined without one. */
  active: number | undefined;
  /** The marker's phase, when there is a marker. */
  phase: MarkerPhase | undefined;
  /** The marker's pid, when there is a marker. */
  pid: number | undefined;
  /** When the newest record was written (ms since the epoch). */
  seenAt: number | undefined;
  /** Why a file of this rank could not be used (malformed, another deployment). */
  problems: string[];
}

/** Where `cancelFile` writes: the ports, the root state dir and the deployment's id. */
export interface CancelFileOptions {
  files: Files;
  clock: Clock;
  /** The root state dir `S`. */
  stateDir: string;
  deployment: string;
}

/** The launcher's side of one deployment's cancel file. */
export interface CancelFile {
  /**
   * Writes the next epoch, `max(now, previous + 1)`, where `previous` is the larger of the
   * last epoch this writer wrote and the one in the existing file. While some rank has not
   * yet applied the file's epoch, the new file also carries its ids (a `"requests"` order
   * after an unapplied `"all"` stays `"all"`), so a rank that only sees the newest file
   * misses nothing. Writes are serialised. Resolves with the cancel as written.
   */
  write(order: CancelOrder): Promise<Cancel>;
  /**
   * Per-rank evidence for `epoch`: the ranks in `ranks` (default: every rank with a marker
   * or an ack in the deployment's directory), in rank order.
   */
  evidence(epoch: number, ranks?: readonly number[]): Promise<RankEvidence[]>;
}

/**
 * The next cancel epoch: strictly above `previous`, and the current time when the clock is
 * ahead of it. A `now` or `previous` that is no number (the epoch was NaN) is a `ConfigError`.
 *
 * @example
 * ```ts
 * nextEpoch(1_700_000_000_000, 0);                 // 1_700_000_000_000
 * nextEpoch(1_600_000_000_000, 1_700_000_000_000); // 1_700_000_000_001 (the clock stepped back)
 * ```
 */
export function nextEpoch(now: number, previous: number): number {
  if (typeof now !== "number" || !Number.isFinite(now)) {
    throw argumentError("nextEpoch", "now", "the time in milliseconds, such as Date.now()", now);
  }
  requireWhole("nextEpoch", "previous", previous, 0);
  return Math.max(Math.floor(now), previous + 1);
}

/**
 * The cancel file of one deployment as its launcher uses it: write cancel orders with
 * strictly increasing epochs, and read the ranks' acks and markers for evidence that they
 * applied one (a bounded drain waits until every live rank has `applied` and `active === 0`).
 * Options that are no object, or `files` or `clock` without the methods it calls, are a
 * `ConfigError` saying what it takes (each was a TypeError from inside).
 *
 * @example
 * ```ts
 * const cancels = cancelFile({ files, clock, stateDir, deployment });
 * const { epoch } = await cancels.write({ scope: "requests", ids: ["req-7"], reason: "client left" });
 * const evidence = await cancels.evidence(epoch, [0, 1, 2, 3]);
 * const drained = evidence.every((rank) => rank.applied && rank.active === 0);
 * ```
 */
export function cancelFile(options: CancelFileOptions): CancelFile {
  requireObject("cancelFile", "its options", "{ files, clock, stateDir, deployment }", options);
  requireMethods(
    "cancelFile",
    "files",
    options.files,
    ["list", "read", "writeAtomic"],
    "a Files, such as nodeFiles()",
  );
  requireMethods("cancelFile", "clock", options.clock, ["now"], "a Clock, such as nodeClock()");
  const { files, clock, deployment } = options;
  const paths = deploymentPaths(options.stateDir, deployment);
  let written = 0;
  let chain: Promise<unknown> = Promise.resolve();

  const evidence = async (epoch: number, ranks?: readonly number[]): Promise<RankEvidence[]> => {
    const wanted =
      ranks ??
      [
        ...new Set(
          (await files.list(paths.dir)).flatMap((name) => {
            const file = rankFileName(name);
            return file !== undefined && file.kind !== "log" ? [file.rank] : [];
          }),
        ),
      ].sort((a, b) => a - b);
    return Promise.all(wanted.map((rank) => rankEvidence(rank, epoch)));
  };

  const rankEvidence = async (rank: number, epoch: number): Promise<RankEvidence> => {
    const problems: string[] = [];
    const ownRecord = async <T extends { deployment: string; rank: number }>(
      read: () => Promise<T | undefined>,
      path: string,
    ): Promise<T | undefined> => {
      let record: T | undefined;
      try {
        record = await read();
      } catch (error) {
        if (!(error instanceof RankFileError)) throw error;
        problems.push(error.message);
        return undefined;
      }
      if (record !== undefined && (record.deployment !== deployment || record.rank !== rank)) {
        problems.push(
          `${path} is rank ${record.rank} of deployment ${record.deployment}, not rank ${rank} of ${deployment}`,
        );
        return undefined;
      }
      return record;
    };
    const marker: Marker | undefined = await ownRecord(
      () => readStateFile(files, MARKER_FORMAT, paths.marker(rank)),
      paths.marker(rank),
    );
    const ack: Ack | undefined = await ownRecord(
      () => readStateFile(files, ACK_FORMAT, paths.ack(rank)),
      paths.ack(rank),
    );
    const best = Math.max(ack?.epoch ?? 0, marker?.epoch ?? 0);
    const newest =
      marker !== undefined && (ack === undefined || marker.heartbeatAt >= ack.at)
        ? { active: marker.active, at: marker.heartbeatAt }
        : ack !== undefined
          ? { active: ack.active, at: ack.at }
          : undefined;
    return {
      rank,
      applied: best >= epoch,
      epoch: best,
      active: newest?.active,
      phase: marker?.phase,
      pid: marker?.pid,
      seenAt: newest?.at,
      problems,
    };
  };

  const writeNext = async (order: CancelOrder): Promise<Cancel> => {
    if (order.scope === "requests" && (order.ids ?? []).length === 0) {
      throw new ConfigError(
        `a "requests" cancel for ${deployment} must name at least one request id; use scope "all" to cancel everything`,
      );
    }
    let previous: Cancel | undefined;
    try {
      previous = await readStateFile(files, CANCEL_FORMAT, paths.cancel);
    } catch (error) {
      if (!(error instanceof RankFileError)) throw error;
    }
    let scope = order.scope;
    let ids = scope === "all" ? [] : [...new Set(order.ids)];
    if (previous !== undefined && previous.deployment === deployment) {
      const ranks = await evidence(previous.epoch);
      if (ranks.length === 0 || ranks.some((rank) => !rank.applied)) {
        if (previous.scope === "all") scope = "all";
        ids = scope === "all" ? [] : [...new Set([...previous.ids, ...ids])];
      }
    }
    const epoch = nextEpoch(clock.now(), Math.max(written, previous?.epoch ?? 0));
    const cancel: Cancel = { deployment, epoch, scope, ids, reason: order.reason };
    await files.writeAtomic(paths.cancel, encodeStateFile(CANCEL_FORMAT, cancel));
    written = epoch;
    return cancel;
  };

  return {
    write(order) {
      const result = chain.then(() => writeNext(order));
      chain = result.catch(() => {});
      return result;
    },
    evidence,
  };
}
