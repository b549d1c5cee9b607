import { argumentError } from "../argumentError.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireDeploymentId } from "../rank/requireDeploymentId.ts";
import { requireStateDir } from "../rank/requireStateDir.ts";
import { requireObject } from "../requireObject.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import { checkInspectOption } from "./guardInspect.ts";
import type { RemoteSiteOptions } from "./remoteSite.ts";
import { A_REMOTE_STATE_DIR } from "./remoteStateDir.ts";
import { requireMethods } from "./requireMethods.ts";
import { requirePositiveMs } from "./requirePositiveMs.ts";
import { requireTimerClock } from "./requireTimerClock.ts";
import { requireWhole } from "./requireWhole.ts";

/** Every option `openRemoteSite` takes (the compiler holds this to `RemoteSiteOptions`). */
const REMOTE_SITE_OPTIONS: Record<keyof RemoteSiteOptions, true> = {
  target: true,
  deployment: true,
  ssh: true,
  stateDir: true,
  launcherPid: true,
  token: true,
  launcherHost: true,
  procs: true,
  leaseStaleMs: true,
  clock: true,
  logger: true,
  onLeaseLost: true,
  inspect: true,
};

/**
 * Refuses, with a `ConfigError`, what `openRemoteSite` cannot take as a JavaScript caller may
 * give it, before it reaches the host: options that are no object or that it does not know, a
 * deployment that is no deployment id (refused only once the host had been asked for its home
 * directory), a launcher pid or lease staleness that is no positive number (a `NaN` staleness
 * made every remote rank see its launcher gone), a token that is no text, a state dir that is
 * empty (the remote home itself), ports without the methods it calls. Its `target` and `ssh`
 * are `sshHost`'s to check.
 *
 * @example
 * ```ts
 * checkRemoteSiteOptions({ ...options, leaseStaleMs: "30s" } as never);
 * // ConfigError: openRemoteSite: leaseStaleMs must be a positive number of ms (as BATON_LEASE_STALE_MS), not "30s"
 * ```
 */
export function checkRemoteSiteOptions(options: RemoteSiteOptions): void {
  const where = "openRemoteSite";
  requireObject(
    where,
    "the options",
    "{ target, deployment, launcherPid, token, procs, leaseStaleMs, clock, … }",
    options,
  );
  checkOptionNames(where, options, REMOTE_SITE_OPTIONS, {
    shape: "{ target, deployment, launcherPid, token, procs, leaseStaleMs, clock, … }",
  });
  requireDeploymentId(where, "deployment", options.deployment);
  requireWhole(where, "launcherPid", options.launcherPid);
  if (typeof options.token !== "string" || options.token === "") {
    throw argumentError(
      where,
      "token",
      "the launcher's instance token, a non-empty string",
      options.token,
      typeof options.token === "string" ? '""' : String(options.token),
    );
  }
  requirePositiveMs(where, "leaseStaleMs", options.leaseStaleMs, "BATON_LEASE_STALE_MS");
  if (options.stateDir !== undefined) requireStateDir(where, options.stateDir, A_REMOTE_STATE_DIR);
  requireTimerClock(where, "clock", options.clock);
  requireMethods(where, "procs", options.procs, ["inspect"], "a Procs, such as nodeProcs()");
  requireOptionalFunction(where, "onLeaseLost", "(reason) => …", options.onLeaseLost);
  checkInspectOption(where, options.inspect);
}
