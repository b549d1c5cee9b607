import { A_STATE_DIR } from "../rank/deploymentPaths.ts";
import { requireStateDir } from "../rank/requireStateDir.ts";
import { requireObject } from "../requireObject.ts";
import { requireOptionalSignal } from "../requireOptionalSignal.ts";
import { TEARDOWN_PROCS_METHODS } from "./checkTeardownArguments.ts";
import { checkTeardownTimeouts } from "./checkTeardownTimeouts.ts";
import type { ReapOptions } from "./reaper.ts";
import { requireMethods } from "./requireMethods.ts";
import { requireTimerClock } from "./requireTimerClock.ts";

/**
 * Refuses, with a `ConfigError`, what `reapDeployments` cannot take as a JavaScript caller may
 * give it: options that are no object, or a `stateDir` that is no path, or empty
 * (`requireStateDir`; each was Node's `TypeError` about `paths[0]`, from deep inside); a
 * `procs`, `clock` or `logger` given without the methods its teardowns call, `teardown`
 * timeouts it cannot take (`checkTeardownTimeouts`), a `hurry` that is no `AbortSignal`
 * (each failed, if at all, only once a deployment was torn down). Other names are not
 * refused: baton's own callers pass their ports whole.
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
