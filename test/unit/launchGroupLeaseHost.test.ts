/**
 * A launch that finds the lease of a launcher still claiming its name judges that launcher's pid
 * only when the lease was written on this machine: a state dir on a shared file system holds
 * leases of other machines, whose pids mean nothing in this process table. Simulated
 * processes, files and clock; the lease's pid 4242 is in no process table here.
 */
import { hostname } from "node:os";
import { expect, it } from "vitest";
import { LEASE_FORMAT, type Lease } from "../../src/rank/leaseFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { SimProcs } from "../../src/sim/simProcs.ts";
import { groupEnd, runUntil, settleOn, simLaunch, simPorts } from "../fixtures/simGroup.ts";

const LEASE = "/sim/run/w9/lease.json";

/** Launches w9 over a lease of launcher pid 4242 renewed `ageMs` ago, naming `host` if given. */
async function launchOver(host: string | undefined, ageMs = 0) {
  const clock = new SimClock();
  const files = new SimFiles(new SimEntropy(1)).port(clock.scope());
  const procs = new SimProcs({
    clock,
    programs: { "/bin/rank": () => ({ onTerm: "exit" }) },
  });
  clock.setTimeout(() => {}, ageMs);
  clock.fireNext();
  const lease: Lease = {
    deployment: "w9",
    pid: 4242,
    token: "theirs",
    ...(host !== undefined && { host }),
    renewedAt: 0,
    staleAfterMs: 30_000,
  };
  const settle = settleOn(clock);
  await settle(files.mkdirp("/sim/run/w9"));
  await settle(files.writeAtomic(LEASE, encodeStateFile(LEASE_FORMAT, lease)));
  const group = simLaunch({ name: "w9", ports: simPorts(clock, { procs, files }) });
  const end = groupEnd(group);
  await runUntil(clock, () => end.done || group.pids().length > 0);
  const now = await settle(readStateFile(files, LEASE_FORMAT, LEASE));
  if (now instanceof Error) throw now;
  const started = group.pids().length > 0;
  if (!end.done) {
    group.stop("test over").catch(() => {});
    await runUntil(clock, () => end.done);
  }
  return { lease, now, error: end.error, started };
}

it("refuses a name whose fresh lease another machine wrote, though its pid is dead here, naming that machine", async () => {
  const { lease, now, error, started } = await launchOver("gpu-7.invalid");
  expect(started).toBe(false);
  expect(error?.code).toBe("DEPLOYMENT_BLOCKED");
  expect(error?.message).toBe(
    "deployment w9: it cannot be launched: another launcher (pid 4242 on gpu-7.invalid) claimed it a moment ago and is starting its ranks; stop that one first or pick another --name.",
  );
  expect(now).toEqual(lease);
});

it("judges a lease that names no machine by its age alone, as one of another machine", async () => {
  const { now, error, started } = await launchOver(undefined);
  expect(started).toBe(false);
  expect(error?.message).toContain("another launcher (pid 4242) claimed it a moment ago");
  expect(now?.token).toBe("theirs");
});

it("takes over a fresh lease this machine wrote whose pid is dead, and writes this machine in its own", async () => {
  const { now, error, started } = await launchOver(hostname());
  expect(error).toBeUndefined();
  expect(started).toBe(true);
  expect(now).toMatchObject({ pid: 100, host: hostname() });
});

it("takes over another machine's lease once it is stale", async () => {
  const { now, error, started } = await launchOver("gpu-7.invalid", 31_000);
  expect(error).toBeUndefined();
  expect(started).toBe(true);
  expect(now).toMatchObject({ pid: 100, host: hostname() });
});
