import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { createActor } from "xstate";
import type { StoreError } from "../../src/errors.ts";
import type { Json, PlannedJob } from "../../src/graph/job.ts";
import { coordinatorMachine } from "../../src/machines/coordinator.ts";
import {
  STORE_FULL_WAIT_MS,
  WRITES_IN_FLIGHT,
  writeResults,
} from "../../src/runtime/resultWriter.ts";
import type { StoreFullEvent } from "../../src/runtime/run.ts";
import { newerFormatError } from "../../src/runtime/storeFormat.ts";
import { userName } from "../../src/runtime/userName.ts";
import { SimClock } from "../../src/sim/simClock.ts";

const planned = (i: number): PlannedJob => ({
  id: `j${i}`,
  kind: "work",
  input: i,
  deps: [],
  requires: {},
  retries: 0,
});

/**
 * An error of the node Files port as a write through the temp file's handle throws it: Node's
 * message names no file, and the port gives it the path of the file it writes.
 */
const systemError = (code: string, text: string) =>
  Object.assign(new Error(`${code}: ${text}, write`), {
    code,
    syscall: "write",
    path: "/data/store/results/j0.json",
  });

/**
 * A coordinator with results written by `writeResults` to a store whose writes the test
 * ends; the writer's retries of a full store run on `clock`, and what it says is kept.
 */
