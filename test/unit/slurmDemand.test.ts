/** The demand a scaling pool (the Slurm pool) reads from the coordinator's board. */
import { describe, expect, it } from "vitest";
import type { PlannedJob, Resources } from "../../src/graph/job.ts";
import { demandGauge } from "../../src/machines/demand.ts";
import { JobBoard } from "../../src/machines/jobBoard.ts";

function planned(
  id: string,
  deps: string[] = [],
  requires: Resources = {},
  kind = "k",
): PlannedJob {
  return { id, kind, input: null, deps, requires, retries: 0 };
}

describe("demandGauge", () => {
  it("counts ready and running jobs, not blocked or finished ones", () => {
    const board = new JobBoard([planned("a"), planned("b"), planned("c", ["a", "b"])]);
    const demand = demandGauge(board);
    const offer = { cpus: 1 };
    expect(demand(offer)).toBe(2);
    board.lease("c1", "w1", offer);
    // One running, one ready: the busy worker is not spare capacity.
    expect(demand(offer)).toBe(2);
    board.result("c1", "a", { status: "completed", value: 1 });
    expect(demand(offer)).toBe(1);
    board.lease("c1", "w1", offer);
    board.result("c1", "b", { status: "completed", value: 2 });
    expect(demand(offer)).toBe(1);
    board.lease("c1", "w1", offer);
    board.result("c1", "c", { status: "completed", value: 3 });
    expect(demand(offer)).toBe(0);
  });

  it("counts only the jobs the offer can take", () => {
    const board = new JobBoard([
      planned("cpu"),
      planned("gpu", [], { gpus: 1 }),
      planned("big", [], { cpus: 8 }),
    ]);
    const demand = demandGauge(board);
    expect(demand({ cpus: 1 })).toBe(1);
    expect(demand({ cpus: 8, gpus: 1 })).toBe(3);
    expect(demand({ cpus: 1, gpus: 1 })).toBe(2);
  });

  it("counts no ready job while the store is full (no lease is granted), and counts them again once it has room", () => {
    const board = new JobBoard(
      [planned("a"), planned("b"), planned("c"), planned("g", [], { gpus: 1 })],
      {
        durable: true,
      },
    );
    const offer = { cpus: 1 };
    const wide = { cpus: 1, gpus: 1 };
    const demand = demandGauge(board);
    board.lease("c1", "w1", offer);
    board.lease("c2", "w2", offer);
    board.result("c1", "a", { status: "completed", value: 1 });
    board.storeFullFor("a");
    // b running on c2; c and g ready but not leased while the disk is full.
    expect(demand(offer)).toBe(1);
    expect(demand(wide)).toBe(1);
    board.stored("a");
    expect(demand(offer)).toBe(2);
    expect(demand(wide)).toBe(3);
  });

  it("sees jobs added while running (ctx.need)", () => {
    const board = new JobBoard([planned("a")]);
    const demand = demandGauge(board);
    const offer = { cpus: 1 };
    expect(demand(offer)).toBe(1);
    board.lease("c1", "w1", offer);
    board.result("c1", "a", {
      status: "blocked",
      needs: [planned("n1"), planned("n2", [], { gpus: 1 })],
    });
    // a waits on n1 and n2; only n1 fits a cpu-only offer.
    expect(demand(offer)).toBe(1);
    expect(demand({ cpus: 1, gpus: 1 })).toBe(2);
  });

  it("counts ready jobs of a throttled kind only up to what the throttle lets start", () => {
    const trains = ["t1", "t2", "t3", "t4"].map((id) => planned(id, [], {}, "train"));
    const board = new JobBoard(
      [...trains, planned("a"), planned("big", [], { cpus: 8 }, "train")],
      {
        throttle: { train: 2 },
      },
    );
    const demand = demandGauge(board, { train: 2 });
    const offer = { cpus: 1 };
    // 4 small trains ready (2 may start), and a: 3. The big train does not fit the offer.
    expect(demand(offer)).toBe(3);
    board.lease("c1", "w1", offer);
    board.lease("c2", "w2", offer);
    // Two trains running: none of the others may start until one ends; a is still ready.
    expect([...board.leases.values()].map((record) => record.job.id)).toEqual(["t1", "t2"]);
    expect(demand(offer)).toBe(3);
    // A big offer fits the big train too, but the throttle is full.
    expect(demand({ cpus: 8 })).toBe(3);
    expect(demandGauge(board)(offer)).toBe(5);
  });
});
