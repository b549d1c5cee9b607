import type { Logger } from "pino";
import { RankGroupError } from "../errors.ts";
import { leaseLauncherGone } from "../rank/launcherWatch.ts";
import { isLeaseStale, type Lease, leaseHolder } from "../rank/leaseFormat.ts";
import { HostNamedTwice } from "./hostNamedTwice.ts";
import { claimOrTakeOver, type LeaseOptions, takenOver } from "./launcherLease.ts";
import type { Files, Procs } from "./ports.ts";

/** What `claimMirroredLease` takes: the lease to create, and where it is for the messages. */
export interface MirroredLeaseClaim extends Omit<LeaseOptions, "logger" | "onLost" | "inspect"> {
  /** The host's spec (`ssh://user@host`) and its root state dir, as the messages name them. */
  host: string;
  stateDir: string;
  logger?: Logger | undefined;
  /**
   * This machine's process table: a mirrored lease that names this machine (`launcherHost`)
   * as its launcher's has its pid here, so a dead one frees the name at once.
   */
  procs: Pick<Procs, "inspect">;
}

/**
 * Claims a deployment's name in an ssh host's root state dir for this launcher: its mirrored
 * lease there is created only if there is none (`claimOrTakeOver`). The local lease keeps two
 * launchers of one name apart only when they share a local state dir; two with different ones
 * may share the host's (`~/.baton/run` by default), where each would clear the other's lease
 * and markers, and stop the other's ranks there, which carry the same name and state dir.
 * Another launcher's mirrored lease still renewed (by this clock: hosts need synchronised
 * clocks) is kept, with everything of that deployment there, and the claim refused with
 * `DEPLOYMENT_BLOCKED`, saying what to do; one its launcher left (renewed longer ago than its
 * `staleAfterMs`; one that names this machine as its launcher's, also once its pid is dead
 * here: `leaseLauncherGone`, the local claim's rule; or unreadable and untouched that long)
 * is removed and the claim made again. One that cannot be read and was written lately is
 * refused at once, saying it cannot be read: a lease appears whole (`Files.createExclusive`),
 * so it was damaged, or cut short by a power loss (it is made without a sync). This launcher's own lease there (its `token`: another
 * entry of `hosts` reached the same machine and state dir first) is refused with
 * `HostNamedTwice`, a `ConfigError`. Resolves once the lease is this launcher's.
 *
 * @example
 * ```ts
 * await claimMirroredLease({ files: remoteFiles(host), clock, path: paths.lease, deployment,
 *   pid: process.pid, token, staleAfterMs: 30_000, host: host.target.spec, stateDir,
 *   launcherHost: hostname(), procs: nodeProcs() });
 * ```
 */
export async function claimMirroredLease(claim: MirroredLeaseClaim): Promise<void> {
  const { path, deployment } = claim;
  const refused = await claimOrTakeOver({
    ...claim,
    left: (held, now) =>
      leaseLauncherGone(held, claim.launcherHost, (pid) => claim.procs.inspect(pid), now),
    takingOver: "taking over a mirrored lease its launcher left",
    logFields: { host: claim.host },
  });
  if (refused === undefined) return;
  const { held, now } = refused;
  if (held !== "unreadable" && held.token === claim.token) {
    throw new HostNamedTwice(claim.host, claim.stateDir, deployment);
  }
  const [holder, advice] =
    held === "unreadable"
      ? [
          `its lease ${path} there cannot be read (a lease is written whole, so it was damaged, edited by hand, or cut short by a power loss as it was made)`,
          `remove it if no launcher of that name uses that state dir (it is taken over once nobody has written it for ${claim.staleAfterMs} ms)`,
        ]
      : [
          `another launcher holds it there (${leaseHolder(held, "its own machine")}, its lease ${path} renewed ${now - held.renewedAt} ms ago): one whose local state dir is not this launch's, sharing this remote state dir`,
          "stop that launch",
        ];
  throw new RankGroupError(
    "DEPLOYMENT_BLOCKED",
    `${claim.host}: deployment ${deployment} cannot use the state dir ${claim.stateDir} there: ${holder}. Its files and ranks there were left as they are; ${advice}, or give this one another --name (name) or --remote-state-dir (remote.stateDir)`,
    deployment,
  );
}

/**
 * The mirrored lease at `path` when a launcher other than the one of `token` holds it and
 * renews it still (by `now`); undefined when there is none, it is that launcher's own, stale,
 * or cannot be read. Without a `token`, any lease still renewed is another's.
 *
 * @example
 * ```ts
 * const other = await heldByAnother(files, paths.lease, manifest.launcher.token, clock.now());
 * if (other !== undefined) throw new Error(`launcher pid ${other.pid} holds the name there`);
 * ```
 */
export async function heldByAnother(
  files: Files,
  path: string,
  token: string | undefined,
  now: number,
): Promise<Lease | undefined> {
  const lease = await takenOver(files, path, token);
  return lease !== undefined && !isLeaseStale(lease, now) ? lease : undefined;
}
