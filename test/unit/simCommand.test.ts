/**
 * `baton sim`'s failure report, in process: what failed and the replay command are printed
 * before shrinking starts (it may take a minute), so a Ctrl-C while it shrinks keeps them; a
 * seed that failed the determinism check is replayed with the check; every failure of a range
 * gets its replay command, `--json` lines stay JSON, the passes reach a stdout that is not the
 * terminal the progress line is on, and a Ctrl-C's command for the rest keeps the checks.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Shrunk } from "../../src/sim/shrink.ts";
import type { SimulationResult } from "../../src/sim/simulate.ts";
import type { SimulateSeedsOptions } from "../../src/sim/simulateSeeds.ts";
import { capturedOutput } from "../fixtures/capturedOutput.ts";

const fake = vi.hoisted(() => ({
  finishShrinking: undefined as ((s: Shrunk) => void) | undefined,
  /** What the seeds give instead of simulating, when set. */
  seeds: undefined as SimulationResult[] | AsyncIterable<SimulationResult> | undefined,
  /** The options the fake `simulateSeeds` was called with. */
  options: undefined as SimulateSeedsOptions | undefined,
}));
vi.mock("../../src/sim/shrink.ts", () => ({
  shrink: () => new Promise<Shrunk>((resolve) => (fake.finishShrinking = resolve)),
}));
vi.mock("../../src/sim/simulateSeeds.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/sim/simulateSeeds.ts")>();
  return {
    ...real,
    simulateSeeds: (...args: Parameters<typeof real.simulateSeeds>) => {
      if (fake.seeds === undefined) return real.simulateSeeds(...args);
      fake.options = args[3];
      return (async function* () {
        yield* fake.seeds!;
      })();
    },
  };
});
vi.mock("../../src/sim/inSeedOrder.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/sim/inSeedOrder.ts")>();
  return {
    ...real,
    // One seed runs on this thread: the first fake result stands for it.
    simulateSeed: async (...args: Parameters<typeof real.simulateSeed>) => {
      if (fake.seeds === undefined) return real.simulateSeed(...args);
      for await (const result of fake.seeds) return result;
      throw new Error("no fake result for the seed");
    },
  };
});

const { simCommand } = await import("../../src/cli/simCommand.ts");

/** A seed's result as `simulateSeeds` yields it: passed, or failed invariant 1. */
function seedResult(seed: number, ok: boolean): SimulationResult {
  return {
    ok,
    seed,
    jobs: 5,
    workers: 2,
    faults: [],
    plantedBugs: [],
    ...(!ok && { violation: { invariant: 1, message: `invariant 1 broken in seed ${seed}` } }),
    traceHash: "0123456789abcdef",
    trace: Array.from({ length: 40 }, (_, i) => `${i} event ${i} of seed ${seed}`),
    virtualMs: 10,
    wallMs: 1,
    steps: 1,
    ...NO_JOBS_ENDED,
  };
}

/** A seed's jobs when none has ended: its five are unfinished. */
const NO_JOBS_ENDED = {
  counts: { completed: 0, failed: 0, skipped: 0, cancelled: 0, cached: 0, unfinished: 5 },
  outcomes: new Map(),
  failed: [],
} satisfies Partial<SimulationResult>;

/** Makes `stream` a terminal (`isTTY`) or not, until the test ends. */
function terminal(stream: NodeJS.WriteStream, isTTY: boolean) {
  const had = Object.getOwnPropertyDescriptor(stream, "isTTY");
  Object.defineProperty(stream, "isTTY", { value: isTTY, configurable: true });
  restores.push(() => {
    if (had) Object.defineProperty(stream, "isTTY", had);
    else delete (stream as { isTTY?: boolean }).isTTY;
  });
}

const restores: (() => void)[] = [];

afterEach(() => {
  vi.restoreAllMocks();
  // Last made, first undone: a stream made a terminal twice gets back what it first had.
  for (const restore of restores.splice(0).reverse()) restore();
  fake.seeds = undefined;
  fake.options = undefined;
  fake.finishShrinking = undefined;
  // A failed seed sets it, as the command would exit with it on a closed stdout.
  process.exitCode = undefined;
});

/**
 * `process.exit` caught: `exitCode` resolves with the code it was called with; `ended` holds
 * a stand-in seed up until the test calls `end`.
 */
