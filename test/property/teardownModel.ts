import fc from "fast-check";
import { TeardownError } from "../../src/errors.ts";
import type { PlantedBug } from "../../src/machines/plantedBugs.ts";
import { MOST_SWEEP_KILLS } from "../../src/machines/teardown.ts";
import type { Signal, SignalOutcome } from "../../src/runtime/ports.ts";
import {
  type TeardownTarget,
  type TeardownTimeouts,
  tearDown,
  teardownDeadlineMs,
} from "../../src/runtime/tearDown.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { type SimProcSpec, SimProcs } from "../../src/sim/simProcs.ts";
import { propertyRuns as runsOf } from "../fixtures/propertyRun.ts";

/**
 * The teardown's model-based property, shared by the property test and the planted-bug test:
 * random rank groups on simulated processes (exits, ignored TERM, KILL survivors, D-state,
 * zombies, children that leave their group, markers), random pid and process-group reuse by
 * unrelated programs of our user and of another user (EPERM), random timeouts; the real
 * `tearDown` adapter and machine run on the simulation's clock, and a second attempt follows
 * an unverified first one, as `stop()` would.
 *
 * Checked after each attempt:
 * - it ends verified exactly when no process of the deployment is alive, and an unverified
 *   end names exactly those alive (pids and states);
 * - every signal delivered reached only processes of the deployment;
 * - a group that answered EPERM is never signalled again (in this attempt or the next), and
 *   is in `forbiddenGroups`;
 * - it takes at most the sum of its deadlines in virtual time. (Probes, signals and reading
 *   markers take no virtual time, so the poll slack here is 0; on a real machine it is the
 *   time those take.)
 */

export const DEPLOYMENT = "dep-0123456789ab";
/** The deployment's state dir; a rank of the same name from another one is a bystander. */
export const STATE_DIR = "/srv/app/.baton/run";

/** What a simulated process of the deployment does. */
const behaviour = {
  onTerm: fc.constantFrom<"exit" | "ignore">("exit", "exit", "ignore"),
  termExitMs: fc.nat(4000),
  killsToDie: fc.constantFrom(1, 1, 1, 2, 3),
  diskSleep: fc.option(fc.record({ afterMs: fc.nat(3000), forMs: fc.nat(30_000) }), {
    nil: undefined,
    freq: 4,
  }),
  exitAfterMs: fc.option(fc.nat(20_000), { nil: undefined, freq: 3 }),
  zombieMs: fc.constantFrom(0, 0, 40, 3000),
  marker: fc.boolean(),
};

const childArb = fc.record({
  ...behaviour,
  setsidAfterMs: fc.option(fc.nat(3000), { nil: undefined }),
  /**
   * Started with an empty environment: it carries the deployment in argv only, or, in a
   * contained group, nothing at all but its cgroup.
   */
  clearEnv: fc.boolean(),
});

const rankArb = fc.record({ ...behaviour, children: fc.array(childArb, { maxLength: 2 }) });

/** An unrelated program taking a freed pid of the deployment (and maybe its group id). */
const reuseArb = fc.record({
  victim: fc.nat(),
  afterMs: fc.nat(16_000),
  otherUser: fc.boolean(),
  newGroup: fc.boolean(),
  /** Another user's program whose argv happens to name the deployment (a `tail -f` of a log). */
  namesDeployment: fc.boolean(),
});

const timeoutsArb: fc.Arbitrary<TeardownTimeouts> = fc.record({
  termGraceMs: fc.nat(3000),
  killWaitMs: fc.nat(2000),
  killAgainWaitMs: fc.nat(2000),
  sweepTermWaitMs: fc.nat(3000),
  sweepKillWaitMs: fc.nat(2000),
  pollMs: fc.integer({ min: 10, max: 400 }),
});

export const scenarios = fc.record({
  layout: fc.constantFrom<"group-per-rank" | "one-group">("group-per-rank", "one-group"),
  /** Rank groups whose id changes hands between the check and the signal: EPERM. */
  denied: fc.uniqueArray(fc.nat(4), { maxLength: 2 }),
  ranks: fc.array(rankArb, { minLength: 1, maxLength: 5 }),
  reuses: fc.array(reuseArb, { maxLength: 3 }),
  startAfterMs: fc.nat(2000),
  timeouts: timeoutsArb,
  /** The ranks start in a cgroup of the deployment, which the target names. */
  contained: fc.boolean(),
  /**
   * A second Ctrl-C (`HURRY`) this long into each attempt: from then on no TERM wait, and
   * the teardown is verified all the same.
   */
  hurryAfterMs: fc.option(fc.nat(6000), { nil: undefined, freq: 3 }),
});

export type Scenario = typeof scenarios extends fc.Arbitrary<infer T> ? T : never;

/**
 * Lets promise callbacks run (markers read, answers sent) before time moves on. Everything
 * here settles within a few microtask hops; 50 leaves a wide margin and costs far less than a
 * macrotask per timer.
 */
