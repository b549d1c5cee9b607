/**
 * A launcher keeps its claim on the name (its lease, renewed) until its own deployment's
 * control files are gone: a launch of the same name that comes while they are slow to go is
 * refused, instead of taking over a lease gone stale meanwhile, and the first launcher's clear
 * then removing the new launch's lease. Simulated processes, files and clock; the test holds
 * the removal of the first launcher's manifest open.
 */
import { expect, it } from "vitest";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { readStateFile } from "../../src/rank/stateFile.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { groupEnd, runFor, runUntil, simLaunch, simPorts } from "../fixtures/simGroup.ts";

const STALE_MS = 3_000;
const MANIFEST = "/sim/run/w7/manifest.json";
const LEASE = "/sim/run/w7/lease.json";

it("keeps the name while its files are cleared: a launch of the same name then is refused and keeps its own lease", async () => {
  const sim = new SimClock();
  const disk = new SimFiles(new SimEntropy(1)).port(sim.scope());
  /** While set, removing the manifest waits for it. */
  let hold: Promise<void> | undefined;
  let held = false;
  const files: Files = {
    ...disk,
    async remove(path) {
      if (path === MANIFEST && hold !== undefined) {
        held = true;
        await hold;
      }
      return disk.remove(path);
    },
  };
  const procs = new SimProcs({
    clock: sim,
    programs: {
      "/bin/rank": () => ({ main: (self) => self.clock.setTimeout(() => self.exit(0), 10) }),
    },
  });
  const ports = simPorts(sim, { procs, files });
  const launch = () => simLaunch({ name: "w7", timeouts: { leaseStaleMs: STALE_MS }, ports });

  const first = launch();
  const firstEnd = groupEnd(first);
  await runUntil(sim, () => first.pids().length > 0);
  let release = () => {};
  hold = new Promise<void>((resolve) => {
    release = resolve;
  });
  // Its rank exits 0; the teardown is verified, and the clear is held at the manifest.
  await runUntil(sim, () => held);
  // Longer than the lease's staleness passes while the files are cleared.
  await runFor(sim, 2 * STALE_MS);
  hold = undefined;

  const second = launch();
  const secondEnd = groupEnd(second);
  await runUntil(sim, () => secondEnd.done || second.pids().length > 0);
  const secondLease =
    second.pids().length > 0 ? await readStateFile(disk, LEASE_FORMAT, LEASE) : undefined;
  release();
  await runUntil(sim, () => firstEnd.done);
  if (!secondEnd.done) {
    // Launched: its lease must have outlived the first launcher's clear.
    expect(secondLease).toBeDefined();
    expect(await readStateFile(disk, LEASE_FORMAT, LEASE)).toMatchObject({
      token: secondLease?.token,
    });
    await second.stop("test over").catch(() => {});
  }
  await runUntil(sim, () => secondEnd.done);
  expect(firstEnd.error).toBeUndefined();
  // The name was still the first launcher's.
  expect(secondEnd.error).toMatchObject({ code: "DEPLOYMENT_BLOCKED" });
  // And once its clear is done, nothing of its claim is left.
  expect(await disk.list("/sim/run/w7")).not.toContain("lease.json");
});
