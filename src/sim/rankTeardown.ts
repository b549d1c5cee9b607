import { TeardownError } from "../errors.ts";
import type { PlantedBug } from "../machines/plantedBugs.ts";
import type { Clock } from "../runtime/ports.ts";
import { type TeardownTimeouts, tearDown } from "../runtime/tearDown.ts";
import type { SimEntropy } from "./simEntropy.ts";
import { type SimProcSpec, SimProcs } from "./simProcs.ts";

/** The simulation polls the process table less often than a real teardown (fewer steps). */
const TIMEOUTS: Partial<TeardownTimeouts> = { pollMs: 250 };
/** A teardown that is not verified is tried again this long after it gave up. */
const RETRY_AFTER_MS = 30_000;
const ATTEMPTS = 4;
const STRANGER = "stranger";

/** How the rank-group scenario reports what it sees and what broke. */
export interface RankTeardownHooks {
  trace(line: string): void;
  /** Invariant 8: verified ⇒ no process of the deployment alive; 9: only its processes are signalled. */
  fail(invariant: 8 | 9 | 6, message: string): void;
}

/**
 * The rank-group part of a simulated world: a deployment of 1–4 ranks on a simulated process
 * table, each drawn with faults from the seed (ignores TERM, survives the first KILL, sleeps
 * in D, forks a child that may escape the group with setsid, exits early so that a stranger takes
 * its pid, stays a zombie for a while; another user's process may take a rank's group id),
 * torn down with the real `tearDown` at a drawn moment on the simulation's clock. It checks,
 * after every step, that no signal reached a process outside the deployment, and, when the
 * teardown says verified, that nothing of the deployment is alive. An unverified teardown
 * must name a survivor that is really alive, and is retried until it is verified.
 *
 * @example
 * ```ts
 * const ranks = new RankTeardown(clock, entropy.fork("ranks"), [], hooks);
 * ranks.start();
 * // ... run the clock; after every step:
 * ranks.check();
 * ranks.done; // true once a teardown was verified
 * ```
 */
export class RankTeardown {
  readonly procs: SimProcs;
  readonly deployment: string;
  done = false;
  private checkedSignals = 0;
  private readonly forbiddenGroups = new Set<number>();
  private readonly ranks: number[] = [];
  private readonly groups: number[] = [];
  private readonly known: number[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly entropy: SimEntropy,
    private readonly plantedBugs: readonly PlantedBug[],
    private readonly hooks: RankTeardownHooks,
  ) {
    this.procs = new SimProcs({ clock });
    this.deployment = `dep-${Array.from({ length: 12 }, () => "abcdefghijklmnopqrstuvwxyz0123456789"[entropy.int(0, 35)]).join("")}`;
  }

  /** Launches the ranks and schedules their faults and the teardown. */
  start(): void {
    const { entropy, procs, deployment } = this;
    const env = { BATON_DEPLOYMENT: deployment };
    const count = entropy.int(1, 4);
    for (let rank = 0; rank < count; rank++) {
      const spec: SimProcSpec = {
        argv: ["python", "train.py", "--deployment", deployment],
        env: { ...env, RANK: String(rank) },
        newGroup: true,
        label: `rank-${rank}`,
        ...(entropy.chance(0.3) && { onTerm: "ignore" as const }),
        ...(entropy.chance(0.2) && { killsToDie: 2 }),
        ...(entropy.chance(0.15) && {
          diskSleep: { afterMs: entropy.int(0, 5_000), forMs: entropy.int(100, 20_000) },
        }),
        ...(entropy.chance(0.3) && { zombieMs: entropy.int(1, 3_000) }),
      };
      const exitEarly = entropy.chance(0.2) ? entropy.int(0, 4_000) : undefined;
      const handle = procs.start({
        ...spec,
        ...(exitEarly !== undefined && { exitAfterMs: exitEarly }),
      });
      this.ranks.push(handle.pid);
      this.groups.push(handle.pid);
      this.known.push(handle.pid);
      if (entropy.chance(0.3)) {
        const child = procs.start({
          argv: ["python", "-m", "worker", "--deployment", deployment],
          env: { ...env, RANK: String(rank) },
          ppid: handle.pid,
          pgid: handle.pid,
          label: `rank-${rank}-child`,
          ...(entropy.chance(0.3) && { onTerm: "ignore" as const }),
          // setsid: the child leaves the rank's group, so only the marker sweep finds it.
          ...(entropy.chance(0.3) && { setsidAfterMs: entropy.int(0, 3_000) }),
        });
        this.known.push(child.pid);
      }
      if (exitEarly !== undefined && entropy.chance(0.7)) {
        // Pid reuse: once the rank is gone, a stranger (or another user's group) takes its pid.
        const foreignUser = entropy.chance(0.4);
        void handle.exited.then(() =>
          this.clock.setTimeout(() => this.takePid(handle.pid, foreignUser), entropy.int(0, 2_000)),
        );
      }
    }
    this.hooks.trace(
      `ranks ${deployment}: ${this.ranks.length} ranks (pids ${this.ranks.join(", ")}), known ${this.known.join(", ")}`,
    );
    this.clock.setTimeout(() => void this.stop(1), entropy.int(0, 10_000));
  }