async function flush(): Promise<void> {
  for (let hop = 0; hop < 50; hop++) await undefined;
}

/**
 * Runs `attempt` on the simulation's clock: fires timers one at a time, letting promise
 * callbacks run between them, until it settles. Fails when it can no longer make progress.
 */
export async function onSimClock<T>(
  clock: SimClock,
  attempt: Promise<T>,
): Promise<{ value: T } | { error: unknown }> {
  let settled: { value: T } | { error: unknown } | undefined;
  attempt.then(
    (value) => {
      settled = { value };
    },
    (error: unknown) => {
      settled = { error };
    },
  );
  for (;;) {
    await flush();
    if (settled !== undefined) return settled;
    if (!clock.fireNext()) throw new Error("teardown neither settled nor waits for a timer");
  }
}

/**
 * The simulation, except that the groups in `denied` answer EPERM, as a group whose id passed
 * to another user between teardown's check and its signal would. (Its members stay, so
 * teardown must still reach them by pid.)
 */
class RacingProcs extends SimProcs {
  readonly denied = new Set<number>();

  override signalGroup(pgid: number, signal: Signal): SignalOutcome {
    if (!this.denied.has(pgid) || signal === 0) return super.signalGroup(pgid, signal);
    this.signals.push({
      at: this.clock.now(),
      target: "group",
      id: pgid,
      signal,
      outcome: "EPERM",
      receivers: [],
    });
    return "EPERM";
  }
}

class PropertyFailure extends Error {
  override name = "PropertyFailure";
}

function check(condition: boolean, message: () => string): void {
  if (!condition) throw new PropertyFailure(message());
}

/** The simulated world of one scenario: the group, the bystanders, the reuse plan. */
function build(scenario: Scenario, clock: SimClock) {
  const procs = new RacingProcs({ clock, cgroups: scenario.contained });
  const cgroup = procs.containment?.create(DEPLOYMENT);
  // Bystanders that must never be touched: one of our user, one of another.
  procs.start({ argv: ["sleep", "1000"], newGroup: true, label: "bystander" });
  procs.start({ argv: ["sshd"], newGroup: true, uid: 0, label: "bystander" });
  // And a rank of the same name launched from another state dir, naming it in its arguments.
  procs.start({
    argv: ["python", "train.py", `--deployment=${DEPLOYMENT}`],
    env: { BATON_DEPLOYMENT: DEPLOYMENT, BATON_STATE_DIR: "/home/other/.baton/run" },
    newGroup: true,
    label: "bystander",
  });

  const members: { pid: number; marker: boolean }[] = [];
  const rankPids: number[] = [];
  let sharedGroup: number | undefined;
  scenario.ranks.forEach((rank, r) => {
    const env = { BATON_DEPLOYMENT: DEPLOYMENT, BATON_STATE_DIR: STATE_DIR, RANK: String(r) };
    const spec: SimProcSpec = {
      ...rank,
      argv: ["python", "train.py"],
      env,
      label: `rank-${r}`,
      ...(sharedGroup === undefined ? { newGroup: true } : { pgid: sharedGroup }),
      ...(cgroup !== undefined && { cgroup }),
    };
    const { pid } = procs.start(spec);
    if (scenario.layout === "one-group") sharedGroup ??= pid;
    rankPids.push(pid);
    members.push({ pid, marker: rank.marker });
    rank.children.forEach((child, c) => {
      const started = procs.start({
        ...child,
        ppid: pid,
        argv:
          child.clearEnv && cgroup === undefined
            ? ["python", "worker.py", `--deployment=${DEPLOYMENT}`]
            : ["python", "worker.py"],
        env: child.clearEnv ? {} : env,
        label: `rank-${r}.child-${c}`,
      });
      // Uncontained, a child that drops the environment and leaves its group can only be
      // found by its marker; contained, its cgroup finds it.
      const lost = cgroup === undefined && child.clearEnv && child.setsidAfterMs !== undefined;
      members.push({ pid: started.pid, marker: child.marker || lost });
    });
  });

  scenario.reuses.forEach((reuse, i) => {
    const victim = members[reuse.victim % members.length]!.pid;
    clock.setTimeout(() => {
      if (procs.process(victim) !== undefined) return;
      try {
        procs.start({
          pid: victim,
          ppid: 1,
          newGroup: reuse.newGroup,
          uid: reuse.otherUser ? 2000 : procs.uid,
          argv:
            reuse.otherUser && reuse.namesDeployment
              ? ["tail", "-f", `/srv/baton/${DEPLOYMENT}/rank-0.log`]
              : ["sleep", "1000"],
          env: { HOME: "/home/someone" },
          onTerm: "exit",
          label: `foreign-${i}`,
        });
      } catch {
        // The pid is still some group's id: the kernel would not hand it out either.
      }
    }, reuse.afterMs);
  });

  const groups = [...new Set(rankPids.map((pid) => procs.process(pid)!.pgid))];
  for (const index of scenario.denied) if (index < groups.length) procs.denied.add(groups[index]!);
  const target: TeardownTarget = {
    deployment: DEPLOYMENT,
    stateDir: STATE_DIR,
    groups,
    pids: rankPids,
    sweepCandidates: async () => members.filter((m) => m.marker).map((m) => m.pid),
    forbiddenGroups: new Set<number>(),
    ...(cgroup !== undefined && { cgroup }),
  };
  return { procs, target };
}

