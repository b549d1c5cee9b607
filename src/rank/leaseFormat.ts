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
 * stepped back makes a lease look fresh, never stale.
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
  return now - lease.renewedAt > lease.staleAfterMs;
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
