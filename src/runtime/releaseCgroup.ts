import type { Logger } from "pino";
import { isAlive } from "../rank/launcherWatch.ts";
import type { Clock, Procs } from "./ports.ts";

/**
 * How long a cgroup whose processes were all verified dead may still hold one. A killed
 * process with threads reads as a zombie (dead) once its main thread has exited, while its
 * other threads are still exiting in the cgroup: a few ms, longer on a loaded machine.
 */
export const RELEASE_WAIT_MS = 2_000;
const RELEASE_POLL_MS = 20;

/**
 * Removes a deployment's cgroup once its teardown was verified (or a local worker's, once
 * what it left was stopped), trying again every 20 ms for up to {@link RELEASE_WAIT_MS}
 * while nothing alive is left in it (the last exiting threads of a dead process). A cgroup
 * that cannot go (a live process was moved into it since, its last threads take longer, or
 * the folder is not ours to remove) is logged and left, saying who removes it later
 * (`removedLaterBy`): for a deployment, the next reap of the state dir
 * (`removeStaleCgroups`), which every launch runs first.
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
  removedLaterBy = "the next reap or launch in this state dir",
): Promise<void> {
  const { containment } = procs;
  if (containment === undefined) return;
  const deadline = clock.now() + RELEASE_WAIT_MS;
  try {
    while (!containment.remove(cgroup)) {
      const living = (containment.members(cgroup) ?? []).filter((pid) =>
        isAlive(procs.inspect(pid)),
      );
      if (living.length > 0) {
        logger?.warn(
          { cgroup, living },
          `cgroup not removed: live process${living.length === 1 ? ` ${living[0]} is` : `es ${living.join(", ")} are`} in it; ${removedLaterBy} removes it once it is empty`,
        );
        return;
      }
      if (clock.now() >= deadline) {
        logger?.warn(
          { cgroup, waitedMs: RELEASE_WAIT_MS },
          `cgroup not removed: the last threads of its killed processes were still leaving it after ${RELEASE_WAIT_MS} ms; ${removedLaterBy} removes it`,
        );
        return;
      }
      await new Promise((resolve) => clock.setTimeout(resolve, RELEASE_POLL_MS));
    }
  } catch (error) {
    logger?.warn({ cgroup, err: error }, "cgroup not removed");
  }
}
