import { accessSync, constants } from "node:fs";
import type { RunRecord, RunWithoutLock } from "../runtime/graphLock.ts";
import { registerRun } from "../runtime/runRegistration.ts";

/** Where and how `baton run` registers a run that takes no graph lock. */
export interface RegistrationPlace {
  graphPath: string;
  /** The `run/` folder: beside the run's files, or a dry run's store's. */
  dir: string;
  store?: string;
  logs?: string;
  logger: { warn(fields: object, message: string): void };
}

/**
 * Registers a `baton run` with `withoutLock` (`registerRun`) for `baton status`, or says why
 * it cannot: a run is never failed for being unlisted, so a file that cannot be made is a
 * warning in its log. A dry run, which makes nothing, registers only in a `run/` folder that
 * is there and that this user may write (its store's, used by an earlier run), and is
 * otherwise unlisted without a word: a look at a store only read says nothing of that.
 *
 * @example
 * ```ts
 * const record = await registerWithoutLock("--no-store", { graphPath, dir: ".baton/run", logger });
 * ```
 */
export async function registerWithoutLock(
  withoutLock: RunWithoutLock,
  { graphPath, dir, store, logs, logger }: RegistrationPlace,
): Promise<RunRecord | undefined> {
  if (withoutLock === "--dry-run" && !writableFolder(dir)) return undefined;
  try {
    return await registerRun(dir, graphPath, { withoutLock, store, logs });
  } catch (error) {
    logger.warn(
      { err: error, dir },
      `could not register this run (${withoutLock} takes no graph lock) for baton status, which will not list it`,
    );
    return undefined;
  }
}

/** Whether `dir` is a folder this user may make files in. */
function writableFolder(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
