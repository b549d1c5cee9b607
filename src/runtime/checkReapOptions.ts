import { A_STATE_DIR } from "../rank/deploymentPaths.ts";
import { requireStateDir } from "../rank/requireStateDir.ts";
import { requireObject } from "../requireObject.ts";
import type { ReapOptions } from "./reaper.ts";

/**
 * Refuses, with a `ConfigError`, what `reapDeployments` cannot take as a JavaScript caller may
 * give it: options that are no object, or a `stateDir` that is no path, or empty
 * (`requireStateDir`; each was Node's `TypeError` about `paths[0]`, from deep inside). Other names are not refused: baton's own
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
  requireStateDir(
    "reapDeployments",
    options.stateDir,
    `${A_STATE_DIR.slice(0, -1)}, as baton reap takes by default)`,
  );
}
