/**
 * `launchGroup` spawns a large world in slices and lets the event loop run between them, so
 * a stop that comes while the ranks start (a Ctrl-C to `baton launch`) is handled then, not
 * after the last rank. Simulated processes, files and clock; spawning "costs" clock time.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, type RankGroupError } from "../../src/errors.ts";
import type { Clock, Procs } from "../../src/runtime/ports.ts";
import type { RankGroup } from "../../src/runtime/rankGroup.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { settleOn, simLaunch, simPorts } from "../fixtures/simGroup.ts";

/** What one local spawn takes here: 200 ranks took about 5 s on a real machine. */
const SPAWN_MS = 25;
const WORLD = 200;

/** What the n-th spawn (from 1) of `spawningGroup` is given. */
interface Spawning {
  /** Spawns it on the simulated process table. */
  start: () => ReturnType<Procs["spawn"]>;
  sim: SimClock;
  group: () => RankGroup;
}

/**
 * A group of `worldSize` `/bin/sleep 100` ranks on simulated ports, each spawn costing
 * `SPAWN_MS` of the launcher's clock; `spawn(n, spawning)` makes the n-th spawn.
 */
function spawningGroup(
  worldSize: number,
  spawn: (n: number, spawning: Spawning) => ReturnType<Procs["spawn"]>,
) {
  const sim = new SimClock();
  /** Clock time the spawns took: the launcher's clock runs ahead of the simulation's by it. */
  let spent = 0;
  const clock: Clock = {
    now: () => sim.now() + spent,
    setTimeout: (fn, ms) => sim.setTimeout(fn, ms),
    clearTimeout: (handle) => sim.clearTimeout(handle),
  };
  const simProcs = new SimProcs({ clock: sim });
  let spawns = 0;
  const procs: Procs = Object.create(simProcs, {
    spawn: {
      value: (options: Parameters<Procs["spawn"]>[0]) => {
        spawns++;
        spent += SPAWN_MS;
        return spawn(spawns, { start: () => simProcs.spawn(options), sim, group: () => group });
      },
    },
  });
  const group = simLaunch({
    argv: ["/bin/sleep", "100"],
    worldSize,
    ports: simPorts(sim, { procs, clock }),
  });
  /** Runs the simulation until the group has ended; its exit, or what `wait()` rejected with. */
  const ended = () => settleOn(sim)(group.wait());
  return { simProcs, ended, spawns: () => spawns };
}

describe("launchGroup spawning a large world", () => {
  it("stops spawning once a stop came while it spawned, and tears down only the ranks it started", async () => {
    const { simProcs, ended, spawns } = spawningGroup(WORLD, (n, { start, sim, group }) => {
      // A SIGINT that arrives while the third rank is spawned: its handler runs once the
      // launcher lets the event loop run.
      if (n === 3) sim.setTimeout(() => void group().stop("SIGINT to the launcher"), 0);
      return start();
    });
    const outcome = await ended();
    // Before, every one of the 200 ranks was spawned before the stop was seen.
    expect(spawns()).toBeGreaterThanOrEqual(3);
    expect(spawns()).toBeLessThan(10);
    expect(outcome).toMatchObject({ status: "stopped" });
    // Nothing it started is left.
    expect(
      simProcs.list().filter((proc) => proc.argv[0] === "/bin/sleep" && proc.state !== "zombie"),
    ).toEqual([]);
  });

  it("a rank that cannot start before the launcher yields is the launch's error, not an unhandled rejection that ends the process", async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      // Every spawn fails, and two use up a slice: the launcher yields before rank 2.
      const { ended, spawns } = spawningGroup(4, () => {
        throw new ConfigError('cannot start "/bin/sleep": /bin/sleep does not exist');
      });
      const error = await ended();
      expect(spawns()).toBe(4);
      expect(error).toMatchObject({ code: "LAUNCH_FAILED", retryable: false });
      expect((error as RankGroupError).message).toContain(
        'rank 0 of 4 could not be started: cannot start "/bin/sleep"',
      );
      // None was started, so none was stopped.
      expect((error as RankGroupError).message).not.toContain("already started");
      await new Promise((resolve) => setImmediate(resolve));
      // Before, the rejections of ranks 0 and 1 were unhandled when it yielded: a worker's
      // process, or the embedding program, ended with them.
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", record);
    }
  });
});
