import type { Logger } from "pino";
import { LEASE_FORMAT, type Lease } from "../rank/leaseFormat.ts";
import { encodeStateFile, readStateFile } from "../rank/stateFile.ts";
import type { Clock, Files } from "./ports.ts";

export interface LeaseOptions {
  files: Files;
  clock: Clock;
  /** `S/<dep>/lease.json`. */
  path: string;
  deployment: string;
  /** The launcher's pid and instance token, as in the manifest. */
  pid: number;
  token: string;
  /** Ranks and reapers presume the launcher dead when the lease is older than this. */
  staleAfterMs: number;
  logger?: Logger;
}

/** A lease the launcher holds: renewed until `release()`. */
export interface HeldLease {
  /**
   * Stops renewing and waits for a renewal in flight, so that removing the file afterwards
   * cannot race a rename that would bring it back. Does not remove the file.
   */
  release(): Promise<void>;
}

/** The lease file's text for the launcher of `options`, renewed now. */
function leaseText(options: Omit<LeaseOptions, "files" | "logger">): string {
  const lease: Lease = {
    deployment: options.deployment,
    pid: options.pid,
    token: options.token,
    renewedAt: options.clock.now(),
    staleAfterMs: options.staleAfterMs,
  };
  return encodeStateFile(LEASE_FORMAT, lease);
}

/**
 * Claims the deployment's name for this launcher: creates its lease only if there is none
 * (`Files.createExclusive`), so that of two launchers of one name at once exactly one goes
 * on. Returns undefined when the lease is now this launcher's, else what is there: another
 * launcher's lease, or `"unreadable"` (torn, or being written at this moment).
 * `holdLease` then renews it.
 *
 * @example
 * ```ts
 * const other = await claimLease({ files, clock, path: paths.lease, deployment, pid, token,
 *   staleAfterMs: 30_000 });
 * if (other !== undefined) throw new Error("another launcher holds this deployment");
 * ```
 */
export async function claimLease(
  options: Omit<LeaseOptions, "logger">,
): Promise<Lease | "unreadable" | undefined> {
  const { files, path } = options;
  if (await files.createExclusive(path, leaseText(options))) return undefined;
  try {
    // Gone again (its launcher just removed it) reads as unreadable: the caller looks again.
    const lease = await readStateFile(files, LEASE_FORMAT, path);
    return lease?.deployment === options.deployment ? lease : "unreadable";
  } catch {
    return "unreadable";
  }
}

/**
 * Writes the launcher's lease (`baton.lease/1`, atomic, 0600) and renews it every
 * `staleAfterMs / 3` through the Clock port, so that ranks and reapers can tell a live
 * launcher from a dead one whose pid was reused. A renewal that fails is logged and tried
 * again at the next tick: missing one leaves two more before the lease goes stale.
 *
 * @example
 * ```ts
 * const lease = await holdLease({ files, clock, path: paths.lease, deployment, pid, token,
 *   staleAfterMs: 30_000 });
 * // ... after a verified teardown:
 * await lease.release();
 * await files.remove(paths.lease);
 * ```
 */
export async function holdLease(options: LeaseOptions): Promise<HeldLease> {
  const { files, clock, path, staleAfterMs } = options;
  const write = () => files.writeAtomic(path, leaseText(options));
  await write();
  let released = false;
  let inFlight: Promise<void> = Promise.resolve();
  let timer: unknown;
  const schedule = () => {
    timer = clock.setTimeout(
      () => {
        inFlight = write().then(
          () => {
            if (!released) schedule();
          },
          (error: unknown) => {
            options.logger?.warn({ err: error, lease: path }, "lease renewal failed");
            if (!released) schedule();
          },
        );
      },
      Math.max(1, Math.floor(staleAfterMs / 3)),
    );
  };
  schedule();
  return {
    async release() {
      released = true;
      clock.clearTimeout(timer);
      await inFlight;
    },
  };
}
