import type { Actor } from "xstate";
import { StoreError } from "../errors.ts";
import { formatDuration } from "../formatDuration.ts";
import type { Json } from "../graph/job.ts";
import type { coordinatorMachine } from "../machines/coordinator.ts";
import { atomicWriteTarget } from "./atomicTempTarget.ts";
import { isDiskFull, noRoomReason } from "./diskFull.ts";
import { errnoReason } from "./errnoReason.ts";
import { inFlightLimit } from "./inFlightLimit.ts";
import type { Clock } from "./ports.ts";
import type { ResultStore } from "./resultStore.ts";
import type { StoreFullEvent } from "./run.ts";
import { unwritableFolder, unwritableFolderAdvice } from "./unwritableFolder.ts";

/** What the writer needs of a logger: pino's `info(object, message)`. */
export interface InfoLogger {
  info(details: object, message: string): void;
}

/**
 * Writes in flight at once; the rest wait their turn, first come first served. Each write
 * holds a file open through its fsync, so an unbounded number could run out of file
 * descriptors; 64 at once stores as fast as any number did here.
 */
export const WRITES_IN_FLIGHT = 64;

/** How long a run waits for room on a full store by default before it stops (5 minutes). */
export const STORE_FULL_WAIT_MS = 5 * 60_000;

/** The first wait before a held result is written again; each try that finds no room doubles it. */
const FULL_RETRY_FIRST_MS = 1_000;
/** The longest wait between two tries of a full store. */
const FULL_RETRY_MOST_MS = 30_000;

/** What the writer does when the store's disk has no room for a result. */
export interface StoreFullOptions {
  clock: Pick<Clock, "now" | "setTimeout" | "clearTimeout">;
  /** How long the store may have no room before the run is stopped (`giveUp`). */
  waitMs: number;
  /** Called when the store turns full and when it has room again. */
  said: (event: StoreFullEvent) => void;
  /** The store has had no room for `waitMs`: stop the run with this `STORE_FULL` error. */
  giveUp: (error: StoreError) => void;
}

/** A completed result on its way to the store. */
interface Result {
  job: string;
  kind: string;
  value: Json;
}

/**
 * A time the store had no room: from the first result refused for want of it until every
 * result refused meanwhile is written. Said once at each end, however often a little room
 * came and went in between.
 */
interface NoRoomEpisode {
  since: number;
  /** The results refused during it that are not written yet (held, or being written again). */
  unwritten: Set<Result>;
  /** How many of those have been written. */
  written: number;
  /** How many times a write went through and a later one found no room again. */
  cameAndWent: number;
}

/**
 * Carries out the coordinator's `result.store` effects: writes each completed result to the
 * store, then tells the coordinator `STORED`, or `STORE_FAILED` with an error saying what to
 * do. Workers never wait for an fsync: a worker's next job starts while its last result is
 * still being written, and the job board holds that job `storing` (its dependents wait)
 * until the write is durable. Up to {@link WRITES_IN_FLIGHT} writes run at once (fsyncs of
 * different files overlap); the others queue in order.
 *
 * A write the store's disk has no room for (`ENOSPC`, `EDQUOT`) fails no attempt: the result
 * is held, the coordinator is told `STORE_FULL` (it grants no lease until the store answers
 * otherwise, so the memory held is the results already computed), `full.said` tells the user,
 * and the oldest held result is written again after 1 s, then 2, 4, … up to 30 s. The first
 * write that goes through writes the others. A store that gets a little room now and then
 * refuses some of them again: that is the same episode, said once, so `full.said` says the
 * store has room again only once every result it refused is written, with how long it had
 * none and how often room came and went meanwhile. A store that has let no write through for
 * `full.waitMs` is given up (`full.giveUp`, a `STORE_FULL` error): the caller stops the run,
 * and the results stored so far are what a rerun resumes from.
 *
 * A write that ends after the coordinator finished (a run shut down while a result was being
 * written) tells nobody: the run already counted the job as shut down.
 *
 * @example
 * ```ts
 * const coordinator = createActor(coordinatorMachine, { input: { jobs, durable: true } });
 * writeResults(coordinator, store, logger, {
 *   clock, waitMs: STORE_FULL_WAIT_MS, said: (e) => console.error(e.message),
 *   giveUp: (error) => coordinator.send({ type: "SHUTDOWN", reason: error.message }),
 * });
 * coordinator.start();
 * ```
 */
