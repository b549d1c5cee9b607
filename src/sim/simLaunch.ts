import { ConfigError } from "../errors.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireDeploymentId } from "../rank/requireDeploymentId.ts";
import { requireWhole } from "../runtime/requireWhole.ts";
import { SIM_LIMITS } from "./simLimits.ts";
import type { SimRankBehaviour } from "./simRankProgram.ts";

/**
 * How a simulated launcher is killed (SIGKILL: its timers and file writes stop, its ranks
 * become orphans): `afterMs` after its launch starts, or `atFileWrite.afterMs` after it starts
 * its `atFileWrite.n`-th write or removal of a file (0 ms: right before it, which then never
 * happens), whichever comes first; at least one of the two.
 */
export interface SimLauncherCrash {
  afterMs?: number | undefined;
  atFileWrite?: { n: number; afterMs: number } | undefined;
  /** The write it is killed in is left cut part way (a torn temp file), as a power loss leaves it. */
  torn?: boolean | undefined;
}

/**
 * One rank-group launch of a simulation, given rather than drawn from the seed
 * (`SimulateOptions.launches`): the real launcher (`launchGroup`, its reaper first) starts
 * `ranks.length` simulated ranks, each behaving as its entry says, `atMs` virtual ms after the
 * simulation starts. Nothing of it is drawn: no stranger takes a rank's pid, no disk fills
 * up, and a crashed launcher is not launched again unless a later launch of yours says so
 * (give it the same `name` for its reaper to find the orphans).
 *
 * @example
 * ```ts
 * const launches: SimLaunch[] = [
 *   // Killed right before its 5th file write, the manifest with its ranks' pids; rank 0 stays.
 *   { name: "train", ranks: [{ loadMs: 500, deaf: true, ignoreTerm: true, killsToDie: 2 }], crash: { atFileWrite: { n: 5, afterMs: 0 } } },
 *   // Its reaper must stop that orphan before it starts its own rank.
 *   { name: "train", atMs: 5_000, ranks: [{ loadMs: 500 }], stopAfterMs: 30_000 },
 * ];
 * await simulate({ seed: 1, jobs: 2, workers: 1, faults: "none", launches });
 * ```
 */
export interface SimLaunch {
  /** One behaviour for each rank, the world size their number (at most `SIM_LIMITS.world`). */
  ranks: readonly SimRankBehaviour[];
  /** When it starts, in virtual ms from the simulation's start (default 0). */
  atMs?: number | undefined;
  /** The deployment's name (`launchGroup`'s `name`); default an id drawn from the seed. */
  name?: string | undefined;
  /** The operator stops the group (Ctrl-C) this long after it starts; default never. */
  stopAfterMs?: number | undefined;
  /** Its launcher is killed (see {@link SimLauncherCrash}); default never. */
  crash?: SimLauncherCrash | undefined;
  /** It starts its ranks in a cgroup of the deployment (`launchGroup`'s `contain`); default false. */
  contain?: boolean | undefined;
}

const LAUNCH_KEYS: Record<keyof SimLaunch, true> = {
  ranks: true,
  atMs: true,
  name: true,
  stopAfterMs: true,
  crash: true,
  contain: true,
};

const CRASH_KEYS: Record<keyof SimLauncherCrash, true> = {
  afterMs: true,
  atFileWrite: true,
  torn: true,
};

const RANK_KEYS: Record<keyof SimRankBehaviour, true> = {
  loadMs: true,
  exit: true,
  ignoreTerm: true,
  killsToDie: true,
  diskSleep: true,
  zombieMs: true,
  deaf: true,
  helper: true,
};

/**
 * Refuses, with a `ConfigError` naming `where` and the launch, launches a simulation could not
 * make as given: not a list of objects, an unknown key (a typo such as `ignoreTERM` would
 * leave its rank without that behaviour, unnoticed), no ranks or more than `SIM_LIMITS.world`, a time
 * that is no whole number of virtual ms up to `SIM_LIMITS.virtualMs`, a name no deployment
 * can have (`launchGroup` threw it at the launch's virtual time, without naming the launch),
 * a crash that says neither when nor at which file write.
 *
 * @example
 * ```ts
 * checkSimLaunches("simulate", [{ ranks: [] }]);
 * // ConfigError: simulate: launches[0].ranks must list 1 to 10000 rank behaviours ({ loadMs, exit, … }), not 0
 * ```
 */
export function checkSimLaunches(where: string, launches: unknown): void {
  if (!Array.isArray(launches)) {
    throw new ConfigError(
      `${where}: launches must be a list of rank-group launches ({ ranks, atMs, crash, … }), not ${typeof launches}`,
    );
  }
  launches.forEach((launch: SimLaunch, i) => {
    const at = `${where}: launches[${i}]`;
    checkOptionNames(at, launch, LAUNCH_KEYS, {
      shape: "{ ranks, atMs, name, stopAfterMs, crash, contain }",
    });
    const { ranks } = launch;
    if (!Array.isArray(ranks) || ranks.length === 0 || ranks.length > SIM_LIMITS.world) {
      throw new ConfigError(
        `${at}.ranks must list 1 to ${SIM_LIMITS.world} rank behaviours ({ loadMs, exit, … }), not ${Array.isArray(ranks) ? ranks.length : typeof ranks}`,
      );
    }
    ranks.forEach((rank, r) => {
      checkOptionNames(`${at}.ranks[${r}]`, rank, RANK_KEYS, {
        shape: "{ loadMs, exit, ignoreTerm, … }",
      });
    });
    if (launch.name !== undefined) requireDeploymentId(at, "name", launch.name);
    for (const name of ["atMs", "stopAfterMs"] as const) {
      if (launch[name] !== undefined) requireWhole(at, name, launch[name], 0, SIM_LIMITS.virtualMs);
    }
    if (launch.crash === undefined) return;
    checkOptionNames(`${at}.crash`, launch.crash, CRASH_KEYS, {
      shape: "{ afterMs, atFileWrite, torn }",
    });
    const { afterMs, atFileWrite } = launch.crash;
    if (afterMs === undefined && atFileWrite === undefined) {
      throw new ConfigError(
        `${at}.crash says neither when its launcher is killed nor at which file write: give afterMs, atFileWrite: { n, afterMs }, or both`,
      );
    }
    if (afterMs !== undefined)
      requireWhole(`${at}.crash`, "afterMs", afterMs, 0, SIM_LIMITS.virtualMs);
    if (atFileWrite !== undefined) {
      checkOptionNames(
        `${at}.crash.atFileWrite`,
        atFileWrite,
        { n: true, afterMs: true },
        { shape: "{ n, afterMs }" },
      );
      requireWhole(`${at}.crash.atFileWrite`, "n", atFileWrite.n, 1, SIM_LIMITS.virtualMs);
      requireWhole(
        `${at}.crash.atFileWrite`,
        "afterMs",
        atFileWrite.afterMs,
        0,
        SIM_LIMITS.virtualMs,
      );
    }
  });
}
