import type { Logger } from "pino";
import type { Procs } from "./ports.ts";

/**
 * Removes a deployment's cgroup once its teardown was verified. A cgroup that cannot go (a
 * process was moved into it since, or the folder is not ours to remove) is logged and left:
 * nothing of the deployment runs, and the cgroup holds no state of it.
 *
 * @example
 * ```ts
 * releaseCgroup(procs, manifest.cgroup, logger);
 * ```
 */
export function releaseCgroup(procs: Procs, cgroup: string, logger: Logger | undefined): void {
  try {
    if (procs.containment?.remove(cgroup) === false) {
      logger?.warn({ cgroup }, "cgroup not removed: a process is still in it");
    }
  } catch (error) {
    logger?.warn({ cgroup, err: error }, "cgroup not removed");
  }
}
