import { basename } from "node:path";

/**
 * A local worker pool's cgroup name: `workers-<run>@<pid>.<n>`, where `<pid>` is the
 * coordinator that made it. The `@` keeps it apart from every deployment's cgroup (a
 * deployment id has none), so neither's cleanup takes the other's.
 */
const POOL_CGROUP = /^workers-[A-Za-z0-9._-]*@([1-9]\d*)\.[1-9]\d*$/;

/** The most characters of the run's name kept in the cgroup's name. */
const RUN_NAME_MOST = 64;

/**
 * The name of the cgroup, in the `baton` folder rank groups use too, that holds a local pool's
 * workers (each in a cgroup of its own below it, named after the worker): the run's log folder
 * (`logsDir`, named after the run's start and id), the coordinator's pid, and `n`, this
 * process's count of pools, so that two pools of one process never share one.
 *
 * @example
 * ```ts
 * workerPoolCgroupName(".baton/logs/2026-12-04T13-50-01-123Z-k3x9", 4242, 1);
 * // "workers-2026-12-04T13-50-01-123Z-k3x9@4242.1"
 * ```
 */
export function workerPoolCgroupName(logsDir: string, pid: number, n: number): string {
  const run = basename(logsDir)
    .replace(/[^A-Za-z0-9._-]/g, "_")
    .slice(0, RUN_NAME_MOST);
  return `workers-${run}@${pid}.${n}`;
}

/**
 * The pid of the coordinator whose pool made the cgroup `name` (an entry of the `baton`
 * folder), or undefined for any other cgroup (a deployment's).
 *
 * @example
 * ```ts
 * workerPoolCgroupOwner("workers-2026-12-04T13-50-01-123Z-k3x9@4242.1"); // 4242
 * workerPoolCgroupOwner("web-3f2a9c01d4e5"); // undefined
 * ```
 */
export function workerPoolCgroupOwner(name: string): number | undefined {
  const owner = POOL_CGROUP.exec(name)?.[1];
  return owner === undefined ? undefined : Number(owner);
}
