import { basename, dirname } from "node:path";
import type { Logger } from "pino";
import { createActor, type InspectionEvent } from "xstate";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import {
  WATCHDOG_GRACE_MS,
  WATCHDOG_TOLERANCE,
  type WatchdogEvent,
  watchdogMachine,
} from "../machines/watchdog.ts";
import { LEASE_FORMAT, type Lease } from "../rank/leaseFormat.ts";
import { encodeStateFile, readStateFile } from "../rank/stateFile.ts";
import { untouchedMs } from "./clearDeployment.ts";
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
  /**
   * The machine the launcher runs on (`os.hostname()`), written in the lease as `host`: a
   * claim judges the lease's pid only on that machine (`leaseLauncherGone`).
   */
  launcherHost?: string | undefined;
  /** Ranks and reapers presume the launcher dead when the lease is older than this. */
  staleAfterMs: number;
  logger?: Logger;
  /**
   * Called once when renewals have failed for too long (see `holdLease`), with why; never
   * after `release()`. The lease goes stale soon after, and the ranks then stop themselves.
   */
  onLost?: (reason: string) => void;
  /**
   * Called once when a renewal finds the lease another launcher's (`takenOver`: it took over
   * the lease when it went stale while this launcher lived, stopped or cut off): that renewal
   * writes nothing, and renewals end; never after `release()`.
   */
  onTakenOver?: (other: Lease) => void;
  /** Sees the lease's watchdog machine (`--inspect`, the dashboard). */
  inspect?: (event: InspectionEvent) => void;
  /** Known bugs switched on in its watchdog (tests and `baton sim --plant` only). */
  plantedBugs?: readonly PlantedBug[];
}

/** A lease the launcher holds: renewed until `release()`. */
export interface HeldLease {
  /**
   * Stops renewing and waits for a renewal in flight, so that removing the file afterwards
   * cannot race a rename that would bring it back; but not for one that is overdue (see
   * `holdLease`), which may never return: that is logged. Does not remove the file.
   */
  release(): Promise<void>;
  /**
   * The lease of the launcher that took this one over (see `takenOver`), as a renewal found
   * it, or else as the file reads now; undefined while the lease is this launcher's (or gone,
   * or unreadable).
   */
  takenBy(): Promise<Lease | undefined>;
}

/**
 * The lease at `path` when it is another launcher's than the one of `token`: one that took
 * the name over once this launcher's lease went stale (it was stopped, or its renewals failed
 * for a while) although this launcher lives. Undefined when the lease is this launcher's, is
 * gone, or cannot be read (not another's as far as anyone can tell). Without a `token`, any
 * lease there is another's.
 *
 * @example
 * ```ts
 * const other = await takenOver(files, paths.lease, token);
 * if (other !== undefined) logger.warn(`launcher pid ${other.pid} holds the name now`);
 * ```
 */
export async function takenOver(
  files: Files,
  path: string,
  token: string | undefined,
): Promise<Lease | undefined> {
  const lease = await readStateFile(files, LEASE_FORMAT, path).catch(() => undefined);
  return lease !== undefined && lease.token !== token ? lease : undefined;
}

/** The lease file's text for the launcher of `options`, renewed at `renewedAt` (now by default). */
function leaseText(
  options: Omit<LeaseOptions, "files" | "logger">,
  renewedAt = options.clock.now(),
): string {
  const lease: Lease = {
    deployment: options.deployment,
    pid: options.pid,
    token: options.token,
    ...(options.launcherHost !== undefined && { host: options.launcherHost }),
    renewedAt,
    staleAfterMs: options.staleAfterMs,
  };
  return encodeStateFile(LEASE_FORMAT, lease);
}

/**
 * Claims the deployment's name for this launcher: creates its lease only if there is none
 * (`Files.createExclusive`), so that of two launchers of one name at once exactly one goes
 * on. Returns undefined when the lease is now this launcher's, else what is there: another
 * launcher's lease, or `"unreadable"` (damaged: a lease appears whole and is renewed whole;
 * cut short by a power loss: it is made without a sync; or gone again meanwhile).
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
  // Not synced to the disk: after a power loss its launcher is gone whatever it says, one
  // found empty is taken over once stale, and each renewal writes it whole and synced.
  if (await files.createExclusive(path, leaseText(options), 0o600, { durable: false })) {
    return undefined;
  }
  try {
    // Gone again (its launcher just removed it) reads as unreadable: the caller looks again.
    const lease = await readStateFile(files, LEASE_FORMAT, path);
    return lease?.deployment === options.deployment ? lease : "unreadable";
  } catch {
    return "unreadable";
  }
}

/** What `claimOrTakeOver` takes: the lease to create, and how to judge one already there. */
export interface TakeOverClaim extends Omit<LeaseOptions, "logger" | "onLost" | "inspect"> {
  logger?: Logger | undefined;
  /**
   * Why another launcher's `lease` counts as left behind, so that it is taken over, or
   * undefined while its launcher may live.
   */
  left(lease: Lease, now: number): string | undefined;
  /**
   * A lease not left behind that is waited for rather than refused, as its holder gives it
   * back soon: looked at again every `pollMs`, at most `times` times, those looks not counting
   * as attempts.
   */
  waitFor?: { lease(lease: Lease): boolean; pollMs: number; times: number } | undefined;
  /** The info line logged as a lease left behind is removed, and fields it adds. */
  takingOver: string;
  logFields?: Record<string, unknown> | undefined;
}

