import { createRank } from "../rank/rank.ts";
import { readRankEnv } from "../rank/rankEnv.ts";
import { ORPHANED_EXIT_CODE } from "../rank/startRank.ts";
import type { ProcExit, Procs } from "../runtime/ports.ts";
import type { SimFiles } from "./simFiles.ts";
import type { SimProgram } from "./simProcs.ts";

/** The command of a simulated rank: `[SIM_RANK, plan]`, the plan as JSON (see {@link rankArgv}). */
export const SIM_RANK = "sim-rank";
/** The command of the helper a simulated rank may start. */
export const SIM_RANK_HELPER = "sim-rank-helper";

/** How one simulated rank behaves; times are virtual ms after it starts. */
export interface SimRankBehaviour {
  /** It marks itself ready after loading this long; absent: it never gets ready. */
  loadMs?: number | undefined;
  /** It exits by itself with `code` (after closing its marker), ready or not. */
  exit?: { afterMs: number; code: number } | undefined;
  ignoreTerm?: boolean | undefined;
  /** KILLs it takes to die (2: it survives the first). */
  killsToDie?: number | undefined;
  /** Uninterruptible sleep: no code runs, signals wait until it wakes. */
  diskSleep?: { afterMs: number; forMs: number } | undefined;
  zombieMs?: number | undefined;
  /** It stays when its launcher is gone (a hung rank): only a teardown or a reaper ends it. */
  deaf?: boolean | undefined;
  /**
   * It starts a helper in its process group, which may leave it (setsid), ignore TERM, and
   * start with an empty environment (`env -i`: only its cgroup still ties it to the rank).
   */
  helper?:
    | {
        setsidAfterMs?: number | undefined;
        ignoreTerm?: boolean | undefined;
        clearEnv?: boolean | undefined;
      }
    | undefined;
}

/**
 * The argv that makes `launchGroup` start simulated ranks: every rank gets the same argv, as
 * torchrun's ranks do, and picks its own behaviour from the plan by its `RANK`.
 *
 * @example
 * ```ts
 * launchGroup({ argv: rankArgv([{ loadMs: 500 }, { loadMs: 900, ignoreTerm: true }]), worldSize: 2, ports });
 * ```
 */
export function rankArgv(plan: readonly SimRankBehaviour[]): [string, string] {
  return [SIM_RANK, JSON.stringify(plan)];
}

/** What a simulated rank tells the simulation (never seen by the code under test). */
export interface SimRankEvent {
  /** `orphaned`: it took its launcher for dead (pid gone or lease stale) and is leaving. */
  kind: "ready" | "orphaned" | "died";
  deployment: string;
  rank: number;
  pid: number;
  /** How it died (`died` only). */
  exit?: ProcExit;
}

/** The world a simulated rank lives in. */
export interface SimRankWorld {
  files: SimFiles;
  /** The process table, for the rank's watch on its launcher. */
  procs: Pick<Procs, "inspect">;
  /** How often a rank checks its launcher's pid and lease. */
  watchEveryMs: number;
  onEvent(event: SimRankEvent): void;
}

/**
 * The simulated rank program, for `SimProcs`' `programs` under {@link SIM_RANK}: a process
 * that reads the environment the launcher set, runs the real rank library (`createRank`) on
 * its own clock and the simulated files — marker `loading`, heartbeat, `ready` after loading,
 * exit when its launcher is gone or its lease stale — and misbehaves as its entry in the
 * plan says: fails with a code, ignores TERM, survives a KILL, sleeps in D, stays a zombie,
 * ignores its launcher's death, starts a helper that leaves the group (and empties its
 * environment). A process label
 * `<deployment>/rank-<R>` (`…/helper` for the helper) tells the simulation whose it is.
 *
 * @example
 * ```ts
 * const procs = new SimProcs({
 *   clock,
 *   programs: { [SIM_RANK]: simRankProgram({ files, procs: { inspect: (pid) => procs.inspect(pid) },
 *     watchEveryMs: 2_000, onEvent: (e) => trace(`${e.kind} ${e.rank}`) }) },
 * });
 * ```
 */
export function simRankProgram(world: SimRankWorld): SimProgram {
  return (spawn) => {
    const env = readRankEnv(spawn.env ?? {});
    const plan = JSON.parse(spawn.argv[1] ?? "[]") as SimRankBehaviour[];
    const behaviour = plan[env.rank] ?? {};
    const label = `${env.deployment}/rank-${env.rank}`;
    const event = (pid: number, kind: SimRankEvent["kind"], exit?: ProcExit) =>
      world.onEvent({
        kind,
        deployment: env.deployment,
        rank: env.rank,
        pid,
        ...(exit && { exit }),
      });
    return {
      label,
      ...(behaviour.ignoreTerm && { onTerm: "ignore" as const }),
      ...(behaviour.killsToDie !== undefined && { killsToDie: behaviour.killsToDie }),
      ...(behaviour.diskSleep !== undefined && { diskSleep: behaviour.diskSleep }),
      ...(behaviour.zombieMs !== undefined && { zombieMs: behaviour.zombieMs }),
      main(self) {
        const files = world.files.port(self.clock);
        self.onDeath((exit) => {
          world.files.crash(self.clock, { torn: false });
          event(self.pid, "died", exit);
        });
        const { helper } = behaviour;
        if (helper !== undefined) {
          self.fork({
            argv: [SIM_RANK_HELPER],
            label: `${label}/helper`,
            ...(helper.ignoreTerm && { onTerm: "ignore" as const }),
            ...(helper.setsidAfterMs !== undefined && { setsidAfterMs: helper.setsidAfterMs }),
            ...(helper.clearEnv && { clearEnv: true }),
          });
        }
        const ranking = createRank(
          env,
          { files, clock: self.clock, procs: world.procs, pid: self.pid },
          {
            watchEveryMs: world.watchEveryMs,
            ...(!behaviour.deaf && {
              onOrphaned: () => {
                event(self.pid, "orphaned");
                self.exit(ORPHANED_EXIT_CODE);
              },
            }),
          },
        );
        ranking.then(
          (rank) => {
            if (behaviour.loadMs !== undefined) {
              self.clock.setTimeout(() => {
                // A ready marker that cannot be written (the state dir full) fails the rank,
                // as it would a real program.
                rank.ready().then(
                  () => event(self.pid, "ready"),
                  () => self.exit(2),
                );
              }, behaviour.loadMs);
            }
            const { exit } = behaviour;
            if (exit !== undefined) {
              self.clock.setTimeout(async () => {
                await rank.close();
                self.exit(exit.code);
              }, exit.afterMs);
            }
          },
          () => self.exit(2),
        );
      },
    };
  };
}
