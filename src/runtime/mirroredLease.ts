import type { Logger } from "pino";
import { RankGroupError } from "../errors.ts";
import { leaseLauncherGone } from "../rank/launcherWatch.ts";
import { isLeaseStale, type Lease, leaseHolder } from "../rank/leaseFormat.ts";
import { HostNamedTwice } from "./hostNamedTwice.ts";
import { claimOrTakeOver, type LeaseOptions, takenOver } from "./launcherLease.ts";
import type { Files, Procs } from "./ports.ts";

/**
 * How long, and how many times, a claim looks again at a mirrored lease it found unreadable
 * before it refuses: a claim's create and write are one ssh call, a few ms apart.
 */
const UNREADABLE_LOOK_MS = 100;
const UNREADABLE_LOOKS = 10;

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
 * is removed and the claim made again.
 * A lease that cannot be read yet (being written) is looked at again every 100 ms for a
 * second before the claim is refused. This launcher's own lease there (its `token`: another
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
  const attempt = () =>
    claimOrTakeOver({
      ...claim,
      left: (held, now) =>
        leaseLauncherGone(held, claim.launcherHost, (pid) => claim.procs.inspect(pid), now),
      takingOver: "taking over a mirrored lease its launcher left",
      logFields: { host: claim.host },
    });
  let refused = await attempt();
  // A lease caught while its claim writes it (created empty, then filled) tells nobody's yet:
  // this launch's own other site's, or another launcher's. Looked at again a few times.
  for (let look = 1; refused?.held === "unreadable" && look <= UNREADABLE_LOOKS; look++) {
    await new Promise((resolve) => claim.clock.setTimeout(resolve, UNREADABLE_LOOK_MS));
    refused = await attempt();
  }
  if (refused === undefined) return;
  const { held, now } = refused;
  if (held !== "unreadable" && held.token === claim.token) {
    throw new HostNamedTwice(claim.host, claim.stateDir, deployment);
  }
  const holder =
    held === "unreadable"
      ? `another launcher is claiming it there at this moment (its lease ${path} is being written)`
      : `another launcher holds it there (${leaseHolder(held, "its own machine")}, its lease ${path} renewed ${now - held.renewedAt} ms ago): one whose local state dir is not this launch's, sharing this remote state dir`;
  throw new RankGroupError(
    "DEPLOYMENT_BLOCKED",
    `${claim.host}: deployment ${deployment} cannot use the state dir ${claim.stateDir} there: ${holder}. Its files and ranks there were left as they are; stop that launch, or give this one another --name (name) or --remote-state-dir (remote.stateDir)`,
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