/** A claim refused: the lease there (another launcher's, or `"unreadable"`), seen at `now`. */
export interface ClaimRefused {
  held: Lease | "unreadable";
  now: number;
}

/**
 * Claims a deployment's name by creating its lease exclusively (`claimLease`); a lease there
 * that its launcher left (`claim.left`; one unreadable, once removed meanwhile or untouched
 * for `staleAfterMs`) is removed, logged, and the claim made again, up to three attempts in
 * all. Resolves with undefined once the lease is this launcher's, else with the lease that
 * refuses it. Both a launcher's local lease and a site's mirrored one are claimed so.
 *
 * @example
 * ```ts
 * const refused = await claimOrTakeOver({ files, clock, path: paths.lease, deployment, pid,
 *   token, staleAfterMs: 30_000, takingOver: "taking over a lease its launcher left",
 *   left: (lease, now) => (isLeaseStale(lease, now) ? "its lease is stale" : undefined) });
 * if (refused !== undefined) throw new Error("another launcher holds this deployment");
 * ```
 */
export async function claimOrTakeOver(claim: TakeOverClaim): Promise<ClaimRefused | undefined> {
  const { files, clock, path, staleAfterMs, waitFor } = claim;
  let waits = 0;
  for (let attempt = 1; ; attempt++) {
    const held = await claimLease(claim);
    if (held === undefined) return undefined;
    const now = clock.now();
    const left =
      held === "unreadable"
        ? await unreadableLeaseLeft(files, path, staleAfterMs, now)
        : claim.left(held, now);
    if (
      left === undefined &&
      held !== "unreadable" &&
      waitFor?.lease(held) &&
      waits < waitFor.times
    ) {
      waits++;
      attempt--;
      await new Promise((resolve) => clock.setTimeout(resolve, waitFor.pollMs));
      continue;
    }
    if (left === undefined || attempt === 3) return { held, now };
    claim.logger?.info(
      { deployment: claim.deployment, ...claim.logFields, lease: path, why: left },
      claim.takingOver,
    );
    await files.remove(path);
  }
}

/**
 * Why a lease `claimLease` found unreadable counts as left behind (removed meanwhile, or not
 * written for longer than `staleAfterMs`), or undefined while it was written lately: a lease
 * appears whole, but one an older baton or a file system without hard links makes is empty
 * for a moment, and one damaged while its launcher lives is renewed again.
 */
async function unreadableLeaseLeft(
  files: Files,
  path: string,
  staleAfterMs: number,
  now: number,
): Promise<string | undefined> {
  const untouched = await untouchedMs(files, dirname(path), [basename(path)], now);
  if (untouched === undefined) return "it was removed meanwhile";
  return untouched > staleAfterMs
    ? `it cannot be read and was not written for ${untouched} ms`
    : undefined;
}

/**
 * Who `other` is, for a teardown's report and warnings, when it is the lease at `path` of a
 * launcher that took this one's over (`HeldLease.takenBy`); undefined when there is none.
 *
 * @example
 * ```ts
 * holderOf(await lease.takenBy(), paths.lease);
 * // "launcher pid 4242 holds its lease /srv/.baton/run/w7/lease.json"
 * ```
 */
export function holderOf(other: Lease | undefined, path: string): string | undefined {
  return other === undefined ? undefined : `launcher pid ${other.pid} holds its lease ${path}`;
}

