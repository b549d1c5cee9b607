import type { Logger } from "pino";
import { describe, expect, it, vi } from "vitest";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import type { Containment, Procs } from "../../src/runtime/ports.ts";
import { RELEASE_WAIT_MS, releaseCgroup } from "../../src/runtime/releaseCgroup.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { whileClockRuns } from "../fixtures/whileClockRuns.ts";

/** Procs whose cgroup goes once `remove` was refused `busyFor` times (Infinity: never). */
function cgroupLeftAfter(busyFor: number) {
  let calls = 0;
  const containment: Containment = {
    create: (name) => `/cg/baton/${name}`,
    members: () => [],
    list: () => [],
    remove: () => ++calls > busyFor,
    kill: () => true,
  };
  const logger = { warn: vi.fn() };
  return {
    procs: { containment } as unknown as Procs,
    logger: logger as unknown as Logger,
    warn: logger.warn,
    calls: () => calls,
  };
}

describe("releaseCgroup", () => {
  it("waits for the threads of a process verified dead to leave its cgroup, then removes it", async () => {
    // A killed process with threads reads as a zombie while its other threads still exit:
    // rmdir says EBUSY for a few ms after a verified teardown.
    const { procs, logger, warn, calls } = cgroupLeftAfter(3);
    await releaseCgroup(procs, nodeClock(), "/cg/baton/dep-x", logger);
    expect(calls()).toBe(4);
    expect(warn).not.toHaveBeenCalled();
  });

  it("leaves a cgroup whose dead processes' threads take longer, after a bounded wait, saying a later reap removes it", async () => {
    const { procs, logger, warn, calls } = cgroupLeftAfter(Number.POSITIVE_INFINITY);
    const clock = new SimClock();
    await whileClockRuns(clock, releaseCgroup(procs, clock, "/cg/baton/dep-x", logger));
    expect(clock.now()).toBe(RELEASE_WAIT_MS);
    expect(calls()).toBe(RELEASE_WAIT_MS / 20 + 1);
    expect(warn).toHaveBeenCalledWith(
      { cgroup: "/cg/baton/dep-x", waitedMs: RELEASE_WAIT_MS },
      `cgroup not removed: the last threads of its killed processes were still leaving it after ${RELEASE_WAIT_MS} ms; the next reap or launch in this state dir removes it`,
    );
  });

  it("leaves at once a cgroup a live process was moved into since, naming it", async () => {
    const { procs, logger, warn, calls } = cgroupLeftAfter(Number.POSITIVE_INFINITY);
    const containment = procs.containment as Containment;
    containment.members = () => [4711];
    procs.inspect = (pid) => ({ pid, ppid: 1, pgid: pid, state: "sleeping", argv: ["sleep"] });
    await releaseCgroup(procs, nodeClock(), "/cg/baton/dep-x", logger);
    expect(calls()).toBe(1);
    expect(warn).toHaveBeenCalledWith(
      { cgroup: "/cg/baton/dep-x", living: [4711] },
      "cgroup not removed: live process 4711 is in it; the next reap or launch in this state dir removes it once it is empty",
    );
  });
});
