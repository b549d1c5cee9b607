import { describe, expect, it } from "vitest";
import { workerExitLines } from "../../src/cli/workerExitLines.ts";
import type { ProcExit } from "../../src/runtime/ports.ts";
import type { JobOutcome, WorkerLoss } from "../../src/runtime/run.ts";
import { lostOutcome } from "../fixtures/lostOutcome.ts";

/** A link that broke as the worker's process ended so. */
function broke(exit?: ProcExit): WorkerLoss {
  return { code: 1006, reason: "", ...(exit !== undefined && { exit }) };
}
const CODE_1: ProcExit = { code: 1, signal: null };
const KILLED: ProcExit = { code: null, signal: "SIGKILL" };

describe("workerExitLines", () => {
  it("names the workers whose process ended, with the job and what usually ends one so", () => {
    expect(
      workerExitLines([
        lostOutcome(
          "a1",
          ["local-1", broke(CODE_1)],
          ["local-2", broke(KILLED)],
          ["local-1.2", broke(CODE_1)],
        ),
        lostOutcome("b2", ["local-3", broke({ code: 5, signal: null })]),
        lostOutcome(
          "c3",
          ["local-4", broke({ code: 7, signal: null })],
          ["local-5", broke({ code: null, signal: "SIGSEGV" })],
        ),
      ]),
    ).toEqual([
      "local-1 and local-1.2 exited with code 1 while running k a1: did the job's handler call process.exit(1), or throw where nothing catches it (a timer, an event handler)?",
      "local-2 was killed by SIGKILL while running k a1: out of memory? The kernel's OOM killer sends SIGKILL (`dmesg` names what it killed), as does `kill -9`.",
      "local-3 exited with code 5 while running k b2: the job's handler called process.exit(0)?",
      "local-4 exited with code 7 while running k c3: did the job's handler, or a library it calls, call process.exit(7)?",
      "local-5 was killed by SIGSEGV while running k c3: something sent it SIGSEGV, or it crashed in native code.",
    ]);
  });

  it("of a job failed as poison, whose failure line names its workers, says only how many and why", () => {
    const poison = lostOutcome(
      "a1",
      ["local-1", broke(KILLED)],
      ["local-2", broke(KILLED)],
      ["local-1.2", broke(CODE_1)],
    );
    expect(workerExitLines([{ ...poison, cause: "poison" } as JobOutcome])).toEqual([
      "k a1: 2 of its workers were killed by SIGKILL: out of memory? The kernel's OOM killer sends SIGKILL (`dmesg` names what it killed), as does `kill -9`.",
      "k a1: its worker exited with code 1: did the job's handler call process.exit(1), or throw where nothing catches it (a timer, an event handler)?",
    ]);
    expect(workerExitLines([poison])[0]).toMatch(/^local-1 and local-2 were killed by SIGKILL /);
  });

  it("says nothing of an exit the pool did not see, nor of one a close caused", () => {
    expect(
      workerExitLines([
        // A slurmPool's or hand-started worker: its pool knows no exit.
        lostOutcome("a1", ["w1", broke()]),
        // Its lease expired (the worker then exits 3), or it left on purpose (SIGTERM: 143).
        lostOutcome("b2", ["local-1", { code: 4005, reason: "", exit: { code: 3, signal: null } }]),
        lostOutcome("c3", [
          "local-2",
          { code: 1001, reason: "", exit: { code: 143, signal: null } },
        ]),
      ]),
    ).toEqual([]);
  });

  it("gives 10 lines, then how many more", () => {
    const many = Array.from({ length: 12 }, (_, i) =>
      lostOutcome(`j${i}`, [`local-${i}`, broke(CODE_1)]),
    );
    const lines = workerExitLines(many);
    expect(lines).toHaveLength(11);
    expect(lines[9]).toMatch(/^local-9 exited with code 1 while running k j9:/);
    expect(lines[10]).toBe("… and 2 more (use --json for all)");
  });
});
