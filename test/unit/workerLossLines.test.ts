import { describe, expect, it } from "vitest";
import { workerLossLines } from "../../src/cli/workerLossLines.ts";
import type { WorkerClose } from "../../src/machines/workerClose.ts";
import type { JobOutcome } from "../../src/runtime/run.ts";
import { lostOutcome } from "../fixtures/lostOutcome.ts";

const BROKE: WorkerClose = { code: 1006, reason: "" };
const SILENT: WorkerClose = { code: 4005, reason: "no heartbeat for 20000 ms" };
const SIGTERM: WorkerClose = { code: 1001, reason: "worker local-2 stopping (SIGTERM)" };
const MODULE_CHANGED: WorkerClose = {
  code: 1001,
  reason: "worker local-5 leaving: its job module changed on disk",
};

/** An outcome that lost `losses` workers, each with how its connection ended. */
function outcome(...losses: [string, WorkerClose][]): JobOutcome {
  return lostOutcome("0".repeat(16), ...losses);
}

describe("workerLossLines", () => {
  it("names how each worker was lost, and no line when none was", () => {
    expect(workerLossLines([outcome(), outcome()])).toEqual([]);
    expect(workerLossLines([outcome(["local-1", BROKE])])).toEqual([
      "1 worker lost while running a job: local-1 (connection broke)",
    ]);
    expect(
      workerLossLines([
        outcome(["local-1", BROKE], ["local-3", SILENT]),
        outcome(["local-1", SILENT], ["local-3", SILENT]),
        outcome(["w", { code: 4100, reason: "" }]),
      ]),
    ).toEqual([
      "3 workers lost while running a job: local-1 (connection broke, lease expired), local-3 (lease expired), w (close code 4100)",
    ]);
  });

  it("leaves a worker whose process's end its pool saw to workerExitLines", () => {
    const exited = { ...BROKE, exit: { code: 1, signal: null } };
    expect(workerLossLines([outcome(["local-1", exited], ["local-3", SILENT])])).toEqual([
      "1 worker lost while running a job: local-3 (lease expired)",
    ]);
  });

  it("tells the workers that left on purpose (1001) from those lost", () => {
    expect(
      workerLossLines([
        outcome(["local-2", SIGTERM], ["local-1", BROKE]),
        outcome(["local-5", MODULE_CHANGED], ["local-2", SIGTERM]),
      ]),
    ).toEqual([
      "1 worker lost while running a job: local-1 (connection broke)",
      "2 workers left on purpose while running a job: local-2, local-5",
    ]);
    expect(workerLossLines([outcome(["local-2", SIGTERM])])).toEqual([
      "1 worker left on purpose while running a job: local-2",
    ]);
  });
});
