import { describe, expect, it } from "vitest";
import { POISON_LOGS_ADVICE } from "../../src/machines/jobBoard.ts";
import { poisonExits } from "../../src/runtime/poisonExits.ts";
import type { WorkerLoss } from "../../src/runtime/run.ts";

const MESSAGE = `job a (work) was running on 3 workers that were lost (…); it is failed as poison so it cannot take down more workers. ${POISON_LOGS_ADVICE} All 3 stopped answering …`;
const broke = (exit?: WorkerLoss["exit"]): WorkerLoss => ({
  code: 1006,
  reason: "",
  ...(exit && { exit }),
});
const poison = (lostWorkers: string[], lostWhy: WorkerLoss[]) => ({
  cause: "poison" as const,
  lostWorkers,
  lostWhy,
});

describe("poisonExits", () => {
  it("says how the lost workers' processes ended where the pool knows, in place of pointing to their logs", () => {
    const one = { code: 1, signal: null };
    const killed = { code: null, signal: "SIGKILL" as const };
    expect(
      poisonExits(
        MESSAGE,
        poison(["local-1", "local-1.2", "local-1.3"], [broke(one), broke(one), broke(killed)]),
      ),
    ).toBe(
      "job a (work) was running on 3 workers that were lost (…); it is failed as poison so it cannot take down more workers. How their processes ended: local-1 exited with code 1, local-1.2 exited with code 1, local-1.3 was killed by SIGKILL. All 3 stopped answering …",
    );
  });

  it("names each worker once when every one's exit is known: not in the board's list as well", () => {
    const message = `job a (work) was running on 2 workers that were lost (lost local-1 (connection broke), local-2 (connection broke)); it is failed as poison so it cannot take down more workers. ${POISON_LOGS_ADVICE}`;
    const one = { code: 1, signal: null };
    expect(poisonExits(message, poison(["local-1", "local-2"], [broke(one), broke(one)]))).toBe(
      "job a (work) was running on 2 workers that were lost; it is failed as poison so it cannot take down more workers. How their processes ended: local-1 exited with code 1, local-2 exited with code 1.",
    );
    // A worker whose exit is not known keeps the list: it says how that one was lost.
    expect(poisonExits(message, poison(["local-1", "local-2"], [broke(one), broke()]))).toContain(
      "(lost local-1 (connection broke), local-2 (connection broke))",
    );
  });

  it("still points to the logs of the workers whose exit is not known, and leaves out those that left on purpose", () => {
    const lease = { code: 4005, reason: "no heartbeat for 20000 ms" };
    const left = { code: 1001, reason: "" };
    expect(
      poisonExits(
        MESSAGE,
        poison(
          ["local-1", "node-7", "node-8", "node-9"],
          [broke({ code: 2, signal: null }), lease, broke(), left],
        ),
      ),
    ).toContain(
      "more workers. How their processes ended: local-1 exited with code 2; look at the logs of node-7, node-8 for how they died. All 3",
    );
  });

  it("leaves the message as it is when no exit is known, or the job did not fail as poison", () => {
    expect(poisonExits(MESSAGE, poison(["node-7"], [broke()]))).toBe(MESSAGE);
    const exited = [broke({ code: 1, signal: null })];
    expect(poisonExits("boom", { cause: "error", lostWorkers: ["local-1"], lostWhy: exited })).toBe(
      "boom",
    );
  });
});
