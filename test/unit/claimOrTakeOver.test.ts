/**
 * `claimOrTakeOver`, the one claim loop of a launcher's local lease and of a site's mirrored
 * one, on real files in a temp dir: a free name is claimed, a live holder refuses it, a lease
 * its launcher left is taken over (logged), a lease to wait for is waited for, and a claim
 * gives up after three attempts.
 */
import { mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { LEASE_FORMAT, type Lease } from "../../src/rank/leaseFormat.ts";
import { encodeStateFile, readStateFile } from "../../src/rank/stateFile.ts";
import { claimOrTakeOver, type TakeOverClaim } from "../../src/runtime/launcherLease.ts";
import { nodeClock } from "../../src/runtime/nodeClock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Files } from "../../src/runtime/ports.ts";

const files = nodeFiles();
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A lease file's path in a new temp dir. */
function leasePath(): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-claim-"));
  dirs.push(dir);
  return join(dir, "lease.json");
}

/** Another launcher's lease of `dep` at `path`, renewed just now, written atomically. */
function writeOther(path: string, token = "other"): Lease {
  const lease: Lease = {
    deployment: "dep",
    pid: 4242,
    token,
    renewedAt: Date.now(),
    staleAfterMs: 60_000,
  };
  writeFileSync(`${path}.tmp`, encodeStateFile(LEASE_FORMAT, lease));
  renameSync(`${path}.tmp`, path);
  return lease;
}

/**
 * A claim of `dep` at `path` for token "mine" on `over` (the temp dir's files by default),
 * where a lease whose token is "left" counts as left behind; `lines` collects its log.
 */
function claimOf(
  path: string,
  lines: string[],
  more: Partial<TakeOverClaim> = {},
  over: Files = files,
): TakeOverClaim {
  return {
    files: over,
    clock: nodeClock(),
    path,
    deployment: "dep",
    pid: process.pid,
    token: "mine",
    staleAfterMs: 60_000,
    logger: pino({}, { write: (line: string) => lines.push(line) }),
    left: (held) => (held.token === "left" ? "its launcher is gone" : undefined),
    takingOver: "taking over a lease its launcher left",
    logFields: { host: "ssh://alice@gpu-2" },
    ...more,
  };
}

const mine = (path: string) =>
  readStateFile(files, LEASE_FORMAT, path).then((lease) => lease?.token);

describe("claimOrTakeOver", () => {
  it("claims a free name, and is refused by a live holder's lease, which stays", async () => {
    const path = leasePath();
    const lines: string[] = [];
    expect(await claimOrTakeOver(claimOf(path, lines))).toBeUndefined();
    expect(await mine(path)).toBe("mine");

    const held = leasePath();
    const other = writeOther(held);
    const before = Date.now();
    const refused = await claimOrTakeOver(claimOf(held, lines));
    expect(refused).toEqual({ held: other, now: expect.any(Number) });
    expect(refused?.now).toBeGreaterThanOrEqual(before);
    expect(await mine(held)).toBe("other");
    expect(lines).toEqual([]);
  });

  it("takes over a lease its launcher left, saying why with the claim's fields, and an unreadable one untouched for staleAfterMs; an unreadable one just written refuses", async () => {
    const path = leasePath();
    writeOther(path, "left");
    const lines: string[] = [];
    expect(await claimOrTakeOver(claimOf(path, lines))).toBeUndefined();
    expect(await mine(path)).toBe("mine");
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({
        msg: "taking over a lease its launcher left",
        deployment: "dep",
        host: "ssh://alice@gpu-2",
        lease: path,
        why: "its launcher is gone",
      }),
    ]);

    const torn = leasePath();
    writeFileSync(torn, "{");
    expect(await claimOrTakeOver(claimOf(torn, []))).toEqual({
      held: "unreadable",
      now: expect.any(Number),
    });
    const old = new Date(Date.now() - 120_000);
    utimesSync(torn, old, old);
    const oldLines: string[] = [];
    expect(await claimOrTakeOver(claimOf(torn, oldLines))).toBeUndefined();
    expect(await mine(torn)).toBe("mine");
    expect(JSON.parse(oldLines[0] ?? "{}").why).toMatch(
      /^it cannot be read and was not written for \d+ ms$/,
    );
  });

  it("gives up after three attempts that each found a lease left behind, the waits for a lease to wait for before them not counted", async () => {
    const path = leasePath();
    writeOther(path, "reaper");
    // Waited for a few times, then replaced by a lease left behind.
    setTimeout(() => writeOther(path, "left"), 60);
    let claims = 0;
    // Removals that do nothing: the lease left behind is there at every attempt.
    const stubborn: Files = {
      ...files,
      createExclusive: (...args) => {
        claims++;
        return files.createExclusive(...args);
      },
      remove: async () => {},
    };
    const lines: string[] = [];
    const waitFor = { lease: (held: Lease) => held.token === "reaper", pollMs: 10, times: 100 };
    const refused = await claimOrTakeOver(claimOf(path, lines, { waitFor }, stubborn));
    expect(refused?.held).toMatchObject({ token: "left" });
    expect(claims).toBeGreaterThan(3);
    expect(lines).toHaveLength(2);
  });

  it("waits for a lease it is told to wait for, and claims the name once it is given back; refuses once the waits run out", async () => {
    const waitFor = {
      lease: (held: Lease) => held.token === "reaper",
      pollMs: 10,
      times: 100,
    };
    const path = leasePath();
    writeOther(path, "reaper");
    setTimeout(() => rmSync(path, { force: true }), 60);
    expect(await claimOrTakeOver(claimOf(path, [], { waitFor }))).toBeUndefined();
    expect(await mine(path)).toBe("mine");

    const kept = leasePath();
    writeOther(kept, "reaper");
    const refused = await claimOrTakeOver(claimOf(kept, [], { waitFor: { ...waitFor, times: 3 } }));
    expect(refused?.held).toMatchObject({ token: "reaper" });
    expect(await mine(kept)).toBe("reaper");
  });
});
