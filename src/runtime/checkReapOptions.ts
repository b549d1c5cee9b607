import { argumentError } from "../argumentError.ts";
import { requireObject } from "../requireObject.ts";
import type { ReapOptions } from "./reaper.ts";

/**
 * Refuses, with a `ConfigError`, what `reapDeployments` cannot take as a JavaScript caller may
 * give it: options that are no object, or a `stateDir` that is no path (each was Node's
 * `TypeError` about `paths[0]`, from deep inside). Other names are not refused: baton's own
 * callers pass their ports whole.
 *
 * @example
 * ```ts
 * checkReapOptions({ stateDir: ".baton/run" }); // fine
 * checkReapOptions({ stateDir: 5 } as never); // ConfigError: reapDeployments: stateDir must be the path …, not 5
 * ```
 */
export function checkReapOptions(options: ReapOptions): void {
  requireObject("reapDeployments", "the options", "an object, { stateDir, … }", options);
  if (typeof options.stateDir !== "string" || options.stateDir === "") {
    throw argumentError(
      "reapDeployments",
      "stateDir",
      'the path of the state directory its deployments are in, such as DEFAULT_STATE_DIR (".baton/run", as baton reap takes by default)',
      options.stateDir,
    );
  }
}
