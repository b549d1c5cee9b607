import { formatDuration } from "../formatDuration.ts";
import type { ProcInfo } from "../runtime/ports.ts";
import { isLeaseStale, type Lease } from "./leaseFormat.ts";
import type { Manifest } from "./manifestFormat.ts";
import { START_SLACK_MS } from "./pidReused.ts";

/**
 * Whether a process table entry is a live process: no entry, a zombie or a dead entry is not.
 *
 * @example
 * ```ts
 * if (!isAlive(procs.inspect(marker.pid))) phase = "gone";
 * ```
 */
export function isAlive(info: ProcInfo | undefined): boolean {
  return info !== undefined && info.state !== "zombie" && info.state !== "dead";
}

/** What a rank (or `baton status`) knows about a deployment's launcher at one moment. */
export interface LauncherEvidence {
  launcherPid: number;
  /** The launcher pid's process table entry; undefined when there is none. */
  process: ProcInfo | undefined;
  /** The deployment's lease, when one could be read (and is this deployment's). */
  lease: Lease | undefined;
  now: number;
  /** Without a readable lease, the launcher counts as having renewed it at this time. */
  noLeaseSince: number;
  /** Staleness without a readable lease. */
  leaseStaleMs: number;
}

/**
 * Why the launcher must be presumed gone — its pid is dead (a zombie counts as dead) or its
 * lease is stale — or `undefined` while it is alive. A missing or unreadable lease counts as
 * renewed at `noLeaseSince` (the rank's start), so it turns stale after `leaseStaleMs`.
 *
 * @example
 * ```ts
 * const reason = launcherGone({ launcherPid, process: procs.inspect(launcherPid), lease,
 *   now: clock.now(), noLeaseSince: startedAt, leaseStaleMs: 30_000 });
 * if (reason !== undefined) exit(reason);
 * ```
 */
export function launcherGone(evidence: LauncherEvidence): string | undefined {
  const { launcherPid, process, lease, now } = evidence;
  if (!isAlive(process)) {
    return `launcher pid ${launcherPid} is ${process === undefined ? "gone" : `a ${process.state} process`}`;
  }
  const renewedAt = lease?.renewedAt ?? evidence.noLeaseSince;
  const staleAfterMs = lease?.staleAfterMs ?? evidence.leaseStaleMs;
  if (isLeaseStale({ renewedAt, staleAfterMs }, now)) {
    return lease === undefined
      ? `no readable lease for ${now - renewedAt} ms (stale after ${staleAfterMs} ms)`
      : `the launcher's lease was last renewed ${now - renewedAt} ms ago (stale after ${staleAfterMs} ms)`;
  }
  return undefined;
}

/**
 * The launcher judgement of the reaper and `baton status` for a deployment that has a
 * manifest: why its launcher must be presumed dead — the lease names another launcher
 * instance, there is no lease (it is written before the manifest and removed after it, so a
 * manifest without one has no launcher), the pid is dead, or the lease is stale — or
 * `undefined` while it lives. Judged on the machine `here` (`os.hostname()`, when given): the
 * pid of a manifest another machine wrote means nothing in this process table (`process` is
 * not looked at), and its lease's age alone says whether its launcher lives, as a claim of
 * the name judges a lease of another machine (`leaseLauncherGone`).
 *
 * @example
 * ```ts
 * const why = manifestLauncherGone(manifest, lease, procs.inspect(manifest.launcher.pid), now);
 * if (why !== undefined) await reap(manifest, why);
 * ```
 */
export function manifestLauncherGone(
  manifest: Manifest,
  lease: Lease | undefined,
  process: ProcInfo | undefined,
  now: number,
  here?: string,
): string | undefined {
  const { pid, token, host } = manifest.launcher;
  if (lease !== undefined && (lease.pid !== pid || lease.token !== token)) {
    return `the lease belongs to another launcher instance (pid ${lease.pid}), not pid ${pid} of the manifest`;
  }
  if (here !== undefined && host !== here) {
    return lease === undefined
      ? `launcher pid ${pid} on ${host} holds no lease (it was removed)`
      : staleLease(lease, host, now);
  }
  if (lease === undefined && isAlive(process)) {
    return `launcher pid ${pid} holds no lease (it was removed, or pid ${pid} is another program now)`;
  }
  return launcherGone({
    launcherPid: pid,
    process,
    lease,
    now,
    noLeaseSince: now,
    leaseStaleMs: lease?.staleAfterMs ?? 1,
  });
}

/**
 * Why the launcher of another's `lease`, found with no manifest (it is claiming the name, or
 * died before writing its manifest), must be presumed gone, judged on the machine `here`
 * (`os.hostname()`), or undefined while it may live. Its pid is evidence only on the machine
 * that wrote the lease (its `host`): a state dir on a shared file system holds leases of other
 * machines, whose pids mean nothing in this process table. There, the launcher is gone when
 * its pid is (or is a zombie), or when the process at its pid started more than
 * `START_SLACK_MS` after the lease was last renewed: the launcher ran then, so that process is
 * another program that took the pid. A lease of another machine, or one that names none, is
 * judged by its age alone; so is every lease when `here` is undefined (this machine's name is
 * not known).
 *
 * @example
 * ```ts
 * const why = leaseLauncherGone(lease, hostname(), (pid) => procs.inspect(pid), clock.now());
 * if (why !== undefined) await files.remove(paths.lease);
 * ```
 */
export function leaseLauncherGone(
  lease: Lease,
  here: string | undefined,
  inspect: (pid: number) => ProcInfo | undefined,
  now: number,
): string | undefined {
  if (here !== undefined && lease.host === here) {
    const process = inspect(lease.pid);
    if (isAlive(process) && process?.startedAt !== undefined) {
      const afterMs = process.startedAt - lease.renewedAt;
      if (afterMs > START_SLACK_MS) {
        return `launcher pid ${lease.pid} is another program now (it started ${formatDuration(afterMs)} after the lease was last renewed)`;
      }
    }
    return launcherGone({
      launcherPid: lease.pid,
      process,
      lease,
      now,
      noLeaseSince: now,
      leaseStaleMs: lease.staleAfterMs,
    });
  }
  return staleLease(lease, lease.host ?? "a machine it does not name", now);
}

/** Why `lease`, of a launcher on `machine` (for the words), is stale; undefined while fresh. */
function staleLease(lease: Lease, machine: string, now: number): string | undefined {
  if (!isLeaseStale(lease, now)) return undefined;
  return `the lease of launcher pid ${lease.pid} (on ${machine}) was last renewed ${now - lease.renewedAt} ms ago (stale after ${lease.staleAfterMs} ms)`;
}
