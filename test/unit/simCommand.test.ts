/**
 * `baton sim`'s failure report, in process: what failed and the replay command are printed
 * before shrinking starts (it may take a minute), so a Ctrl-C while it shrinks keeps them.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Shrunk } from "../../src/sim/shrink.ts";

const shrinking = vi.hoisted(() => ({ finish: undefined as ((s: Shrunk) => void) | undefined }));
vi.mock("../../src/sim/shrink.ts", () => ({
  shrink: () => new Promise<Shrunk>((resolve) => (shrinking.finish = resolve)),
}));

const { simCommand } = await import("../../src/cli/simCommand.ts");

afterEach(() => vi.restoreAllMocks());

describe("baton sim's failure report", () => {
  it("prints the failure and the replay command before shrinking, the reproducer after", async () => {
    let out = "";
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      out += String(chunk);
      return true;
    });
    const exit = simCommand([
      ...["--seed", "4", "--jobs", "6", "--workers", "4", "--world", "0"],
      ...["--plant", "lease-running-job"],
    ]);
    await vi.waitFor(() => expect(shrinking.finish).toBeDefined(), { timeout: 10_000 });
    expect(out).toMatch(/^seed 4: FAIL invariant 1 /m);
    expect(out).toMatch(/^replay: baton sim --seed 4 --jobs 6 --workers 4 .* --trace$/m);
    expect(out).not.toContain("smallest reproducer");

    const failed = { jobs: 2, workers: 1, faults: [], tries: 7 } as unknown as Shrunk;
    shrinking.finish!(failed);
    expect(await exit).toBe(1);
    expect(out).toMatch(
      /\nsmallest reproducer \(7 simulations\): baton sim --seed 4 --jobs 2 --workers 1 --faults none --world 0 --plant lease-running-job --trace\n$/,
    );
  });
});
