import type { Logger } from "pino";
import type { Clock, Procs } from "./ports.ts";

/** How often, and how many times, an empty cgroup the kernel still calls busy is removed again. */
const RETRY_MS = 20;
const RETRIES = 50;

/**
 * Removes a deployment's cgroup once its teardown was verified. Processes the teardown saw
 * die can keep the cgroup busy for a few milliseconds while the kernel finishes their exit,
 * so a cgroup with no member left is removed again every 20 ms, for up to a second. A cgroup
 * that cannot go (a process was moved into it since, or the folder is not ours to remove) is
 * logged and left: nothing of the deployment runs, and the cgroup holds no state of it.
 *
 * @example
 * ```ts
 * await releaseCgroup(procs, clock, manifest.cgroup, logger);
 * ```
 */
export async function releaseCgroup(
  procs: Procs,
  clock: Clock,
  cgroup: string,
  logger: Logger | undefined,
): Promise<void> {
  const { containment } = procs;
  if (containment === undefined) return;
  try {
    for (let attempt = 1; !containment.remove(cgroup); attempt++) {
      const members = containment.members(cgroup) ?? [];
      if (members.length > 0 || attempt > RETRIES) {
        logger?.warn({ cgroup, members }, "cgroup not removed: a process is still in it");
        return;
      }
      await new Promise((resolve) => clock.setTimeout(resolve, RETRY_MS));
    }
  } catch (error) {
    logger?.warn({ cgroup, err: error }, "cgroup not removed");
  }
}