/**
 * Writes the launcher's lease (`baton.lease/1`, atomic, 0600) and renews it every period,
 * `staleAfterMs / 3`, through the Clock port, so that ranks and reapers can tell a live
 * launcher from a dead one whose pid was reused. Each renewal is a probe of a
 * `watchdogMachine` (DESIGN §4): one that fails is logged and tried again at the next tick
 * (the peer is `suspect`); two in a row (its tolerance) are the abort stage, after which the
 * renewal is retried every fifth of the grace (5 s, or a sixth of `staleAfterMs` when that is
 * shorter); a renewal that succeeds within the grace clears it, and the end of the grace calls
 * `onLost` — about `staleAfterMs / 6` before the ranks would find the lease stale and stop
 * themselves, so the launcher can tear them down and say why.
 *
 * A renewal that hangs (a write to a network file system whose server is gone, an ssh call
 * that gets no answer) fails too: one still in flight when the lease on disk is two periods
 * old, which is when the renewal after it is due, counts as a failed probe, and so does each
 * retry period it goes on hanging. No second renewal starts beside a hung one: each would hold
 * a thread of Node's file I/O pool. One that lands late (a good probe) is followed by the next
 * at once, as its file is as old as its write's start. The lease says it was renewed when its
 * write started (once its read proved it still this launcher's), not when the renewal did, so
 * a slow read does not leave it old the moment it lands. And a renewal slow to land or to fail does not
 * push the next one past a retry period after the lease on disk turned two periods old. So
 * however renewals go, the launcher gives the ranks up before they would leave.
 * Renewals go on after `onLost` until `release()`, which never lets `onLost` come later.
 *
 * Each renewal reads the lease first: one that is another launcher's (`takenOver`: it took
 * the name over while this launcher was stopped or its renewals failed) is not written over;
 * the renewals end there, with a warning and `onTakenOver`, and `takenBy()` tells whose it is.
 * A lease removed meanwhile is written again, as before. A read that returns once the lease
 * on disk is stale (the launcher was stopped, or the read hung) is made again right before
 * the write, as a takeover may have come in between; one that returns after `release()`
 * writes nothing.
 *
 * @example
 * ```ts
 * const lease = await holdLease({ files, clock, path: paths.lease, deployment, pid, token,
 *   staleAfterMs: 30_000, onLost: (reason) => void group.stop(`lease lost: ${reason}`) });
 * // ... after a verified teardown:
 * await lease.release();
 * await files.remove(paths.lease);
 * ```
 */
