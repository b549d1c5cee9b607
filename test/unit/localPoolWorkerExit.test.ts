/**
 * What the local pool reads when one of its workers exits, on a simulated process table with
 * cgroups: the worker's process group and cgroup are looked at once, for its exit line and as
 * the first look of the sweep that stops what it left.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startLocalPool, type WorkerStrays } from "../../src/runtime/localPool.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs, type SimProgramStart } from "../../src/sim/simProcs.ts";

const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs virtual time, and the promises it settles, until `done` settles. */
async function settle(clock: SimClock, done: Promise<unknown>): Promise<void> {
  let settled = false;
  void done.finally(() => {
    settled = true;
  });
  for (let i = 0; !settled; i++) {
    if (i > 1_000) throw new Error("did not settle on virtual time");
    await new Promise((resolve) => setImmediate(resolve));
    if (!settled) clock.fireNext();
  }
}

/**
 * A pool of one worker, `worker` (a simulated program that exits 0 5 ms in: dismissed, not
 * replaced), on a simulated table with cgroups; `contained` sees the table first.
 */
function oneWorker(worker: SimProgramStart, contained: (procs: SimProcs) => void = () => {}) {
  const clock = new SimClock();
  const procs = new SimProcs({
    clock,
    cgroups: true,
    programs: { "baton-worker": () => ({ exitAfterMs: 5, ...worker }) },
  });
  contained(procs);
  const dir = mkdtempSync(join(tmpdir(), "baton-pool-exit-"));
  dirs.push(dir);
  const pool = startLocalPool({
    maxWorkers: 1,
    logsDir: dir,
    argvFor: () => ["baton-worker"],
    procs,
    clock,
  });
  const [pid] = pool.pids();
  return { clock, procs, dir, pool, pid: pid! };
}

describe("the local pool when a worker exits", () => {
  it("reads the worker's cgroup once and probes its group once, for its exit line and its sweep", async () => {
    const reads: string[] = [];
    // A worker that leaves nothing: the usual exit.
    const {
      clock,
      procs,
      pool,
      pid: worker,
    } = oneWorker({}, ({ containment }) => {
      const members = containment!.members.bind(containment);
      containment!.members = (cgroup) => {
        reads.push(cgroup);
        return members(cgroup);
      };
    });
    const cgroup = procs.process(worker)!.cgroup!;
    await settle(clock, pool.stop());

    // Before, leftRunning read them for the exit line and emptyWorkerGroup again at once.
    expect(reads.filter((read) => read === cgroup)).toEqual([cgroup]);
    const probes = procs.signals.filter((s) => s.target === "group" && s.id === worker);
    expect(probes.map(({ signal, outcome }) => ({ signal, outcome }))).toEqual([
      { signal: 0, outcome: "ESRCH" },
    ]);
    // The sweep still ran: the worker's cgroup is removed, as after any worker's exit.
    expect(procs.containment!.list()).not.toContain(cgroup);
  });

  it("stops what that one look found the worker left, and says how each ended", async () => {
    // A worker whose handler's child runs on after the worker exits.
    const {
      clock,
      procs,
      dir,
      pool,
      pid: worker,
    } = oneWorker({ main: (self) => void self.fork({ argv: ["sleep", "100"] }) });
    const strays: WorkerStrays[] = [];
    pool.on("strays", (event) => strays.push(event));
    const child = procs.processes().find((p) => p.argv[0] === "sleep")!;
    await settle(clock, pool.stop());

    expect(strays).toEqual([
      expect.objectContaining({
        worker: "local-1",
        pid: worker,
        strays: [{ pid: child.pid, program: "sleep", ended: "SIGTERM", escaped: false }],
      }),
    ]);
    expect(readFileSync(join(dir, "worker-1.log"), "utf8")).toContain(
      `local-1 (pid ${worker}) exited with code 0 (a process it started still ran: ${child.pid} (sleep), stopped next;`,
    );
  });
});