function interceptExit() {
  let exited: (code: number) => void = () => {};
  const exitCode = new Promise<number>((resolve) => (exited = resolve));
  vi.spyOn(process, "exit").mockImplementation((code) => {
    exited(Number(code));
    return undefined as never;
  });
  let end: () => void = () => {};
  const ended = new Promise<void>((resolve) => (end = resolve));
  return { exitCode, ended, end };
}

describe("baton sim's failure report", () => {
  it("prints the failure and the replay command before shrinking, the reproducer after", async () => {
    const out = capturedOutput();
    const exit = simCommand([
      ...["--seed", "4", "--jobs", "6", "--workers", "4", "--world", "0"],
      ...["--plant", "lease-running-job"],
    ]);
    await vi.waitFor(() => expect(fake.finishShrinking).toBeDefined(), { timeout: 10_000 });
    expect(out.text).toMatch(/^seed 4: FAIL invariant 1 /m);
    expect(out.text).toMatch(/^replay: baton sim --replay 4 --jobs 6 --workers 4 .* --trace$/m);
    expect(out.text).not.toContain("smallest reproducer");

    const failed = { jobs: 2, workers: 1, faults: [], tries: 7 } as unknown as Shrunk;
    fake.finishShrinking!(failed);
    expect(await exit).toBe(1);
    expect(out.text).toMatch(
      /\nsmallest reproducer \(7 simulations\): baton sim --replay 4 --jobs 2 --workers 1 --faults none --world 0 --plant lease-running-job --trace\n$/,
    );
  });

  it("replays with the printed command: the trace once, what failed, and no shrinking again", async () => {
    fake.seeds = [seedResult(4, false)];
    const out = capturedOutput();
    const exit = simCommand(["--replay", "4", "--jobs", "5", "--workers", "2", "--trace"]);
    await vi.waitFor(() => expect(out.text).toMatch(/^faults: none$/m));
    expect(fake.finishShrinking).toBeUndefined();
    expect(await exit).toBe(1);
    // The whole trace, once: it ends with the last events, which are not printed again.
    expect(out.text.split("\n").filter((line) => line.endsWith("event 39 of seed 4"))).toEqual([
      "39 event 39 of seed 4",
    ]);
    expect(out.text).toMatch(/^seed 4: FAIL invariant 1 /m);
    expect(out.text).toMatch(/^seed 4 failed: invariant 1 broken in seed 4$/m);
    expect(out.text).not.toContain("last 30 events");
    expect(out.text).not.toContain("replay:");
    // What to do next: watch it step by step.
    expect(out.text).toMatch(
      /\nstep through it in the dashboard: baton sim --replay 4 --jobs 5 --workers 2 --faults \S+ .*--ui\n$/,
    );
  });

  it("replays a seed whose traces differed with --check-determinism, which alone shows it", async () => {
    fake.seeds = [
      {
        ok: false,
        seed: 9,
        jobs: 5,
        workers: 2,
        faults: [],
        plantedBugs: [],
        violation: {
          invariant: 0,
          message: "not deterministic: the traces differ at line 3",
          tracesDiffer: true,
        },
        traceHash: "0123456789abcdef",
        trace: ["0 sim seed 9"],
        virtualMs: 10,
        wallMs: 1,
        steps: 1,
        ...NO_JOBS_ENDED,
      },
    ];
    const out = capturedOutput();
    const exit = await simCommand([
      ...["--seed", "9", "--jobs", "5", "--workers", "2", "--faults", "none"],
      "--check-determinism",
    ]);
    expect(exit).toBe(1);
    expect(out.text).toMatch(
      /^replay: baton sim --replay 9 --jobs 5 --workers 2 --faults none --check-determinism --trace$/m,
    );
    expect(fake.finishShrinking).toBeUndefined();
    // Each run passes alone, which is all shrinking could try: the report says so.
    expect(out.text).toMatch(
      /\nnot shrunk: each run of seed 9 alone passes, only the second run's trace differs\n$/,
    );
  });

  it("replays a seed whose traces differed without offering the dashboard, which shows one run", async () => {
    fake.seeds = [
      {
        ...seedResult(9, false),
        violation: { invariant: 0, message: "the traces differ at line 3", tracesDiffer: true },
      },
    ];
    const out = capturedOutput();
    const exit = await simCommand([
      ...["--replay", "9", "--jobs", "5", "--workers", "2", "--faults", "none"],
      "--check-determinism",
    ]);
    expect(exit).toBe(1);
    expect(out.text).not.toContain("--ui");
    expect(out.text).toMatch(
      /\nnot for the dashboard, which shows one run: each run of seed 9 alone passes, only the second run's trace differs\n$/,
    );
  });

  it("replays a seed that read the real clock without --check-determinism, even from a run with it, and shrinks it", async () => {
    const clockRead = {
      ...seedResult(9, false),
      violation: {
        invariant: 0 as const,
        message: "the handler of job a (stamp) called Date.now()",
      },
    };
    for (const checks of [[], ["--check-determinism"]]) {
      fake.seeds = [clockRead];
      fake.finishShrinking = undefined;
      const out = capturedOutput();
      const exit = simCommand([
        ...["--seed", "9", "--jobs", "5", "--workers", "2", "--faults", "default"],
        ...checks,
      ]);
      // A run fails it alone, so it is shrunk as any other failure is.
      await vi.waitFor(() => expect(fake.finishShrinking).toBeDefined());
      fake.finishShrinking!({ jobs: 1, workers: 1, faults: [], tries: 4 } as unknown as Shrunk);
      expect(await exit).toBe(1);
      expect(out.text).toMatch(
        /^replay: baton sim --replay 9 --jobs 5 --workers 2 --faults default --trace$/m,
      );
      expect(out.text).toMatch(
        /\nsmallest reproducer \(4 simulations\): baton sim --replay 9 --jobs 1 --workers 1 --faults none --trace\n$/,
      );
      expect(out.text).not.toContain("not shrunk");
      vi.restoreAllMocks();
    }
  });

  it("offers the dashboard on the replay of a seed that read the real clock, which one run shows", async () => {
    fake.seeds = [
      {
        ...seedResult(9, false),
        violation: { invariant: 0, message: "the handler of job a (stamp) called Date.now()" },
      },
    ];
    const out = capturedOutput();
    const exit = await simCommand(["--replay", "9", "--jobs", "5", "--workers", "2"]);
    expect(exit).toBe(1);
    expect(out.text).toMatch(
      /\nstep through it in the dashboard: baton sim --replay 9 --jobs 5 --workers 2 --faults default .*--ui\n$/,
    );
  });

  it("prints what broke and the replay command of every failure in a range, shrinking the first", async () => {
    fake.seeds = [seedResult(1, true), seedResult(2, false), seedResult(3, false)];
    const out = capturedOutput();
    const exit = simCommand(["--seeds", "1..3", "--jobs", "5", "--workers", "2"]);
    await vi.waitFor(() => expect(fake.finishShrinking).toBeDefined());
    fake.finishShrinking!({ jobs: 1, workers: 1, faults: [], tries: 3 } as unknown as Shrunk);
    expect(await exit).toBe(1);
    expect(out.text).toMatch(/^seed 2 failed: invariant 1 broken in seed 2$/m);
    expect(out.text).toMatch(/^last 30 events:$/m);
    expect(out.text).toMatch(/^seed 3 failed: invariant 1 broken in seed 3$/m);
    expect(out.text).toMatch(
      /^replay: baton sim --replay 3 --jobs 5 --workers 2 --faults default --trace$/m,
    );
    expect(out.text.match(/^smallest reproducer/gm)).toHaveLength(1);
  });

  it("prints one JSON object a line with --json --trace, a failure with its last events, replay and smallest reproducer, and the summary on stderr", async () => {
    fake.seeds = [seedResult(1, true), seedResult(2, false), seedResult(3, false)];
    const out = capturedOutput();
    const err = capturedOutput(process.stderr);
    const exited = simCommand([
      ...["--seeds", "1..3", "--jobs", "5", "--workers", "2"],
      ...["--json", "--trace"],
    ]);
    // The first failure is shrunk, as the text report's is; its line waits for the reproducer.
    await vi.waitFor(() => expect(fake.finishShrinking).toBeDefined(), { timeout: 10_000 });
    expect(out.text.trimEnd().split("\n")).toHaveLength(1);
    fake.finishShrinking!({ jobs: 2, workers: 1, faults: [], tries: 7 } as unknown as Shrunk);
    expect(await exited).toBe(1);
    // The range's summary, on stderr: stdout is the objects alone.
    expect(err.text).toMatch(
      /^3 seeds, 2 failed \(the first in seed 2\), in [\d.]+ s \([\d.]+ seeds\/s on \d+ threads?\)\n$/,
    );
    const lines = out.text
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ seed: 1, ok: true, trace: seedResult(1, true).trace });
    expect(lines[0]).not.toHaveProperty("replay");
    // A failed seed carries what a passed one does (counts, failed), and what broke.
    expect(lines[1]).toEqual({
      ...JSON.parse(JSON.stringify(lines[0])),
      seed: 2,
      ok: false,
      trace: seedResult(2, false).trace,
      violation: { invariant: 1, message: "invariant 1 broken in seed 2" },
      lastEvents: seedResult(2, false).trace.slice(-30),
      replay: "baton sim --replay 2 --jobs 5 --workers 2 --faults default --trace",
      smallest: {
        replay: "baton sim --replay 2 --jobs 2 --workers 1 --faults none --trace",
        jobs: 2,
        workers: 1,
        faults: "",
        tries: 7,
      },
    });
    expect(lines[1]).toMatchObject({ counts: { unfinished: 5 }, failed: [] });
    // Only the first failure is shrunk, as in the text report.
    expect(lines[2]).toMatchObject({ seed: 3, ok: false });
    expect(lines[2]).not.toHaveProperty("smallest");
  });

  it("says in --json how many of your jobs a failure follows, beside the 4 yourJobs lists", async () => {
    // Six jobs of your graph granted twice: the text's heading reads "(4 of 6)".
    const ids = [...Array(6).keys()].map((n) => `${n}`.repeat(16));
    const trace = ids.flatMap((id, n) =>
      [1, 2].map(
        (attempt) => `${n * 10 + attempt} grant ${id} (fetch ${n}) to sim:1 attempt ${attempt}`,
      ),
    );
    fake.seeds = [{ ...seedResult(3, false), trace }];
    const out = capturedOutput();
    const yours = ["test/fixtures/simOwn.graph.ts", "--handlers", "test/fixtures/simOwn.sim.ts"];
    expect(await simCommand([...yours, "--seed", "3", "--no-shrink", "--json"])).toBe(1);
    const { yourJobs, yourJobsOf } = JSON.parse(out.text);
    expect(yourJobs.map((job: { id: string }) => job.id)).toEqual(ids.slice(0, 4));
    expect(yourJobsOf).toBe(6);
  });

  it.each([
    [false, true],
    [true, false],
  ])(
    "with the progress line on stderr and stdout a terminal: %s, prints the passes: %s",
    async (stdoutTTY, passes) => {
      terminal(process.stderr, true);
      terminal(process.stdout, stdoutTTY);
      fake.seeds = [seedResult(1, true), seedResult(2, true)];
      const out = capturedOutput();
      const err = capturedOutput(process.stderr);
      expect(await simCommand(["--seeds", "1..2", "--jobs", "5", "--workers", "2"])).toBe(0);
      // Drawn before the first seed ends, which may take a minute.
      expect(err.text).toMatch(/^\r\x1b\[2Kseeds 1\.\.2 on \d threads?: 0\/2 done, 0 failed \(/);
      expect(out.text.includes("seed 1: pass")).toBe(passes);
      expect(out.text).toMatch(/^2 seeds, 0 failed, in /m);
    },
  );

  it("counts a range's seeds as they end on any thread, with an ETA, before the first is reported", async () => {
    terminal(process.stderr, true);
    terminal(process.stdout, true);
    let end: () => void = () => {};
    const ended = new Promise<void>((resolve) => (end = resolve));
    fake.seeds = (async function* () {
      // Seeds 2 and 3 end on a helper thread while seed 1 is still running here.
      fake.options!.onSeedEnded!(seedResult(2, true));
      fake.options!.onSeedEnded!(seedResult(3, false));
      await ended;
      fake.options!.onSeedEnded!(seedResult(1, true));
      yield* [1, 2, 3].map((seed) => seedResult(seed, seed !== 3));
    })();
    capturedOutput();
    const err = capturedOutput(process.stderr);
    const run = simCommand([
      ...["--seeds", "1..3", "--jobs", "5", "--workers", "2", "--threads", "2", "--no-shrink"],
    ]);
    await vi.waitFor(
      () =>
        expect(err.text).toMatch(
          /seeds 1\.\.3 on 2 threads: 2\/3 done, 1 failed, \d+\.\d seeds\/s, ETA \d/,
        ),
      { timeout: 5_000 },
    );
    end();
    expect(await run).toBe(1);
    expect(err.text).toContain("seeds 1..3 on 2 threads: 3/3 done, 1 failed (");
    expect(err.text.endsWith("\r\x1b[2K")).toBe(true);
  });

  it("draws one seed's progress, jobs ended and virtual time, on a terminal only", async () => {
    const args = ["--seed", "1", "--workers", "2", "--world", "0", "--faults", "none"];
    terminal(process.stderr, true);
    const out = capturedOutput();
    const err = capturedOutput(process.stderr);
    expect(await simCommand([...args, "--jobs", "400"])).toBe(0);
    expect(err.text).toMatch(/^\r\x1b\[2Kseed 1: 0\/400 jobs ended, 0 virtual ms \(0 s\)\r/);
    const drawn = [...err.text.matchAll(/seed 1: (\d+)\/(\d+) jobs ended, (\d+) virtual ms/g)];
    const last = drawn.at(-1)!;
    expect(Number(last[1])).toBeGreaterThan(0);
    expect(Number(last[3])).toBeGreaterThan(0);
    // Cleared before the verdict, which is printed as without a terminal.
    expect(err.text.endsWith("\r\x1b[2K")).toBe(true);
    expect(out.text).toMatch(/^seed 1: pass \(/);

    terminal(process.stderr, false);
    err.text = "";
    expect(await simCommand([...args, "--jobs", "5"])).toBe(0);
    expect(err.text).toBe("");
  });

  it("counts a graph of your own in one seed's progress line from its first drawing", async () => {
    terminal(process.stderr, true);
    capturedOutput();
    const err = capturedOutput(process.stderr);
    const yours = ["test/fixtures/simOwn.graph.ts", "--handlers", "test/fixtures/simOwn.sim.ts"];
    expect(await simCommand([...yours, "--seed", "1", "--workers", "2", "--world", "0"])).toBe(0);
    // It read 0/0 until the coordinator had planned the graph.
    expect(err.text).toMatch(/^\r\x1b\[2Kseed 1: 0\/5 jobs ended, 0 virtual ms \(0 s\)\r/);
  });

  it("--replay S --ui draws the seed's progress while it runs, before the dashboard opens", async () => {
    terminal(process.stderr, true);
    const out = capturedOutput();
    const err = capturedOutput(process.stderr);
    const run = simCommand([
      ...["--replay", "1", "--ui", "--jobs", "400", "--workers", "2", "--world", "0"],
      ...["--faults", "none"],
    ]);
    await vi.waitFor(() => expect(err.text).toContain("dashboard: http://"), { timeout: 30_000 });
    process.emit("SIGINT", "SIGINT");
    expect(await run).toBe(0);
    expect(err.text).toMatch(/^\r\x1b\[2Kseed 1: 0\/400 jobs ended, 0 virtual ms \(0 s\)\r/);
    // Cleared before the report, which is printed as without a terminal.
    expect(err.text).toMatch(/\r\x1b\[2Kseed 1: \d+ steps over \d+ virtual ms\n/);
    expect(out.text).toMatch(/^seed 1: pass \(/);
  });

  it("sets exit code 1 before writing a failure, so a reader that closes stdout (| head) does not make it 0", async () => {
    fake.seeds = [seedResult(1, true), seedResult(2, false)];
    const codes: (string | number | undefined)[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      if (/^seed \d: /.test(String(chunk))) codes.push(process.exitCode);
      return true;
    });
    expect(await simCommand(["--seeds", "1..2", "--jobs", "5", "--no-shrink"])).toBe(1);
    expect(codes).toEqual([undefined, 1]);
  });

  it.each([
    [["42"], "42 is no graph module: to simulate seed 42, give --seed 42"],
    [
      ["1..500", "--faults", "heavy"],
      "1..500 is no graph module: to simulate seeds 1..500, give --seeds 1..500",
    ],
    [
      ["--seeds", "7"],
      '--seeds must look like A..B, e.g. 1..1000, not "7"; for seed 7 alone, give --seed 7',
    ],
    [
      ["--seeds", "1-100"],
      '--seeds must look like A..B, e.g. 1..1000, not "1-100"; did you mean --seeds 1..100?',
    ],
    [["--seeds", "5:9"], '"5:9"; did you mean --seeds 5..9?'],
  ])(
    "takes %j for seeds, not a graph module, and says which flag gives them",
    async (args, message) => {
      await expect(simCommand(args)).rejects.toThrow(message);
    },
  );

  it("refuses --seed S --ui, naming --replay S: the dashboard is a replay's, not shrunk first", async () => {
    await expect(simCommand(["--seed", "7", "--ui"])).rejects.toThrow(
      "--ui opens the dashboard on a replay of one seed: give --replay 7 instead of --seed 7",
    );
  });

  it("on Ctrl-C while --replay S --ui runs the seed, stops as without --ui; after, it closes the dashboard", async () => {
    const { exitCode } = interceptExit();
    terminal(process.stderr, true);
    capturedOutput();
    const err = { text: "" };
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      err.text += String(chunk);
      // The first progress line: the seed has not run a step yet.
      if (String(chunk).includes("seed 1: 0/400 jobs ended, 0 virtual ms")) {
        queueMicrotask(() => process.emit("SIGINT", "SIGINT"));
      }
      return true;
    });
    const run = simCommand([
      ...["--replay", "1", "--ui", "--ui-port", "0", "--jobs", "400", "--workers", "2"],
      ...["--world", "0", "--faults", "none", "--trace"],
    ]);
    expect(await exitCode).toBe(130);
    expect(err.text).toMatch(
      /\r\x1b\[2Kbaton sim: SIGINT: stopped after 0 of 1 seed, 0 failed, before the dashboard opened; the rest: baton sim --replay 1 --jobs 400 --workers 2 --faults none --world 0 --trace --ui --ui-port 0\n/,
    );
    // process.exit was held: the seed ends and the dashboard opens, which a Ctrl-C now closes.
    await vi.waitFor(() => expect(err.text).toContain("dashboard: http://"), { timeout: 30_000 });
    err.text = "";
    process.emit("SIGINT", "SIGINT");
    expect(await run).toBe(0);
    expect(err.text).not.toContain("stopped");
  });

  it("on Ctrl-C, gives a command for the rest that checks and reports as this run did", async () => {
    const { exitCode, ended, end } = interceptExit();
    fake.seeds = (async function* () {
      yield seedResult(1, true);
      await ended;
    })();
    const out = capturedOutput();
    const err = capturedOutput(process.stderr);
    const run = simCommand([
      ...["--seeds", "1..9", "--jobs", "5", "--workers", "2", "--threads", "1"],
      ...["--check-determinism", "--no-shrink"],
    ]);
    await vi.waitFor(() => expect(out.text).toContain("seed 1: pass"));
    process.emit("SIGINT", "SIGINT");
    expect(await exitCode).toBe(130);
    end();
    await run;
    expect(err.text).toMatch(
      /^baton sim: SIGINT: stopped after 1 of 9 seeds, 0 failed, in [\d.]+ s \([\d.]+ seeds\/s on 1 thread\); the rest: baton sim --seeds 2\.\.9 --jobs 5 --workers 2 --faults default --check-determinism --no-shrink --threads 1\n$/,
    );
  });

  it("on Ctrl-C, names the later seeds that had ended on other threads, unreported, and those that failed", async () => {
    const { exitCode, ended, end } = interceptExit();
    fake.seeds = (async function* () {
      // Seed 1 still runs on a helper thread (it loads baton) while this one ends 2 and 3.
      fake.options!.onSeedEnded!(seedResult(2, true));
      fake.options!.onSeedEnded!(seedResult(3, false));
      await ended;
      yield seedResult(1, true);
    })();
    capturedOutput();
    const err = capturedOutput(process.stderr);
    const run = simCommand(["--seeds", "1..9", "--jobs", "5", "--workers", "2", "--threads", "2"]);
    await vi.waitFor(() => expect(fake.options).toBeDefined());
    process.emit("SIGINT", "SIGINT");
    expect(await exitCode).toBe(130);
    end();
    await run;
    expect(err.text).toBe(
      "baton sim: SIGINT: stopped after 0 of 9 seeds, 0 failed; 2 later seeds had ended, unreported while seed 1 ran (1 failed: seed 3); the rest (which runs them again): baton sim --seeds 1..9 --jobs 5 --workers 2 --faults default --threads 2\n",
    );
  });

  it("on Ctrl-C in one long seed, clears its progress line and gives the command that runs it again", async () => {
    const { exitCode, ended, end } = interceptExit();
    fake.seeds = (async function* () {
      await ended;
      yield seedResult(1, true);
    })();
    terminal(process.stderr, true);
    capturedOutput();
    const err = capturedOutput(process.stderr);
    const run = simCommand(["--seed", "1", "--jobs", "5000", "--workers", "2", "--no-shrink"]);
    await vi.waitFor(() => expect(err.text).toContain("seed 1: 0/5000 jobs ended"));
    err.text = "";
    process.emit("SIGINT", "SIGINT");
    expect(await exitCode).toBe(130);
    end();
    await run;
    expect(err.text).toMatch(
      /^(\r\x1b\[2K)+baton sim: SIGINT: stopped after 0 of 1 seed, 0 failed; the rest: baton sim --seed 1 --jobs 5000 --workers 2 --faults default --no-shrink\n/,
    );
  });
});