export function writeResults(
  coordinator: Actor<typeof coordinatorMachine>,
  store: Pick<ResultStore, "dir" | "put">,
  log: InfoLogger,
  full: StoreFullOptions,
): void {
  const limit = inFlightLimit(WRITES_IN_FLIGHT);
  const { clock } = full;
  let over = false;
  const tell = (event: Parameters<typeof coordinator.send>[0]) => {
    if (!over && coordinator.getSnapshot().status === "active") coordinator.send(event);
  };
  /** Results the disk had no room for, waiting for their next try, oldest first. */
  const held: Result[] = [];
  /** Since when no write has gone through, the last one having found no room; else undefined. */
  let fullSince: number | undefined;
  let episode: NoRoomEpisode | undefined;
  let episodes = 0;
  let retryMs = FULL_RETRY_FIRST_MS;
  let retry: unknown;
  let stored = 0;

  const write = (result: Result) =>
    store.put(result.job, result.kind, result.value).then(
      () => {
        stored++;
        if (fullSince !== undefined) roomCame();
        if (episode?.unwritten.delete(result)) episode.written++;
        // Said before the coordinator hears of it: the last result stored ends the run.
        caughtUp();
        tell({ type: "STORED", job: result.job });
      },
      (error: Error) => {
        if (over) return;
        if (isDiskFull(error)) {
          hold(result, error);
          return;
        }
        episode?.unwritten.delete(result);
        const { job, kind } = result;
        // Info, as any attempt that ended without a result: the job's error says it, and
        // `baton run` prints it once, with the job that failed.
        log.info({ job, err: error }, "could not store a result");
        tell({
          type: "STORE_FAILED",
          job,
          error: {
            name: "StoreError",
            message: `the result of job ${job} (${kind}) could not be stored in ${store.dir}: ${whyNotStored(store.dir, error)}`,
          },
        });
        // A try of a held result that failed otherwise: the others are still held.
        if (held.length > 0) scheduleRetry();
        caughtUp();
      },
    );

  const hold = (result: Result, error: Error) => {
    held.push(result);
    tell({ type: "STORE_FULL", job: result.job });
    if (fullSince === undefined) {
      fullSince = clock.now();
      retryMs = FULL_RETRY_FIRST_MS;
      if (episode === undefined) noRoom(result, error);
      else episode.cameAndWent++;
    }
    episode?.unwritten.add(result);
    scheduleRetry();
  };

  /** A first result refused for want of room since the store last caught up: say so once. */
  const noRoom = (result: Result, error: Error) => {
    episode = { since: clock.now(), unwritten: new Set(), written: 0, cameAndWent: 0 };
    episodes++;
    const why = noRoomReason(store.dir, error);
    const wait = formatDuration(full.waitMs);
    log.info({ job: result.job, err: error, times: episodes }, "the result store has no room");
    full.said({
      dir: store.dir,
      full: true,
      message:
        episodes === 1
          ? `the result store ${store.dir} has no room: ${why}. No job's attempt is spent on it: the results it cannot write are held, no new job starts, and baton tries again every few seconds, stopping the run if there is no room within ${wait}. Free some space on that disk; the results stored so far are kept either way, and baton run again resumes from them`
          : `the result store ${store.dir} has no room again (${episodes} times in this run): ${why}. As before, the results it cannot write are held and no new job starts, stopping the run if there is no room within ${wait}`,
    });
  };

  /** Writes the oldest held result again, after the wait, unless a try is already due. */
  const scheduleRetry = () => {
    if (retry !== undefined || over || fullSince === undefined) return;
    const left = fullSince + full.waitMs - clock.now();
    const wait = Math.max(0, Math.min(retryMs, left));
    retryMs = Math.min(retryMs * 2, FULL_RETRY_MOST_MS);
    retry = clock.setTimeout(() => {
      retry = undefined;
      if (over || fullSince === undefined) return;
      if (clock.now() - fullSince >= full.waitMs) {
        giveUp();
        return;
      }
      const oldest = held.shift();
      if (oldest !== undefined) void write(oldest);
    }, wait);
  };

  /** A write went through: every held result is written again at once. */
  const roomCame = () => {
    fullSince = undefined;
    if (retry !== undefined) clock.clearTimeout(retry);
    retry = undefined;
    for (const result of held.splice(0)) void limit(() => write(result));
  };

  /** Every result the store refused is written, the last write having gone through: say so. */
  const caughtUp = () => {
    if (episode === undefined || episode.unwritten.size > 0 || fullSince !== undefined) return;
    const { since, written, cameAndWent } = episode;
    episode = undefined;
    const after = formatDuration(clock.now() - since);
    log.info({ written, cameAndWent, ms: clock.now() - since }, "the result store has room again");
    const flapped =
      cameAndWent === 0
        ? ""
        : ` (room came and went ${cameAndWent} time${cameAndWent === 1 ? "" : "s"} meanwhile)`;
    full.said({
      dir: store.dir,
      full: false,
      message: `the result store ${store.dir} has room again after ${after}${flapped}: ${written === 0 ? "the run goes on" : `the ${written} result${written === 1 ? "" : "s"} held ${written === 1 ? "is" : "are"} written, and the run goes on`}`,
    });
  };

  const giveUp = () => {
    const lost = held.length;
    full.giveUp(
      new StoreError(
        "STORE_FULL",
        `the result store ${store.dir} had no room for ${formatDuration(full.waitMs)}, so the run stopped: the ${lost} result${lost === 1 ? "" : "s"} it could not write and the jobs running then are not kept; the results stored before (${stored} during this run) are. Free some space on that disk, or give --store a directory on another disk, and baton run again resumes from them`,
        store.dir,
        store.dir,
      ),
    );
  };

  coordinator.on("effects", ({ effects }) => {
    for (const effect of effects) {
      if (effect.type === "result.store") {
        const { job, kind, value } = effect;
        void limit(() => write({ job, kind, value }));
      }
    }
  });
  // The run is over (done, or shut down): nothing held is written, and no try keeps a timer.
  coordinator.on("run.finished", () => {
    over = true;
    held.length = 0;
    episode = undefined;
    if (retry !== undefined) clock.clearTimeout(retry);
    retry = undefined;
  });
}