function writing(jobs: number, waitMs = STORE_FULL_WAIT_MS, dir = "/data/store") {
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
  const clock = new SimClock();
  const said: StoreFullEvent[] = [];
  const gaveUp: StoreError[] = [];
  const logged: string[] = [];
  const log = { info: (_details: object, message: string) => logged.push(message) };
  writeResults(coordinator, { dir, put }, log, {
    clock,
    waitMs,
    said: (event) => said.push(event),
    giveUp: (error) => gaveUp.push(error),
  });
  coordinator.start();
  const board = () => coordinator.getSnapshot().context.board;
  /** Every job leased by a connection of its own and answered completed. */
  const answerAll = () => {
    for (let i = 0; i < jobs; i++) {
      coordinator.send({ type: "LEASE", conn: `c${i}`, worker: `w${i}`, resources: {} });
      const job = board().leases.get(`c${i}`)!.job.id;
      coordinator.send({
        type: "RESULT",
        conn: `c${i}`,
        job,
        outcome: { status: "completed", value: job },
      });
    }
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return {
    coordinator,
    board,
    pending,
    answerAll,
    settle,
    most: () => most,
    clock,
    said,
    gaveUp,
    logged,
  };
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
    w.pending[0]!.end(systemError("EIO", "i/o error"));
    await w.settle();
    const record = w.board().jobs.get("j0")!;
    expect(record.state).toBe("failed");
    expect(record.error).toEqual({
      name: "StoreError",
      message:
        "the result of job j0 (work) could not be stored in /data/store: cannot write /data/store/results/j0.json: i/o error (EIO); check that the store's disk has room and is writable",
    });
  });

  it("says a write refused in baton's words: which folder, whose, and the store's way out", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-result-writer-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const shard = join(dir, "results", "ab");
    mkdirSync(shard, { recursive: true, mode: 0o555 });
    const temp = join(shard, ".ab12.json.4711.0123456789ab.tmp");
    const w = writing(1, STORE_FULL_WAIT_MS, dir);
    w.answerAll();
    w.pending[0]!.end(
      Object.assign(new Error(`EACCES: permission denied, open '${temp}'`), {
        code: "EACCES",
        syscall: "open",
        path: temp,
      }),
    );
    await w.settle();
    expect(w.board().jobs.get("j0")!.error?.message).toBe(
      `the result of job j0 (work) could not be stored in ${dir}: cannot write ${join(shard, "ab12.json")}: permission denied: this user (${userName(process.getuid!())}) may not create anything in ${shard} (yours, mode 555); give the store (--store) another directory, one you can write to`,
    );
  });

  it("says a temp file gone before its rename of the result's own file, not as a folder that could not be made", async () => {
    const w = writing(1);
    w.answerAll();
    const temp = "/data/store/results/ab/.ab12.json.4711.0123456789ab.tmp";
    const text = `ENOENT: no such file or directory, rename '${temp}' -> '/data/store/results/ab/ab12.json'`;
    w.pending[0]!.end(
      Object.assign(new Error(text), { code: "ENOENT", syscall: "rename", path: temp }),
    );
    await w.settle();
    expect(w.board().jobs.get("j0")!.error?.message).toBe(
      "the result of job j0 (work) could not be stored in /data/store: cannot write /data/store/results/ab/ab12.json: the temp file beside it that it is written to first, or its folder, was removed before it was renamed into place (by another program, or a person, removing files in the store while this run stored there); baton run again computes and stores it",
    );
  });

  it.each(["ENOSPC", "EDQUOT"])(
    "holds a result the disk has no room for (%s), spending no attempt, and writes it once there is room",
    async (code) => {
      const w = writing(3);
      w.answerAll();
      w.pending.shift()!.end(systemError(code, "no room"));
      w.pending.shift()!.end(systemError(code, "no room"));
      await w.settle();
      expect(w.board().jobs.get("j0")).toMatchObject({ state: "storing", failures: 0 });
      expect(w.said).toEqual([
        {
          dir: "/data/store",
          full: true,
          message: expect.stringMatching(
            /^the result store \/data\/store has no room: .*\. No job's attempt is spent on it: .* stopping the run if there is no room within 5 min 00 s\. Free some space on that disk; the results stored so far are kept either way, and baton run again resumes from them$/,
          ),
        },
      ]);
      expect(w.said[0]!.message).toContain(
        code === "ENOSPC" ? "no space left on its disk" : "this user's disk quota is used up",
      );
      // No lease while the store is full: a connection that asks waits.
      w.coordinator.send({ type: "LEASE", conn: "c9", worker: "w9", resources: {} });
      expect([...w.board().waiting.keys()]).toEqual(["c9"]);
      // After 1 s the oldest held result is written again; no room yet: 2 s more.
      expect(w.clock.fireNext(999)).toBe(false);
      expect(w.clock.fireNext(1_000)).toBe(true);
      expect(w.pending.map((p) => p.job)).toEqual(["j2", "j0"]);
      w.pending.pop()!.end(systemError(code, "no room"));
      await w.settle();
      expect(w.clock.nextDue()).toBe(3_000);
      // j2's write goes through: room, and j0 and j1 are written; the store has room again
      // once they are.
      w.pending.shift()!.end();
      await w.settle();
      expect(w.clock.pending).toBe(0);
      expect(w.pending.map((p) => p.job).sort()).toEqual(["j0", "j1"]);
      w.pending.shift()!.end();
      await w.settle();
      expect(w.said.map((e) => e.full)).toEqual([true]);
      w.pending.shift()!.end();
      await w.settle();
      expect(w.said.map((e) => e.full)).toEqual([true, false]);
      expect(w.said[1]!.message).toBe(
        "the result store /data/store has room again after 1.0 s: the 2 results held are written, and the run goes on",
      );
      expect(w.board().counts()).toMatchObject({ completed: 3 });
      for (const record of w.board().jobs.values()) expect(record.failures).toBe(0);
      expect(w.gaveUp).toEqual([]);
      w.coordinator.stop();
    },
  );

  it("says a store that has a little room now and then has none once, and room again once it caught up, with how often room came and went", async () => {
    const w = writing(8);
    w.answerAll();
    /** Ends the write of `job` in flight: stored, or refused for want of room. */
    const end = async (job: string, room: boolean) => {
      const at = w.pending.findIndex((p) => p.job === job);
      expect(at, `a write of ${job} in flight`).toBeGreaterThanOrEqual(0);
      const [write] = w.pending.splice(at, 1);
      write!.end(room ? undefined : systemError("ENOSPC", "no room"));
      await w.settle();
    };
    await end("j0", false);
    // Room for j1, and j0 is written again at once; none for j2, nor for j0 again.
    await end("j1", true);
    await end("j2", false);
    await end("j0", false);
    await end("j3", true);
    await end("j2", false);
    await end("j0", false);
    expect(w.said.map((e) => e.full)).toEqual([true]);
    // A second later j2 is tried again and goes through, then j0: every held result is written.
    expect(w.clock.fireNext()).toBe(true);
    await end("j2", true);
    await end("j0", true);
    expect(w.said.map((e) => e.message)).toEqual([
      expect.stringMatching(
        /^the result store \/data\/store has no room: no space left on its disk\. No job's attempt is spent on it: /,
      ),
      "the result store /data/store has room again after 1.0 s (room came and went 2 times meanwhile): the 2 results held are written, and the run goes on",
    ]);
    // The disk fills again: a second time, said shortly, and room again once j4 is written.
    await end("j4", false);
    expect(w.said[2]).toEqual({
      dir: "/data/store",
      full: true,
      message:
        "the result store /data/store has no room again (2 times in this run): no space left on its disk. As before, the results it cannot write are held and no new job starts, stopping the run if there is no room within 5 min 00 s",
    });
    w.clock.fireNext();
    await end("j4", true);
    expect(w.said[3]!.message).toBe(
      "the result store /data/store has room again after 1.0 s: the 1 result held is written, and the run goes on",
    );
    for (const job of ["j5", "j6", "j7"]) await end(job, true);
    expect(w.said).toHaveLength(4);
    expect(w.logged).toEqual([
      "the result store has no room",
      "the result store has room again",
      "the result store has no room",
      "the result store has room again",
    ]);
    expect(w.board().counts()).toMatchObject({ completed: 8 });
    for (const record of w.board().jobs.values()) expect(record.failures).toBe(0);
    expect(w.gaveUp).toEqual([]);
  });

  it("gives up on a store that has no room for the whole wait, with a STORE_FULL error", async () => {
    const w = writing(2, 60_000);
    w.answerAll();
    w.pending.shift()!.end(systemError("ENOSPC", "no room"));
    w.pending.shift()!.end();
    await w.settle();
    // j1 was stored while j0 waited: that was room, so j0 is written again at once.
    expect(w.pending.map((p) => p.job)).toEqual(["j0"]);
    w.pending.shift()!.end(systemError("ENOSPC", "no room"));
    await w.settle();
    let tries = 0;
    while (w.clock.fireNext()) {
      await w.settle();
      for (const p of w.pending.splice(0)) {
        tries++;
        p.end(systemError("ENOSPC", "no room"));
      }
      await w.settle();
    }
    // 1 + 2 + 4 + 8 + 16 + 29 (the rest of the minute) s: 5 tries, then it gives up.
    expect(tries).toBe(5);
    expect(w.clock.now()).toBe(60_000);
    expect(w.gaveUp).toHaveLength(1);
    expect(w.gaveUp[0]).toMatchObject({ code: "STORE_FULL", dir: "/data/store" });
    expect(w.gaveUp[0]!.message).toBe(
      "the result store /data/store had no room for 1 min 00 s, so the run stopped: the 1 result it could not write and the jobs running then are not kept; the results stored before (1 during this run) are. Free some space on that disk, or give --store a directory on another disk, and baton run again resumes from them",
    );
    expect(w.board().jobs.get("j0")).toMatchObject({ state: "storing", failures: 0 });
    w.coordinator.stop();
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
