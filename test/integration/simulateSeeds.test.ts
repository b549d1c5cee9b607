/**
 * `simulateSeeds` runs seeds on real threads (this one and helpers that load baton through
 * tsx): each seed must give the trace it gives alone, in seed order, whatever thread ran it.
 */
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import type { Fault } from "../../src/sim/faultPlan.ts";
import { type SeedThreadMessage, startSeedThread } from "../../src/sim/inSeedOrder.ts";
import { SeedClaims } from "../../src/sim/seedClaims.ts";
import { simulate } from "../../src/sim/simulate.ts";
import { simulateSeeds } from "../../src/sim/simulateSeeds.ts";
import chargesGraph from "../fixtures/simCharges.graph.ts";
import chargesHandlers from "../fixtures/simCharges.sim.ts";
import yourGraph from "../fixtures/simOwn.graph.ts";
import yourHandlers from "../fixtures/simOwn.sim.ts";
import { newRange } from "../fixtures/simOwnWhere.sim.ts";

const SMALL = { jobs: 5, workers: 2 };
const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
/** A graph of your own and its handlers, as module paths. */
const YOURS = { graph: fixture("simOwn.graph.ts"), handlers: fixture("simOwn.sim.ts") };
/**
 * Your graph with handlers whose merge names its thread, and which make a helper take a seed:
 * the calling thread's first merge waits for a helper's (call `newRange()` before each range).
 */
const WHERE = { graph: YOURS.graph, handlers: fixture("simOwnWhere.sim.ts") };

// The mark a helper's merge of WHERE leaves, removed: a test process need not end by exiting.
afterAll(newRange);

/** Which thread ran a seed of WHERE, as its merge says. */
const threadOf = (r: Awaited<ReturnType<typeof simulate>>) =>
  [...r.outcomes.values()].find((o) => o.kind === "merge")?.value;

async function collect(iterable: AsyncIterable<Awaited<ReturnType<typeof simulate>>>) {
  const out = [];
  for await (const result of iterable) out.push(result);
  return out;
}

/** Hands `seed` alone to a fresh helper thread and returns its answer; the thread is stopped after. */
async function askHelper(seed: number, simulation: object): Promise<SeedThreadMessage> {
  const seeds = new SeedClaims(seed, seed);
  const helper = startSeedThread({ simulation, checkDeterminism: false, traces: true }, seeds);
  try {
    return await new Promise<SeedThreadMessage>((resolve, reject) => {
      helper.once("message", resolve);
      helper.once("error", reject);
    });
  } finally {
    await helper.terminate();
  }
}

describe("a seed helper thread", () => {
  it("answers a seed with the result simulate gives on this thread", async () => {
    const answer = await askHelper(7, SMALL);
    const alone = await simulate({ seed: 7, ...SMALL });
    expect(answer.type).toBe("result");
    const { result } = answer as Extract<SeedThreadMessage, { type: "result" }>;
    expect(result.traceHash).toBe(alone.traceHash);
    expect(result.trace).toEqual(alone.trace);
  });

  it("answers a handlers module that cannot run the graph with the ConfigError's code", async () => {
    const lacking = { ...YOURS, handlers: fixture("simOwnLacking.sim.ts") };
    const answer = await askHelper(1, { modules: lacking });
    expect(answer).toMatchObject({ type: "error", seed: 1, code: "CONFIG" });
    expect(answer.type === "error" && answer.message).toMatch(
      `your graph has jobs of kind merge, which the modules.handlers module ${lacking.handlers} does not define`,
    );
  });

  it("tells a ctx.need of a kind the modules.handlers module lacks to add it there", async () => {
    const needs = { ...YOURS, handlers: fixture("simOwnNeedsLacking.sim.ts") };
    const [result] = await collect(simulateSeeds(1, 1, { modules: needs }, { threads: 1 }));
    expect(result!.failed.map((f) => f.message)).toEqual([
      `Unknown job kind "score" (1 job). Add a handler for it to the modules.handlers module ${needs.handlers}, or fix the kind. The modules.handlers module ${needs.handlers} defines "fetch", "merge".`,
    ]);
  });

  it("answers a simulation that crashed with the seed and the error", async () => {
    const answer = await askHelper(3, { ...SMALL, faults: "apocalyptic" });
    expect(answer).toMatchObject({
      type: "error",
      seed: 3,
      message: expect.stringMatching(
        /faults must be one of none, default, heavy or a list of faults, not "apocalyptic"/,
      ),
    });
  });
});

