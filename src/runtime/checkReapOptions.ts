import { A_STATE_DIR } from "../rank/deploymentPaths.ts";
import { requireStateDir } from "../rank/requireStateDir.ts";
import { requireObject } from "../requireObject.ts";
import { requireOptionalSignal } from "../requireOptionalSignal.ts";
import { TEARDOWN_PROCS_METHODS } from "./checkTeardownArguments.ts";
import { checkTeardownTimeouts } from "./checkTeardownTimeouts.ts";
import type { ReapOptions } from "./reaper.ts";
import { requireMethods } from "./requireMethods.ts";
import { requireTimerClock } from "./requireTimerClock.ts";

/** The methods of a Files the reaper calls: it reads, records, and clears a deployment's files. */
const REAP_FILES_METHODS = [
  "list",
  "read",
  "owner",
  "modifiedAt",
  "sameFile",
  "writeAtomic",
  "remove",
  "removeDir",
];

/**
 * Refuses, with a `ConfigError`, what `reapDeployments` cannot take as a JavaScript caller may
 * give it: options that are no object, or a `stateDir` that is no path, or empty
 * (`requireStateDir`; each was Node's `TypeError` about `paths[0]`, from deep inside); a
 * `files` without the methods it reads and clears deployments with (`files.list is not a
 * function` from inside, or a missing `removeDir` only once a deployment was torn down); a
 * `procs`, `clock` or `logger` given without the methods its teardowns call, `teardown`
 * timeouts it cannot take (`checkTeardownTimeouts`), a `hurry` that is no `AbortSignal` (each
 * failed, if at all, only once a deployment was torn down). Other names are not refused:
 * baton's own callers pass their ports whole.
 *
 * @example
 * ```ts
 * checkReapOptions({ stateDir: ".baton/run" }); // fine
 * checkReapOptions({ stateDir: 5 } as never); // ConfigError: reapDeployments: stateDir must be the path …, not 5
 * ```
 */
export function checkReapOptions(options: ReapOptions): void {
  const where = "reapDeployments";
  requireObject(where, "the options", "an object, { stateDir, … }", options);
  requireStateDir(
    where,
    options.stateDir,
    `${A_STATE_DIR.slice(0, -1)}, as baton reap takes by default)`,
  );
  if (options.files !== undefined) {
    requireMethods(
      where,
      "files",
      options.files,
      REAP_FILES_METHODS,
      "a Files, such as nodeFiles()",
    );
  }
  if (options.procs !== undefined) {
    requireMethods(
      where,
      "procs",
      options.procs,
      TEARDOWN_PROCS_METHODS,
      "a Procs, such as nodeProcs()",
    );
  }
  if (options.clock !== undefined) requireTimerClock(where, "clock", options.clock);
  if (options.logger !== undefined) {
    requireMethods(where, "logger", options.logger, ["info", "warn"], "a pino logger");
  }
  if (options.teardown !== undefined) checkTeardownTimeouts(where, "teardown", options.teardown);
  requireOptionalSignal(where, "hurry", options.hurry);
}
