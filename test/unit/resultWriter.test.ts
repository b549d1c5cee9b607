import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { createActor } from "xstate";
import type { Json, PlannedJob } from "../../src/graph/job.ts";
import { coordinatorMachine } from "../../src/machines/coordinator.ts";
import { WRITES_IN_FLIGHT, writeResults } from "../../src/runtime/resultWriter.ts";
import { newerFormatError } from "../../src/runtime/storeFormat.ts";

const planned = (i: number): PlannedJob => ({
  id: `j${i}`,
  kind: "work",
  input: i,
  deps: [],
  requires: {},
  retries: 0,
});

/** A coordinator with results written by `writeResults` to a store whose writes the test ends. */
function writing(jobs: number) {
  const coordinator = createActor(coordinatorMachine, {
    input: { jobs: Array.from({ length: jobs }, (_, i) => planned(i)), durable: true },
  });
  const pending: { job: string; value: Json; end: (error?: Error) => void }[] = [];
  let inFlight = 0;
  let most = 0;
  const put = (job: string, _kind: string, value: Json) =>
    new Promise<void>((resolve, reject) => {
      most = Math.max(most, ++inFlight);
      pending.push({
        job,
        value,
        end: (error) => {
          inFlight--;
          if (error) reject(error);
          else resolve();
        },
      });
    });
  writeResults(coordinator, { dir: "/data/store", put }, pino({ level: "silent" }));
  coordinator.start();
  const board = () => coordinator.getSnapshot().context.board;
  /** Every job leased by a connection of its own and answered completed. */
  const answerAll = () => {
    for (let i = 0; i < jobs; i++) {
      coordinator.send({ type: "LEASE", conn: `c${i}`, worker: `w${i}`, resources: {} });
      const job = board().leases.get(`c${i}`)!;
      coordinator.send({
        type: "RESULT",
        conn: `c${i}`,
        job,
        outcome: { status: "completed", value: job },
      });
    }
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { coordinator, board, pending, answerAll, settle, most: () => most };
}

describe("writeResults", () => {
  it(`writes at most ${WRITES_IN_FLIGHT} results at once, the rest in order as writes end`, async () => {
    const w = writing(100);
    w.answerAll();
    expect(w.board().counts()).toMatchObject({ storing: 100, running: 0 });
    expect(w.pending.map((p) => p.job)).toEqual(
      Array.from({ length: WRITES_IN_FLIGHT }, (_, i) => `j${i}`),
    );
    while (w.board().counts().completed < 100) {
      w.pending.shift()!.end();
      await w.settle();
    }
    expect(w.most()).toBe(WRITES_IN_FLIGHT);
    expect(w.coordinator.getSnapshot().value).toBe("done");
    expect(w.board().jobs.get("j99")?.value).toBe("j99");
    w.coordinator.stop();
  });

  it("tells the coordinator a write failed, naming the job, the store and what to check", async () => {
    const w = writing(1);
    w.answerAll();
    w.pending[0]!.end(new Error("ENOSPC: no space left on device"));
    await w.settle();
    const record = w.board().jobs.get("j0")!;
    expect(record.state).toBe("failed");
    expect(record.error).toEqual({
      name: "StoreError",
      message:
        "the result of job j0 (work) could not be stored in /data/store: ENOSPC: no space left on device; check that the store's disk has room and is writable",
    });
  });

  it("passes a StoreError's own advice on, without the advice about the disk", async () => {
    const w = writing(1);
    w.answerAll();
    w.pending[0]!.end(newerFormatError("/data/store", "/data/store/results/j0.json", 2));
    await w.settle();
    expect(w.board().jobs.get("j0")!.error?.message).toMatch(
      /^the result of job j0 \(work\) could not be stored in \/data\/store: the result store \/data\/store was written by a newer baton: .* or none \(--no-store\)$/,
    );
  });

  it("tells a stopped coordinator nothing (a write that ends after a shutdown)", async () => {
    const w = writing(1);
    w.answerAll();
    w.coordinator.stop();
    const warn = vi.spyOn(console, "warn");
    try {
      w.pending[0]!.end();
      await w.settle();
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
});
