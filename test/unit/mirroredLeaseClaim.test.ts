/**
 * A site's claim on an ssh host's state dir (`claimMirroredLease`) when a lease is there
 * already: this launch's own (another entry of `hosts` reached the same machine first) is a
 * `HostNamedTwice` configuration error, not retryable; another launcher's is
 * `DEPLOYMENT_BLOCKED`; and one caught while its claim writes it (empty) is looked at again on
 * the clock before either is decided. Simulated files and clock.
 */
import { describe, expect, it } from "vitest";
import { RankGroupError } from "../../src/errors.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import { HostNamedTwice } from "../../src/runtime/hostNamedTwice.ts";
import { claimMirroredLease } from "../../src/runtime/mirroredLease.ts";
import { SimClock } from "../../src/sim/simClock.ts";
import { SimEntropy } from "../../src/sim/simEntropy.ts";
import { SimFiles } from "../../src/sim/simFiles.ts";
import { runUntil } from "../fixtures/simGroup.ts";

const ROOT = "/home/alice/.baton/run";
const LEASE = `${ROOT}/w6/lease.json`;
const TOKEN = "this launch";

/** Claims w6 on a simulated host whose lease file is `there` (absent when undefined). */
async function claimOn(there: string | undefined, later?: { afterMs: number; text: string }) {
  const sim = new SimClock();
  const clock = sim.scope();
  const files = new SimFiles(new SimEntropy(1)).port(clock);
  if (there !== undefined) await files.createExclusive(LEASE, there);
  if (later !== undefined) {
    clock.setTimeout(() => void files.writeAtomic(LEASE, later.text), later.afterMs);
  }
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
  return { error: end.error, tookMs: clock.now() - startedAt };
}

/** A lease of w6 held by the launcher of `token`, renewed at 0 (the sim clock's start). */
const lease = (token: string): string =>
  encodeStateFile(LEASE_FORMAT, {
    deployment: "w6",
    pid: token === TOKEN ? 100 : 4242,
    token,
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

  it("looks again at a lease caught while it is written, and so finds this launch's own", async () => {
    const { error, tookMs } = await claimOn("", { afterMs: 250, text: lease(TOKEN) });
    expect(error).toBeInstanceOf(HostNamedTwice);
    expect(tookMs).toBeGreaterThanOrEqual(250);
    expect(tookMs).toBeLessThan(1_000);
  });

  it("refuses a lease still unreadable after a second of looks as one being written", async () => {
    const { error, tookMs } = await claimOn("");
    expect(error).toMatchObject({ code: "DEPLOYMENT_BLOCKED" });
    expect((error as Error).message).toContain("is being written");
    expect(tookMs).toBe(1_000);
  });
});
