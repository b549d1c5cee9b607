/**
 * A launcher stopped for longer than its lease's staleness (SIGSTOP) is taken for dead: a
 * second launcher of the same name reaps its rank, takes the name over and starts its own.
 * When the first goes on, it stops only its own ranks and leaves the name's files, now the
 * other's, alone: no renewal over the other's lease, no sweep of the other's ranks, no clear
 * of its lease, manifest or markers; and it says so. Simulated processes, files and clock,
 * shared by both launchers; the first one's timers and child exits wait while it is stopped.
 */
import pino from "pino";
import { expect, it } from "vitest";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import type { Clock, Procs } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { groupEnd, runFor, runUntil, simLaunch, simPorts } from "../fixtures/simGroup.ts";

const STALE_MS = 3_000;
const DIR = "/sim/run/w7";
const LEASE = `${DIR}/lease.json`;
/** The stopped launcher's pid; the other one's is the simulated table's own, 100. */
const STOPPED_LAUNCHER_PID = 200;

/** A launcher's clock and process table that, while `stopped`, hold its timers and its children's exits. */
function stoppable(sim: SimClock, procs: SimProcs) {
  let stopped = false;
  let held: (() => void)[] = [];
  const clock: Clock = {
    now: () => sim.now(),
    setTimeout: (fn, ms) => sim.setTimeout(() => (stopped ? held.push(fn) : fn()), ms),
    clearTimeout: (handle) => sim.clearTimeout(handle),
  };
  const waitForCont = () =>
    stopped ? new Promise<void>((resolve) => held.push(resolve)) : Promise.resolve();
  const ownProcs = new Proxy(procs, {
    get(target, key) {
      // A launcher of its own: two live launchers on one machine never share a pid, and its
      // ranks carry its own in BATON_LAUNCHER_PID.
      if (key === "selfPid") return STOPPED_LAUNCHER_PID;
      if (key === "spawn") {
        return (options: Parameters<Procs["spawn"]>[0]) => {
          const handle = target.spawn(options);
          return {
            pid: handle.pid,
            exited: handle.exited.then(async (exit) => {
              await waitForCont();
              return exit;
            }),
          };
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Procs;
  return {
    clock,
    procs: ownProcs,
    stop() {
      stopped = true;
    },
    cont() {
      stopped = false;
      const due = held;
      held = [];
      for (const fn of due) fn();
    },
  };
}

it("a launcher taken over while stopped stops only its own ranks and leaves the other's files", async () => {
  const sim = new SimClock();
  const disk = new SimFiles(new SimEntropy(1)).port(sim.scope());
  const procs = new SimProcs({ clock: sim });
  const launcher = stoppable(sim, procs);
  const lines: string[] = [];
  const first = simLaunch({
    name: "w7",
    timeouts: { leaseStaleMs: STALE_MS },
    logger: pino({ level: "warn" }, { write: (line: string) => lines.push(line) }),
    ports: { ...simPorts(sim, { procs: launcher.procs, files: disk }), clock: launcher.clock },
  });
  const firstEnd = groupEnd(first);
  await runUntil(sim, () => first.pids().length > 0);
  const [firstRank] = first.pids();
  launcher.stop();
  await runFor(sim, 2 * STALE_MS);

  // A second launcher of the name reaps the first's rank, takes the name over and starts its own.
  const second = simLaunch({
    name: "w7",
    timeouts: { leaseStaleMs: STALE_MS },
    // Its own instance token: simPorts' entropy has one seed.
    ports: simPorts(sim, { procs, files: disk, entropy: new SimEntropy(3) }),
  });
  const secondEnd = groupEnd(second);
  await runUntil(sim, () => secondEnd.done || second.pids().length > 0);
  const [secondRank] = second.pids();
  expect(secondRank).toBeDefined();
  expect(procs.inspect(firstRank as number)).toBeUndefined();
  const secondLease = await readStateFile(disk, LEASE_FORMAT, LEASE);

  launcher.cont();
  await runUntil(sim, () => firstEnd.done);
  // The second launcher's rank runs on, and its files are as it wrote them.
  expect(procs.inspect(secondRank as number)).toMatchObject({ state: "sleeping" });
  expect(secondEnd.done).toBe(false);
  expect(await readStateFile(disk, LEASE_FORMAT, LEASE)).toMatchObject({
    token: secondLease?.token,
  });
  expect(await disk.list(DIR)).toContain("manifest.json");
  const warnings: string[] = lines.map((line) => JSON.parse(line).msg);
  // Its renewal found the other's lease and wrote nothing; its teardown then said what it left.
  expect(warnings).toContain(
    `another launcher (pid 100) took over lease ${LEASE} after it went stale: no longer renewed`,
  );
  const left = warnings.find((msg) => msg.includes("took over deployment w7"));
  expect(left).toMatch(/only this launcher's own ranks were stopped/);
  expect(left).toContain(`${DIR}/manifest.json`);
  // Its failure says why its rank was gone and what it did about the other launcher's.
  expect(firstEnd.error?.message).toContain(
    "Another launcher (pid 100) took this deployment's name over meanwhile, as this launcher's lease was not renewed for over 3000 ms (this launcher was stopped, or could not write it): only this launcher's own ranks were stopped",
  );

  second.stop("test over").catch(() => {});
  await runUntil(sim, () => secondEnd.done);
});
