import { argumentError } from "../argumentError.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireDeploymentId } from "../rank/requireDeploymentId.ts";
import { requireStateDir } from "../rank/requireStateDir.ts";
import { requireObject } from "../requireObject.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import { requireOptionalSignal } from "../requireOptionalSignal.ts";
import { checkTeardownTimeouts } from "./checkTeardownTimeouts.ts";
import type { OrphanedSiteOptions } from "./remoteSite.ts";
import { A_REMOTE_STATE_DIR } from "./remoteStateDir.ts";
import { requireMethods } from "./requireMethods.ts";
import { requireTimerClock } from "./requireTimerClock.ts";
import { requireWhole } from "./requireWhole.ts";

/** Every option `reapRemoteSite` takes (the compiler holds this to `OrphanedSiteOptions`). */
const ORPHANED_SITE_OPTIONS: Record<keyof OrphanedSiteOptions, true> = {
  target: true,
  deployment: true,
  ssh: true,
  stateDir: true,
  pids: true,
  launcherToken: true,
  clock: true,
  logger: true,
  timeouts: true,
  hurry: true,
  onFolderNotRemoved: true,
};

const SHAPE = "{ target, deployment, stateDir, pids, clock, … }";

/**
 * Refuses, with a `ConfigError`, what `reapRemoteSite` cannot take as a JavaScript caller may
 * give it, before it connects to the host: options that are no object or that it does not
 * know, a deployment that is no deployment id, an empty state dir (the remote home itself),
 * pids that are no list of positive whole numbers, a launcher token that is no text, ports
 * without the methods it calls, teardown timeouts it cannot take, a `hurry` that is no
 * `AbortSignal` and an `onFolderNotRemoved` that is no function. Its `target` and `ssh` are
 * `sshHost`'s to check.
 *
 * @example
 * ```ts
 * checkReapRemoteSiteOptions({ ...options, pids: [0] });
 * // ConfigError: reapRemoteSite: pids[0] must be a whole number of 1 or more, not 0
 * ```
 */
export function checkReapRemoteSiteOptions(options: OrphanedSiteOptions): void {
  const where = "reapRemoteSite";
  requireObject(where, "the options", SHAPE, options);
  checkOptionNames(where, options, ORPHANED_SITE_OPTIONS, { shape: SHAPE });
  requireDeploymentId(where, "deployment", options.deployment);
  requireStateDir(where, options.stateDir, A_REMOTE_STATE_DIR);
  if (!Array.isArray(options.pids)) {
    throw argumentError(
      where,
      "pids",
      "a list of the ranks' remote pids ([] for none)",
      options.pids,
    );
  }
  for (const [i, pid] of options.pids.entries()) requireWhole(where, `pids[${i}]`, pid);
  if (options.launcherToken !== undefined && typeof options.launcherToken !== "string") {
    throw argumentError(
      where,
      "launcherToken",
      "the dead launcher's instance token, as its manifest recorded it, or undefined",
      options.launcherToken,
    );
  }
  requireTimerClock(where, "clock", options.clock);
  if (options.logger !== undefined) {
    requireMethods(where, "logger", options.logger, ["debug", "info", "warn"], "a pino logger");
  }
  if (options.timeouts !== undefined) checkTeardownTimeouts(where, "timeouts", options.timeouts);
  requireOptionalSignal(where, "hurry", options.hurry);
  requireOptionalFunction(where, "onFolderNotRemoved", "(folder) => …", options.onFolderNotRemoved);
}