describe("simulateSeeds", () => {
  it("yields every seed in order, each with the trace it gives alone on this thread, from 3 helper threads", async () => {
    // No seed on the calling thread: a short range would end there before a helper loaded.
    const results = await collect(
      simulateSeeds(1, 12, SMALL, { threads: 3, callingThread: false, traces: true }),
    );
    expect(results.map((r) => r.seed)).toEqual([...Array(12).keys()].map((i) => i + 1));
    for (const r of results) {
      const alone = await simulate({ seed: r.seed, ...SMALL });
      expect(r.ok).toBe(true);
      expect(r.traceHash).toBe(alone.traceHash);
      expect(r.trace).toEqual(alone.trace);
    }
  });

  it("runs a graph of your own given as module paths, imported on each helper thread, as simulate runs it here", async () => {
    const results = await collect(
      simulateSeeds(
        1,
        4,
        { workers: 2, modules: YOURS },
        { threads: 2, callingThread: false, traces: true },
      ),
    );
    expect(results.map((r) => r.seed)).toEqual([1, 2, 3, 4]);
    for (const r of results) {
      const alone = await simulate({
        seed: r.seed,
        workers: 2,
        graph: yourGraph,
        handlers: yourHandlers,
      });
      expect(r.traceHash).toBe(alone.traceHash);
      expect(r.jobs).toBe(5);
    }
  });

  it("gives each seed of your graph the world tools.keep makes anew, so it traces as alone", async () => {
    const charges = {
      graph: fixture("simCharges.graph.ts"),
      handlers: fixture("simCharges.sim.ts"),
    };
    const simulation = { workers: 2, faults: "heavy" as const, ranks: false };
    const results = await collect(
      simulateSeeds(1, 6, { ...simulation, modules: charges }, { threads: 1, traces: true }),
    );
    for (const r of results) {
      const alone = await simulate({
        ...simulation,
        seed: r.seed,
        graph: chargesGraph,
        handlers: chargesHandlers,
      });
      expect(r.traceHash).toBe(alone.traceHash);
    }
  });

  it("says, when your handlers' two runs of a seed differ, that module state outlives the seed", async () => {
    const leaky = {
      graph: fixture("simCharges.graph.ts"),
      handlers: fixture("simChargesLeaky.sim.ts"),
    };
    const [result] = await collect(
      simulateSeeds(
        1,
        1,
        { modules: leaky, faults: "none", ranks: false },
        { checkDeterminism: true },
      ),
    );
    expect(result!.violation).toMatchObject({ invariant: 0, tracesDiffer: true });
    expect(result!.violation?.message).toMatch(/second: .*result [0-9a-f]+ failed/);
    expect(result!.violation?.message).toContain("keep it with the tools' keep");
  });

  it("fails, on every thread, a seed whose handler reads the real clock, each thread trapping its own", async () => {
    const stamps = {
      workers: 2,
      modules: { ...YOURS, handlers: fixture("simOwnStamps.sim.ts") },
      ranks: false,
    };
    const now = Date.now;
    const trapped =
      /\(fetch\) called Date\.now\(\) \(at .*simOwnStamps\.sim\.ts:10:\d+\), which reads the real clock/;
    const [here] = await collect(
      simulateSeeds(1, 1, stamps, { threads: 1, checkDeterminism: true }),
    );
    expect(here?.violation?.message).toMatch(trapped);
    // One run shows it: it is shrunk and replayed as any other failure, checked or not.
    expect(here?.violation).not.toHaveProperty("tracesDiffer");
    expect(await askHelper(2, stamps)).toMatchObject({
      type: "result",
      result: { violation: { message: expect.stringMatching(trapped) } },
    });
    expect(Date.now).toBe(now);
  });

  it("takes your modules as file: URLs, as a test names them beside itself", async () => {
    const beside = (name: string) => new URL(`../fixtures/${name}`, import.meta.url).href;
    const modules = { graph: beside("simOwn.graph.ts"), handlers: beside("simOwn.sim.ts") };
    const results = await collect(simulateSeeds(1, 2, { workers: 2, modules }, { threads: 2 }));
    const byPath = await collect(
      simulateSeeds(1, 2, { workers: 2, modules: YOURS }, { threads: 2 }),
    );
    expect(results.map((r) => r.traceHash)).toEqual(byPath.map((r) => r.traceHash));
  });

  it("ends with a ConfigError when your handlers cannot run your graph, on any thread", async () => {
    const lacking = { ...YOURS, handlers: fixture("simOwnLacking.sim.ts") };
    const run = collect(simulateSeeds(1, 4, { modules: lacking }, { threads: 2 }));
    await expect(run).rejects.toThrow(ConfigError);
  });

  it("keeps only a failed seed's trace unless traces are asked for", async () => {
    const drawn = { jobs: 6, workers: 4, plantedBugs: ["lease-running-job" as const] };
    const results = await collect(simulateSeeds(3, 5, drawn, { threads: 2, callingThread: false }));
    const failed = results.find((r) => r.seed === 4)!;
    expect(failed.ok).toBe(false);
    expect(failed.violation!.invariant).toBe(1);
    expect(failed.trace.length).toBeGreaterThan(0);
    for (const r of results.filter((r) => r.ok)) expect(r.trace).toEqual([]);
  });

  it("checks determinism when asked, on helper threads too", async () => {
    const results = await collect(
      simulateSeeds(1, 4, SMALL, { threads: 2, callingThread: false, checkDeterminism: true }),
    );
    expect(results.every((r) => r.ok)).toBe(true);
  });

  it("ends with the seed and the message of a simulation that crashed", async () => {
    // Options are checked at the call; a plan changed after it is what each seed then meets.
    const faults: Fault[] = [];
    const seeds = simulateSeeds(1, 6, { ...SMALL, faults }, { threads: 2 });
    faults.push({ kind: "apocalypse" } as unknown as Fault);
    await expect(collect(seeds)).rejects.toThrow(
      /^seed \d: the simulation crashed: simulate: faults\[0\] has an unknown kind "apocalypse"|^simulate: faults\[0\] has an unknown kind "apocalypse"/,
    );
  });

  it("reports each seed as it ends, on whichever thread, before it is yielded", async () => {
    const ended: number[] = [];
    const yielded: number[] = [];
    for await (const r of simulateSeeds(1, 6, SMALL, {
      threads: 2,
      onSeedEnded: (result) => ended.push(result.seed),
    })) {
      expect(ended).toContain(r.seed);
      yielded.push(r.seed);
    }
    expect(yielded).toEqual([1, 2, 3, 4, 5, 6]);
    expect([...ended].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("ends the iteration with what onSeedEnded throws, on a helper's seed too", async () => {
    // Seed 2 is the helper's: on this thread, seed 1's merge waits until a helper's has run.
    newRange();
    const run = collect(
      simulateSeeds(
        1,
        2,
        { modules: WHERE, faults: "none" },
        {
          threads: 2,
          onSeedEnded: (result) => {
            if (result.seed === 2) throw new Error("progress broke at seed 2");
          },
        },
      ),
    );
    await expect(run).rejects.toThrow("progress broke at seed 2");
  });

  it("ends with the first seed's error in seed order, whichever thread met its error first", async () => {
    const yielded: number[] = [];
    const run = (async () => {
      for await (const r of simulateSeeds(1, 8, SMALL, {
        threads: 2,
        // Seed 3 and every seed after it throw, on both threads; 1 and 2 pass.
        onSeedEnded: ({ seed }) => {
          if (seed >= 3) throw new Error(`progress broke at seed ${seed}`);
        },
      })) {
        yielded.push(r.seed);
      }
    })();
    await expect(run).rejects.toThrow(/^progress broke at seed 3$/);
    expect(yielded).toEqual([1, 2]);
  });

  it("yields the seeds this thread runs while a helper loads, from the first, without waiting for it", async () => {
    // The helper never finishes loading: one handed a seed at its start held that seed, and
    // the iteration waited for it, every later seed this thread ended unreported.
    const stuck = { ...YOURS, handlers: fixture("simOwnStuckOnHelpers.sim.ts") };
    const results = await collect(
      simulateSeeds(1, 4, { workers: 2, modules: stuck }, { threads: 2 }),
    );
    expect(results.map((r) => [r.seed, r.ok])).toEqual([
      [1, true],
      [2, true],
      [3, true],
      [4, true],
    ]);
  }, 20_000);

  it("runs the first seed on this thread, and helpers take later ones once loaded, each traced as on one thread", async () => {
    // On this thread the first merge waits until a helper's has run, so that a helper takes a seed.
    newRange();
    const simulation = { modules: WHERE, faults: "none" as const };
    const results = await collect(simulateSeeds(1, 8, simulation, { threads: 3, traces: true }));
    expect(results.map((r) => r.seed)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(threadOf(results[0]!)).toBe("the calling thread");
    expect(results.filter((r) => threadOf(r) === "a helper thread").length).toBeGreaterThan(0);
    for (const r of results) {
      const alone = await simulate({
        seed: r.seed,
        faults: "none",
        graph: yourGraph,
        handlers: yourHandlers,
      });
      expect(r.traceHash).toBe(alone.traceHash);
      expect(r.trace).toEqual(alone.trace);
    }
  });

  it("runs every seed on helper threads, and none on this one, with callingThread: false", async () => {
    newRange();
    const simulation = { modules: WHERE, faults: "none" as const };
    for (const threads of [1, 2]) {
      const results = await collect(
        simulateSeeds(1, 4, simulation, { threads, callingThread: false }),
      );
      expect(results.map((r) => [r.seed, threadOf(r)])).toEqual(
        [1, 2, 3, 4].map((seed) => [seed, "a helper thread"]),
      );
    }
  });

  it("stops its threads when the caller stops early", async () => {
    const started = performance.now();
    let seen = 0;
    for await (const _ of simulateSeeds(1, 10_000, SMALL, { threads: 2 })) {
      if (++seen === 3) break;
    }
    expect(seen).toBe(3);
    expect(performance.now() - started).toBeLessThan(30_000);
  });
});