  /** Holds every signal sent since the last check to invariant 9. */
  check(): void {
    const signals = this.procs.signals;
    for (; this.checkedSignals < signals.length; this.checkedSignals++) {
      const record = signals[this.checkedSignals]!;
      for (const receiver of record.receivers) {
        if (receiver.label === STRANGER) {
          this.hooks.fail(
            9,
            `teardown of ${this.deployment} sent ${record.signal} (to ${record.target} ${record.id}) to pid ${receiver.pid}, which does not belong to the deployment`,
          );
        }
      }
    }
  }

  private takePid(pid: number, foreignUser: boolean): void {
    if (this.procs.process(pid) !== undefined) return;
    try {
      this.procs.start({
        pid,
        argv: ["postgres", "-D", "/var/lib/postgres"],
        newGroup: true,
        label: STRANGER,
        onTerm: "ignore",
        ...(foreignUser && { uid: 0 }),
      });
      this.hooks.trace(`ranks: a stranger${foreignUser ? " of another user" : ""} took pid ${pid}`);
    } catch {
      // The pid is still a process group id of the deployment: nobody can take it yet.
    }
  }

  private alive(): number[] {
    return this.procs
      .processes()
      .filter(
        (p) =>
          p.state !== "zombie" &&
          p.label !== STRANGER &&
          p.env.BATON_DEPLOYMENT === this.deployment,
      )
      .map((p) => p.pid);
  }

  private async stop(attempt: number): Promise<void> {
    const target = {
      deployment: this.deployment,
      groups: this.groups,
      pids: this.ranks,
      sweepCandidates: async () => this.known,
      forbiddenGroups: this.forbiddenGroups,
    };
    this.hooks.trace(`ranks: teardown attempt ${attempt} of ${this.deployment}`);
    try {
      const report = await tearDown(
        target,
        { procs: this.procs, clock: this.clock, plantedBugs: this.plantedBugs },
        TIMEOUTS,
      );
      this.check();
      const alive = this.alive();
      this.hooks.trace(`ranks: teardown verified in ${report.elapsedMs} ms`);
      if (alive.length > 0) {
        this.hooks.fail(
          8,
          `teardown of ${this.deployment} reported verified while pids ${alive.join(", ")} of the deployment are alive`,
        );
      }
      this.done = true;
    } catch (error) {
      if (!(error instanceof TeardownError)) {
        this.hooks.fail(
          6,
          `teardown of ${this.deployment} failed: ${(error as Error).stack ?? error}`,
        );
        return;
      }
      const alive = new Set(this.alive());
      this.hooks.trace(
        `ranks: teardown unverified: ${error.survivors.map((s) => `${s.pid} ${s.state}`).join(", ")}`,
      );
      if (!error.survivors.some((s) => alive.has(s.pid))) {
        this.hooks.fail(
          8,
          `teardown of ${this.deployment} was unverified, but none of its survivors is alive`,
        );
        return;
      }
      if (attempt === ATTEMPTS) {
        this.hooks.fail(
          6,
          `teardown of ${this.deployment} still unverified after ${ATTEMPTS} attempts`,
        );
        return;
      }
      this.clock.setTimeout(() => void this.stop(attempt + 1), RETRY_AFTER_MS);
    }
  }
}