/**
 * Why a result could not be written to the store in `dir`, and what to do, for a person: a
 * StoreError says it itself (a newer baton's entry in the way); a folder or file of the store
 * that cannot be written is said in the words of every folder baton makes (`unwritableFolder`:
 * which path, what this user may not do there and whose it is, or the file in the way), with
 * the store's way out; a file removed while it was written (an `ENOENT` of anything but making
 * a folder: its temp file, or the folder, gone before the rename) says so; any other error (an
 * I/O error) names the result's file and what the system said. The result's own file is named,
 * never the temp file it is written to first (`atomicWriteTarget`). Built only when a write
 * failed.
 */
function whyNotStored(dir: string, error: Error): string {
  if (error instanceof StoreError) return error.message;
  const { code, syscall, path } = error as NodeJS.ErrnoException;
  const cannot = path === undefined ? "" : `cannot write ${atomicWriteTarget(path)}: `;
  if (code === "ENOENT" && syscall !== "mkdir") {
    return `${cannot}the temp file beside it that it is written to first, or its folder, was removed before it was renamed into place (by another program, or a person, removing files in the store while this run stored there); baton run again computes and stores it`;
  }
  const unwritable = unwritableFolder(error, dir);
  return unwritable === undefined
    ? `${cannot}${errnoReason(error)}; check that the store's disk has room and is writable`
    : `${unwritable.why}; ${unwritableFolderAdvice(unwritable, "store")}`;
}