const isRank = (label: string | undefined): boolean => label?.startsWith("rank-") ?? false;

/** Runs the scenario's teardown (and one retry when unverified) and checks every attempt. */
export async function runScenario(
  scenario: Scenario,
  plantedBugs: readonly PlantedBug[] = [],
): Promise<void> {
  const clock = new SimClock();
  const { procs, target } = build(scenario, clock);
  while (clock.fireNext(scenario.startAfterMs));

  const banned = new Set<number>();
  for (let attempt = 1; attempt <= 2; attempt++) {
    const started = clock.now();
    const firstSignal = procs.signals.length;
    const hurry = new AbortController();
    const hurryTimer =
      scenario.hurryAfterMs === undefined
        ? undefined
        : clock.setTimeout(() => hurry.abort(), scenario.hurryAfterMs);
    const outcome = await onSimClock(
      clock,
      tearDown(target, { procs, clock, plantedBugs, hurry: hurry.signal }, scenario.timeouts),
    );
    if (hurryTimer !== undefined) clock.clearTimeout(hurryTimer);
    const signals = procs.signals.slice(firstSignal);
    const elapsed = clock.now() - started;
    const alive = procs
      .processes()
      .filter((proc) => isRank(proc.label) && proc.state !== "zombie")
      .map((proc) => `${proc.pid} (${proc.state})`);
    const context = () =>
      `attempt ${attempt}; alive: [${alive.join(", ")}]; signals: ${JSON.stringify(signals)}; ` +
      ("value" in outcome
        ? `report: ${JSON.stringify(outcome.value)}`
        : `error: ${String(outcome.error)}`);

    if ("error" in outcome && !(outcome.error instanceof TeardownError)) throw outcome.error;
    const verified = "value" in outcome;
    check(
      verified === (alive.length === 0),
      () => `verified is ${verified} while ${alive.length} processes of the deployment live`,
    );
    if (!verified) {
      const survivors = (outcome.error as TeardownError).survivors.map(
        ({ pid, state }) => `${pid} (${state})`,
      );
      check(
        survivors.join(", ") === alive.join(", "),
        () => `survivors [${survivors.join(", ")}] are not those alive; ${context()}`,
      );
    }
    for (const record of signals) {
      const strangers = record.receivers.filter((receiver) => !isRank(receiver.label));
      check(
        strangers.length === 0,
        () =>
          `${record.signal} to ${record.target} ${record.id} reached ${JSON.stringify(strangers)}; ${context()}`,
      );
      if (record.target !== "group") continue;
      check(!banned.has(record.id), () => `group ${record.id} signalled after EPERM; ${context()}`);
      if (record.outcome === "EPERM") banned.add(record.id);
    }
    for (const pgid of banned) {
      check(target.forbiddenGroups.has(pgid), () => `group ${pgid} not kept in forbiddenGroups`);
    }
    const deadline = teardownDeadlineMs(scenario.timeouts);
    check(elapsed <= deadline, () => `took ${elapsed} ms, deadlines sum to ${deadline} ms`);
    if (scenario.hurryAfterMs !== undefined && scenario.hurryAfterMs < elapsed) {
      // Hurried, no TERM wait is left: only the KILL waits can follow the hurry.
      const { killWaitMs, killAgainWaitMs, sweepKillWaitMs } = scenario.timeouts;
      const afterHurry = elapsed - scenario.hurryAfterMs;
      const most = killWaitMs + killAgainWaitMs + MOST_SWEEP_KILLS * sweepKillWaitMs;
      check(
        afterHurry <= most,
        () => `took ${afterHurry} ms after HURRY, the KILL waits sum to ${most} ms; ${context()}`,
      );
    }
    if (verified) return;
  }
}

/** The property; `plantedBugs` are switched on in the teardown machine. */
export function teardownProperty(plantedBugs: readonly PlantedBug[] = []) {
  return fc.asyncProperty(scenarios, (scenario) => runScenario(scenario, plantedBugs));
}

/** Runs per property: BATON_PROPERTY_RUNS, 300 by default. */
export const propertyRuns = runsOf(300);

/** A vitest timeout that grows with the runs. */
export const propertyTimeoutMs = Math.max(60_000, 200 * propertyRuns);
