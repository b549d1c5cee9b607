import { argumentError } from "../argumentError.ts";
import { requireObject } from "../requireObject.ts";
import { requirePositiveMs } from "../runtime/requirePositiveMs.ts";
import type { StateFileFormat } from "./stateFile.ts";

/**
 * `S/<dep>/lease.json`, renewed by the launcher every `staleAfterMs / 3`. A lease whose
 * `renewedAt` is more than `staleAfterMs` old is stale: its launcher is presumed dead.
 */
export interface Lease {
  deployment: string;
  /** The launcher's pid. */
  pid: number;
  /** The launcher's instance token (as in the manifest). */
  token: string;
  /**
   * The machine the launcher runs on (`os.hostname()`), whose process table alone its `pid`
   * means anything in; absent in a lease written before baton recorded it.
   */
  host?: string;
  /** Milliseconds since the epoch. */
  renewedAt: number;
  staleAfterMs: number;
}

/**
 * The lease's format, `baton.lease/1`.
 *
 * @example
 * ```ts
 * await files.writeAtomic(paths.lease, encodeStateFile(LEASE_FORMAT, lease));
 * ```
 */
export const LEASE_FORMAT: StateFileFormat<Lease> = {
  id: "baton.lease/1",
  decode: (fields) => ({
    deployment: fields.deployment(),
    pid: fields.integer("pid", 1),
    token: fields.string("token"),
    ...(fields.has("host") && { host: fields.string("host") }),
    renewedAt: fields.integer("renewedAt", 0),
    staleAfterMs: fields.integer("staleAfterMs", 1),
  }),
};

/**
 * Whether `lease` is stale at `now`: renewed more than `staleAfterMs` ago. A clock that
 * stepped back makes a lease look fresh, never stale. A lease without a `renewedAt` and a
 * positive `staleAfterMs`, or a `now` that is no number of ms (a `Date`, undefined), is a
 * `ConfigError`: each answered, fresh or stale, for a lease it had not read.
 *
 * @example
 * ```ts
 * if (isLeaseStale(lease, clock.now())) reap(lease.deployment);
 * ```
 */
export function isLeaseStale(
  lease: Pick<Lease, "renewedAt" | "staleAfterMs">,
  now: number,
): boolean {
  requireObject("isLeaseStale", "lease", "a lease, { renewedAt, staleAfterMs }", lease);
  requireMsSinceEpoch("lease.renewedAt", lease.renewedAt);
  requirePositiveMs("isLeaseStale", "lease.staleAfterMs", lease.staleAfterMs);
  requireMsSinceEpoch("now", now);
  return now - lease.renewedAt > lease.staleAfterMs;
}

/** Refuses a time for `isLeaseStale` that is no finite number of ms since the epoch. */
function requireMsSinceEpoch(name: string, value: unknown): void {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw argumentError(
      "isLeaseStale",
      name,
      "ms since the epoch, a number such as Date.now() or clock.now()",
      value,
    );
  }
}

/**
 * Who holds `lease`, for messages: its launcher's pid, and its machine when the lease names one
 * (else `unnamed`, when given: "its own machine").
 *
 * @example
 * ```ts
 * leaseHolder(lease); // "pid 4242 on login1"
 * ```
 */
export function leaseHolder(lease: Pick<Lease, "pid" | "host">, unnamed?: string): string {
  const machine = lease.host ?? unnamed;
  return machine === undefined ? `pid ${lease.pid}` : `pid ${lease.pid} on ${machine}`;
}
