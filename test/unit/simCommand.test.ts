/**
 * `baton sim`'s failure report, in process: what failed and the replay command are printed
 * before shrinking starts (it may take a minute), so a Ctrl-C while it shrinks keeps them; a
 * seed that failed the determinism check is replayed with the check.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Shrunk } from "../../src/sim/shrink.ts";
import type { SimulationResult } from "../../src/sim/simulate.ts";

const fake = vi.hoisted(() => ({
  finishShrinking: undefined as ((s: Shrunk) => void) | undefined,
  /** What the seeds give instead of simulating, when set. */
  seeds: undefined as SimulationResult[] | undefined,
}));
vi.mock("../../src/sim/shrink.ts", () => ({
  shrink: () => new Promise<Shrunk>((resolve) => (fake.finishShrinking = resolve)),
}));
vi.mock("../../src/sim/simulateSeeds.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/sim/simulateSeeds.ts")>();
  return {
    ...real,
    simulateSeeds: (...args: Parameters<typeof real.simulateSeeds>) =>
      fake.seeds === undefined
        ? real.simulateSeeds(...args)
        : (async function* () {
            yield* fake.seeds!;
          })(),
  };
});

const { simCommand } = await import("../../src/cli/simCommand.ts");

/** Everything `simCommand` writes to stdout from now on. */
function stdout() {
  const out = { text: "" };
  vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    out.text += String(chunk);
    return true;
  });
  return out;
}

afterEach(() => {
  vi.restoreAllMocks();
  fake.seeds = undefined;
  fake.finishShrinking = undefined;
});

describe("baton sim's failure report", () => {
  it("prints the failure and the replay command before shrinking, the reproducer after", async () => {
    const out = stdout();
    const exit = simCommand([
      ...["--seed", "4", "--jobs", "6", "--workers", "4", "--world", "0"],
      ...["--plant", "lease-running-job"],
    ]);
    await vi.waitFor(() => expect(fake.finishShrinking).toBeDefined(), { timeout: 10_000 });
    expect(out.text).toMatch(/^seed 4: FAIL invariant 1 /m);
    expect(out.text).toMatch(/^replay: baton sim --seed 4 --jobs 6 --workers 4 .* --trace$/m);
    expect(out.text).not.toContain("smallest reproducer");

    const failed = { jobs: 2, workers: 1, faults: [], tries: 7 } as unknown as Shrunk;
    fake.finishShrinking!(failed);
    expect(await exit).toBe(1);
    expect(out.text).toMatch(
      /\nsmallest reproducer \(7 simulations\): baton sim --seed 4 --jobs 2 --workers 1 --faults none --world 0 --plant lease-running-job --trace\n$/,
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
        violation: { invariant: 0, message: "not deterministic: the traces differ at line 3" },
        traceHash: "0123456789abcdef",
        trace: ["0 sim seed 9"],
        virtualMs: 10,
        wallMs: 1,
        steps: 1,
      },
    ];
    const out = stdout();
    const exit = await simCommand([
      ...["--seed", "9", "--jobs", "5", "--workers", "2", "--faults", "none"],
      "--check-determinism",
    ]);
    expect(exit).toBe(1);
    expect(out.text).toMatch(
      /^replay: baton sim --seed 9 --jobs 5 --workers 2 --faults none --check-determinism --trace$/m,
    );
    expect(fake.finishShrinking).toBeUndefined();
  });
});
