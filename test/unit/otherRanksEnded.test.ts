import { describe, expect, it } from "vitest";
import { otherRanksEnded } from "../../src/rank/otherRanksEnded.ts";

const exited = (code: number) => ({ code, signal: null });
const killed = (signal: string) => ({ code: null, signal });

describe("otherRanksEnded", () => {
  it("says the other ranks were stopped when the teardown stopped each", () => {
    expect(otherRanksEnded([{ rank: 1, exit: killed("SIGTERM"), stopped: true }])).toBe(
      " The other rank was stopped.",
    );
    expect(
      otherRanksEnded([
        { rank: 0, exit: killed("SIGTERM"), stopped: true },
        { rank: 2, exit: exited(143), stopped: true },
      ]),
    ).toBe(" The other ranks were stopped.");
  });

  it("names a rank that exited on its own, failing at nearly the same moment, apart from those stopped", () => {
    expect(otherRanksEnded([{ rank: 1, exit: exited(127), stopped: false }])).toBe(
      " Rank 1 exited on its own too (code 127); no other rank was left to stop.",
    );
    expect(
      otherRanksEnded([
        { rank: 0, exit: exited(1), stopped: false },
        { rank: 1, exit: killed("SIGSEGV"), stopped: false },
        { rank: 2, exit: exited(1), stopped: false },
        { rank: 4, exit: killed("SIGTERM"), stopped: true },
        { rank: 5, exit: undefined, stopped: true },
      ]),
    ).toBe(
      " Ranks 0-2 exited on their own too (code 1, killed by SIGSEGV); ranks 4, 5 were stopped.",
    );
  });

  it("names a rank the teardown never signalled as gone on its own, though its exit is not learned yet", () => {
    expect(otherRanksEnded([{ rank: 1, exit: undefined, stopped: false }])).toBe(
      " Rank 1 exited on its own too; no other rank was left to stop.",
    );
  });
});
