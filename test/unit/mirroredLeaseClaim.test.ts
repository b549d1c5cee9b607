/**
 * A site's claim on an ssh host's state dir (`claimMirroredLease`) when a lease is there
 * already: this launch's own (another entry of `hosts` reached the same machine first) is a
 * `HostNamedTwice` configuration error, not retryable; another launcher's is
 * `DEPLOYMENT_BLOCKED`; and one that cannot be read is refused at once as damaged (a lease is
 * never seen half written). Simulated files and clock.
 */
import { describe, expect, it } from "vitest";
import { RankGroupError } from "../../src/errors.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import { HostNamedTwice } from "../../src/runtime/hostNamedTwice.ts";
import { claimMirroredLease } from "../../src/runtime/mirroredLease.ts";
import type { ProcInfo } from "../../src/runtime/ports.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { runUntil } from "../fixtures/simGroup.ts";

const ROOT = "/home/alice/.baton/run";
const LEASE = `${ROOT}/w6/lease.json`;
const TOKEN = "this launch";
/** This launcher's machine, where pid 100 (this launcher) is the only live process. */
const HERE = "login1";
const procs = {
  inspect: (pid: number): ProcInfo | undefined =>
    pid === 100 ? { pid, ppid: 1, pgid: pid, state: "running", argv: ["baton"] } : undefined,
};

/** Claims w6 on a simulated host whose lease file is `there` (absent when undefined). */
async function claimOn(there: string | undefined) {
  const sim = new SimClock();
  const clock = sim.scope();
  const files = new SimFiles(new SimEntropy(1)).port(clock);
  if (there !== undefined) await files.createExclusive(LEASE, there);
  const end = { done: false, error: undefined as unknown };
  claimMirroredLease({
    files,
    clock,
    path: LEASE,
    deployment: "w6",
    pid: 100,
    token: TOKEN,
    staleAfterMs: 30_000,
    host: "ssh://alice@10.1.2.3",
    stateDir: ROOT,
    launcherHost: HERE,
    procs,
  }).then(
    () => {
      end.done = true;
    },
    (error: unknown) => {
      end.done = true;
      end.error = error;
    },
  );
  const startedAt = clock.now();
  await runUntil(sim, () => end.done);
  const held = await readStateFile(files, LEASE_FORMAT, LEASE).catch(() => undefined);
  return { error: end.error, tookMs: clock.now() - startedAt, held };
}

/**
 * A lease of w6 held by the launcher of `token` (pid 100 for this launch's, else 4242, no
 * process here), renewed at 0 (the sim clock's start), written on machine `host`.
 */
const lease = (token: string, host?: string): string =>
  encodeStateFile(LEASE_FORMAT, {
    deployment: "w6",
    pid: token === TOKEN ? 100 : 4242,
    token,
    ...(host !== undefined && { host }),
    renewedAt: 0,
    staleAfterMs: 30_000,
  });

describe("claimMirroredLease finding a lease there", () => {
  it("refuses this launch's own lease as HostNamedTwice, a configuration error naming the host and state dir", async () => {
    const { error } = await claimOn(lease(TOKEN));
    expect(error).toBeInstanceOf(HostNamedTwice);
    expect(error).toMatchObject({
      code: "CONFIG",
      retryable: false,
      host: "ssh://alice@10.1.2.3",
      stateDir: ROOT,
      message: `ssh://alice@10.1.2.3: deployment w6's state dir ${ROOT} there holds this launch's own lease already: another entry of --hosts (hosts) reaches this same machine and user under another name. List each machine once in --hosts, under one name`,
    });
  });

  it("refuses another launcher's lease as DEPLOYMENT_BLOCKED", async () => {
    const { error } = await claimOn(lease("another launcher"));
    expect(error).toBeInstanceOf(RankGroupError);
    expect(error).toMatchObject({ code: "DEPLOYMENT_BLOCKED" });
    expect((error as Error).message).toContain("another launcher holds it there (pid 4242");
  });

  it("refuses another machine's fresh lease whatever its pid is here, as its pid is that machine's", async () => {
    const { error } = await claimOn(lease("another launcher", "login2"));
    expect(error).toMatchObject({ code: "DEPLOYMENT_BLOCKED" });
    expect((error as Error).message).toContain("(pid 4242 on login2, its lease");
  });

  it("takes over at once a fresh lease that names this machine when its launcher's pid is dead here, as a local claim does", async () => {
    const { error, tookMs, held } = await claimOn(lease("another launcher", HERE));
    expect(error).toBeUndefined();
    expect(tookMs).toBe(0);
    expect(held).toMatchObject({ pid: 100, token: TOKEN, host: HERE });
  });

  it("refuses at once a lease it cannot read, as one damaged: a lease is never seen half written", async () => {
    const { error, tookMs } = await claimOn("");
    expect(error).toMatchObject({ code: "DEPLOYMENT_BLOCKED" });
    expect((error as Error).message).toBe(
      `ssh://alice@10.1.2.3: deployment w6 cannot use the state dir ${ROOT} there: its lease ${LEASE} there cannot be read (a lease is written whole, so it was damaged, edited by hand, or cut short by a power loss as it was made). Its files and ranks there were left as they are; remove it if no launcher of that name uses that state dir (it is taken over once nobody has written it for 30000 ms), or give this one another --name (name) or --remote-state-dir (remote.stateDir)`,
    );
    expect(tookMs).toBe(0);
  });
});
