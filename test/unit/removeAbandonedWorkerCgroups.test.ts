/**
 * The cgroups a local pool leaves when its coordinator is killed with SIGKILL: the next pool
 * to start on the machine empties and removes them, once their coordinator's pid is gone (or
 * a zombie), and no other cgroup. On a simulated process table with cgroups and clock.
 */
import type { Logger } from "pino";
import { describe, expect, it, vi } from "vitest";
import { deploymentCgroupName } from "../../src/rank/deploymentCgroup.ts";
import { removeAbandonedWorkerCgroups } from "../../src/runtime/removeAbandonedWorkerCgroups.ts";
import { workerPoolCgroupName } from "../../src/runtime/workerPoolCgroup.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { settleOn } from "../fixtures/simGroup.ts";

/** Runs the removal on virtual time until it resolves. */
async function remove(procs: SimProcs, clock: SimClock, logger?: Logger) {
  const done = await settleOn(clock)(removeAbandonedWorkerCgroups(procs, clock, 2_000, logger));
  if (done instanceof Error) throw done;
  return done;
}

describe("removeAbandonedWorkerCgroups", () => {
  it("empties and removes the pools' cgroups of coordinators that are gone, and keeps the others", async () => {
    const clock = new SimClock();
    const procs = new SimProcs({ clock, cgroups: true });
    const containment = procs.containment!;
    /** A coordinator and its pool's cgroup, a worker in it, and the worker's detached child. */
    const coordinator = (options: { zombieMs?: number } = {}) => {
      const self = procs.start({ argv: ["node", "run.js"], newGroup: true, ...options });
      const pool = containment.create(workerPoolCgroupName("/store/logs/run-a", self.pid, 1));
      const worker = containment.create(`${pool.split("/").pop()}/local-1`);
      const handle = procs.start({
        argv: ["node", "baton", "worker"],
        newGroup: true,
        cgroup: worker,
      });
      const child = procs.start({
        ppid: handle.pid,
        argv: ["python"],
        newGroup: true,
        onTerm: "ignore",
      });
      return { self, pool, worker: handle, child };
    };
    const killed = coordinator();
    const zombie = coordinator({ zombieMs: 60_000 });
    const living = coordinator();
    // This process's own pool, and a deployment's cgroup with a rank in it.
    const own = containment.create(workerPoolCgroupName("/store/logs/run-b", procs.selfPid, 1));
    const deployment = containment.create(
      deploymentCgroupName({ deployment: "web", stateDir: "/s" }),
    );
    const rank = procs.start({ argv: ["python", "rank.py"], newGroup: true, cgroup: deployment });
    procs.signal(killed.self.pid, "SIGKILL");
    procs.signal(zombie.self.pid, "SIGKILL");
    await killed.self.exited;
    while (clock.nextDue() === 0) clock.fireNext();
    expect(procs.inspect(zombie.self.pid)?.state).toBe("zombie");
    const info = vi.fn();
    const logger = { info, warn: vi.fn(), debug: vi.fn() } as unknown as Logger;

    const removed = await remove(procs, clock, logger);

    expect(removed.sort((a, b) => a.coordinatorPid - b.coordinatorPid)).toEqual(
      [killed, zombie].map((gone) => ({
        cgroup: gone.pool,
        coordinatorPid: gone.self.pid,
        strays: [
          { pid: gone.worker.pid, program: "node", ended: "SIGTERM", escaped: true },
          { pid: gone.child.pid, program: "python", ended: "SIGKILL", escaped: true },
        ],
        removed: true,
      })),
    );
    for (const gone of [killed, zombie]) {
      expect(containment.members(gone.pool)).toBeUndefined();
      expect(procs.inspect(gone.child.pid)).toBeUndefined();
    }
    expect(containment.members(living.pool)?.sort()).toEqual(
      [living.worker.pid, living.child.pid].sort(),
    );
    expect(containment.members(own)).toEqual([]);
    expect(containment.members(deployment)).toEqual([rank.pid]);
    expect(info).toHaveBeenCalledWith(
      expect.objectContaining({ coordinatorPid: killed.self.pid, removed: true }),
      `the workers' cgroup of coordinator ${killed.self.pid}, which is gone, held 2 processes, stopped, and was removed`,
    );

    // Nothing of them is left for the next pool to find.
    expect(await remove(procs, clock)).toEqual([]);
  });
});
