import { isAlive } from "../rank/launcherWatch.ts";
import type { ProcInfo, Procs } from "./ports.ts";

/** A process as the table shows it after its environment was read, and that environment. */
export interface ProcWithEnviron {
  info: ProcInfo;
  /**
   * Its environment; undefined when it cannot be read (another user's process), or when the
   * process is not alive or is running its exit (`exiting`), whose environment may read empty
   * whatever it was: unknown, never empty.
   */
  env: Record<string, string> | undefined;
}

/**
 * The environment of the process `listed` (an entry of the table read before) and its entry
 * read again after it: a process that ended while its environment was read is then gone
 * (undefined; so is a pid taken by another process meanwhile, another `startedAt`), or a zombie,
 * or still running its exit, each with no environment, rather than alive with none, or with
 * an empty one, which every reader takes for a process that is not the deployment's. A
 * process that is not alive as listed has its environment left unread.
 *
 * @example
 * ```ts
 * const seen = withEnviron(procs, procs.inspect(pid));
 * const ours = seen !== undefined && carriesDeployment(seen.info.argv, seen.env, id);
 * ```
 */
export function withEnviron(
  procs: Pick<Procs, "inspect" | "environ">,
  listed: ProcInfo,
): ProcWithEnviron | undefined {
  if (!isAlive(listed)) return { info: listed, env: undefined };
  const env = procs.environ(listed.pid);
  const info = procs.inspect(listed.pid);
  if (info === undefined || info.startedAt !== listed.startedAt) return undefined;
  return { info, env: isAlive(info) && info.exiting !== true ? env : undefined };
}
