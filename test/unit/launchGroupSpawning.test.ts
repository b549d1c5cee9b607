/**
 * `launchGroup` spawns a large world in slices and lets the event loop run between them, so
 * a stop that comes while the ranks start (a Ctrl-C to `baton launch`) is handled then, not
 * after the last rank. Simulated processes, files and clock; spawning "costs" clock time.
 */
import { describe, expect, it } from "vitest";
import { launchGroup } from "../../src/runtime/launchGroup.ts";
import type { Clock, Procs } from "../../src/runtime/ports.ts";
import type { RankGroup } from "../../src/runtime/rankGroup.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";

/** What one local spawn takes here: 200 ranks took about 5 s on a real machine. */
const SPAWN_MS = 25;
const WORLD = 200;

describe("launchGroup spawning a large world", () => {
  it("stops spawning once a stop came while it spawned, and tears down only the ranks it started", async () => {
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
    let group: RankGroup | undefined;
    const procs: Procs = Object.create(simProcs, {
      spawn: {
        value: (options: Parameters<Procs["spawn"]>[0]) => {
          spawns++;
          spent += SPAWN_MS;
          // A SIGINT that arrives while the third rank is spawned: its handler runs once the
          // launcher lets the event loop run.
          if (spawns === 3) sim.setTimeout(() => void group?.stop("SIGINT to the launcher"), 0);
          return simProcs.spawn(options);
        },
      },
    });
    group = launchGroup({
      argv: ["/bin/sleep", "100"],
      worldSize: WORLD,
      stateDir: "/sim/run",
      operatorEnv: {},
      ports: {
        procs,
        clock,
        files: new SimFiles(new SimEntropy(1)).port(sim.scope()),
        entropy: new SimEntropy(2),
        freePort: async () => 29_500,
        logTail: async () => "",
      },
    });
    let settled = false;
    const exit = group.wait().then(
      (value) => value,
      (error: unknown) => error,
    );
    void exit.then(() => {
      settled = true;
    });
    for (let turns = 0; !settled && turns < 100_000; turns++) {
      await new Promise((resolve) => setImmediate(resolve));
      sim.fireNext();
    }
    const outcome = await exit;
    // Before, every one of the 200 ranks was spawned before the stop was seen.
    expect(spawns).toBeGreaterThanOrEqual(3);
    expect(spawns).toBeLessThan(10);
    expect(outcome).toMatchObject({ status: "stopped" });
    // Nothing it started is left.
    expect(
      simProcs.list().filter((proc) => proc.argv[0] === "/bin/sleep" && proc.state !== "zombie"),
    ).toEqual([]);
  });
});