export async function holdLease(options: LeaseOptions): Promise<HeldLease> {
  const { files, clock, path, staleAfterMs, logger } = options;
  /** When the lease on disk was renewed: the start of the write of the last renewal that landed. */
  let renewedAt = clock.now();
  await files.writeAtomic(path, leaseText(options, renewedAt));
  const renewMs = Math.max(1, Math.floor(staleAfterMs / 3));
  const graceMs = Math.min(WATCHDOG_GRACE_MS, Math.floor(staleAfterMs / 6));
  const retryMs = Math.max(1, Math.floor(graceMs / 5));
  /** The renewal in flight until it settles, with when it started. */
  let unsettled: { startedAt: number } | undefined;
  const watchdog = createActor(watchdogMachine, {
    input: {
      tolerance: WATCHDOG_TOLERANCE,
      graceMs,
      ...(options.plantedBugs !== undefined && { plantedBugs: options.plantedBugs }),
    },
    clock,
    ...(options.inspect !== undefined && { inspect: options.inspect }),
  });
  watchdog.on("abort", ({ strikes }) =>
    logger?.error(
      { lease: path },
      `${
        unsettled === undefined
          ? `lease renewal failed ${strikes} times in a row; retrying every ${retryMs} ms`
          : `lease renewal has not returned in ${clock.now() - unsettled.startedAt} ms; waiting for it`
      } for ${graceMs} ms before giving the ranks up (they take the launcher for dead once its lease is ${staleAfterMs} ms old)`,
    ),
  );
  /**
   * Since the last renewal that landed: how many returned an error, and how long the longest
   * one that went overdue hung before it returned. A hung renewal strikes the watchdog each
   * retry period it stays out, so its strikes are not failed renewals.
   */
  let troubles = { failed: 0, hungMs: 0 };
  watchdog.on("recovered", () => {
    const { failed, hungMs } = troubles;
    const hung = hungMs > 0 ? `a renewal hung for ${hungMs} ms` : "";
    const failures = failed > 0 ? `${failed} failed renewal${failed === 1 ? "" : "s"}` : "";
    logger?.info(
      { lease: path, failedRenewals: failed, hungMs },
      `lease renewed again after ${[failures, hung].filter(Boolean).join(" and ")}`,
    );
  });
  watchdog.on("lost", ({ reason }) => options.onLost?.(reason));
  watchdog.start();
  const watching = () => watchdog.getSnapshot().status === "active";
  const tell = (event: WatchdogEvent) => {
    if (watching()) watchdog.send(event);
  };
  let released = false;
  /** The lease of the launcher that took this one over, once a renewal found it. */
  let taken: Lease | undefined;
  /** The renewal in flight: done once it settles, or once it is overdue. */
  let inFlight: Promise<void> = Promise.resolve();
  let timer: unknown;
  /**
   * When the next renewal starts: a period after the last settled (a retry period while
   * reprobing), but while watching, no later than a retry period after the lease on disk
   * turns two periods old (yet a retry period after the last settled at the soonest).
   */
  const schedule = (ms?: number) => {
    const interval = watchdog.getSnapshot().matches("reprobing") ? retryMs : renewMs;
    const latest = renewedAt + 2 * renewMs + retryMs - clock.now();
    const delay = ms ?? (watching() ? Math.min(interval, Math.max(retryMs, latest)) : interval);
    timer = clock.setTimeout(renew, delay);
  };
  const renew = () => {
    const startedAt = clock.now();
    const renewal = { startedAt };
    unsettled = renewal;
    let overdue = false;
    let looking: unknown;
    let stopWaiting = () => {};
    const overdueOrSettled = new Promise<void>((resolve) => {
      stopWaiting = resolve;
    });
    // Only a renewal that does not settle in time ever sees this timer fire.
    const look = (ms: number) => {
      looking = clock.setTimeout(() => {
        stopWaiting();
        if (released || !watching()) return;
        const pendingMs = clock.now() - startedAt;
        if (!overdue) logger?.warn({ lease: path, pendingMs }, "lease renewal has not returned");
        overdue = true;
        tell({ type: "PROBE_FAILED", reason: `a renewal has not returned in ${pendingMs} ms` });
        look(retryMs);
      }, ms);
    };
    look(Math.max(renewedAt + 2 * renewMs, startedAt + retryMs) - startedAt);
    /** Ends this renewal's wait; an overdue one counts how long it hung. */
    const settle = () => {
      clock.clearTimeout(looking);
      if (unsettled === renewal) unsettled = undefined;
      if (overdue) troubles.hungMs = Math.max(troubles.hungMs, clock.now() - startedAt);
    };
    /**
     * Renews the lease unless another launcher took it over: then that one's lease; else when
     * it wrote. A read that comes back once the lease on disk is stale (this launcher was
     * stopped, or the read hung) may predate a takeover: the lease is read again right before
     * the write. The lease says it was renewed when the read that proved it this launcher's
     * came back, the write's start, not the renewal's: a slow read would make it old at once.
     * Released meanwhile, it writes nothing: the clear may have removed the file already.
     */
    const renewUnlessTaken = async (): Promise<
      { other: Lease } | { writtenAt: number } | undefined
    > => {
      let other = await takenOver(files, path, options.token);
      if (other === undefined && !released && clock.now() - renewedAt > staleAfterMs) {
        other = await takenOver(files, path, options.token);
      }
      if (other !== undefined) return { other };
      if (released) return undefined;
      const writtenAt = clock.now();
      await files.writeAtomic(path, leaseText(options, writtenAt));
      return { writtenAt };
    };
    const settled = renewUnlessTaken().then(
      (outcome) => {
        settle();
        if (released || outcome === undefined) return;
        if ("other" in outcome) {
          const { other } = outcome;
          taken = other;
          logger?.warn(
            { lease: path, otherPid: other.pid },
            `another launcher (pid ${other.pid}) took over lease ${path} after it went stale: no longer renewed`,
          );
          tell({ type: "STOP" });
          options.onTakenOver?.(other);
          return;
        }
        renewedAt = outcome.writtenAt;
        tell({ type: "PROBE_OK" });
        troubles = { failed: 0, hungMs: 0 };
        schedule(overdue ? 0 : undefined);
      },
      (error: unknown) => {
        settle();
        if (released) return;
        troubles.failed += 1;
        logger?.warn({ err: error, lease: path }, "lease renewal failed");
        tell({ type: "PROBE_FAILED", reason: (error as Error).message ?? String(error) });
        schedule();
      },
    );
    inFlight = Promise.race([settled, overdueOrSettled]);
  };
  schedule();
  return {
    async release() {
      released = true;
      clock.clearTimeout(timer);
      tell({ type: "STOP" });
      await inFlight;
      if (unsettled !== undefined) {
        logger?.warn(
          { lease: path, pendingMs: clock.now() - unsettled.startedAt },
          "stopped waiting for a lease renewal that has not returned: should it land after the lease is removed, the file comes back, and the next launch of this name or `baton reap` removes it once stale",
        );
      }
    },
    takenBy: async () => taken ?? (await takenOver(files, path, options.token)),
  };
}
