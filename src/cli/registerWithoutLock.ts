import type { RunRecord, RunWithoutLock } from "../runtime/graphLock.ts";
import { registerRun } from "../runtime/runRegistration.ts";

/** Where and how `baton run` registers a run that takes no graph lock. */
export interface RegistrationPlace {
  graphPath: string;
  /** The `run/` folder, beside the run's files. */
  dir: string;
  store?: string;
  logs?: string;
  logger: { warn(fields: object, message: string): void };
}

/**
 * Registers a `baton run` with `withoutLock` (`registerRun`) for `baton status`, or says why
 * it cannot: a run is never failed for being unlisted, so a file that cannot be made is a
 * warning in its log.
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
