import { BatonError } from "../errors.ts";

/**
 * Refuses to stop the processes of `cgroup` (`members`, those of it and of the cgroups below
 * it) when this process (`selfPid`) is one of them: a `cgroup.kill`, or a signal to each
 * member, would end this process too. It is there only if it was moved in to start a process
 * there (`Procs.spawn` with `cgroup`, `Containment.create`'s proof) and could not move back.
 * Throws a `BatonError` (`CGROUP_HOLDS_THIS_PROCESS`) before anything is signalled.
 *
 * @example
 * ```ts
 * refuseCgroupHoldingThisProcess(cgroup, containment.members(cgroup) ?? [], process.pid);
 * writeFileSync(join(cgroup, "cgroup.kill"), "1"); // reached only when this process is not in it
 * ```
 */
export function refuseCgroupHoldingThisProcess(
  cgroup: string,
  members: readonly number[],
  selfPid: number,
): void {
  if (!members.includes(selfPid)) return;
  throw new BatonError(
    "CGROUP_HOLDS_THIS_PROCESS",
    `refusing to stop the processes in the cgroup ${cgroup}: this process (pid ${selfPid}) is ` +
      "in it too (moved in to start a process there, it could not move back), and would be " +
      "stopped with them. Nothing was signalled. Move this process back to its own cgroup " +
      `(write ${selfPid} to that cgroup's cgroup.procs) or end it; the cgroup is emptied once ` +
      "it is gone (the next local pool or reap)",
  );
}
