/**
 * `readDeploymentStatuses` on a shared state dir: another user's deployment, whose files this
 * user may not read (the Files port answers EACCES, as Node does for a 0600 file of another
 * user; tests may run as root, where a chmod denies nothing).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { readDeploymentStatuses } from "../../src/rank/deploymentStatus.ts";
import { LEASE_FORMAT } from "../../src/rank/leaseFormat.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { OUTCOME_FORMAT, type Outcome } from "../../src/rank/outcomeFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcInfo, Procs } from "../../src/runtime/ports.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { filesDenying } from "../fixtures/filesDenying.ts";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("readDeploymentStatuses", () => {
  it("reports another user's deployment as unreadable, naming its owner, instead of failing", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-shared-"));
    dirs.push(stateDir);
    const theirs = deploymentPaths(stateDir, "dep-theirs000000");
    const closed = deploymentPaths(stateDir, "dep-closed000000");
    for (const paths of [theirs, closed]) {
      await mkdir(paths.dir, { recursive: true });
      await writeFile(paths.manifest, "{}");
    }
    const statuses = await readDeploymentStatuses(
      {
        files: filesDenying((path) => path === theirs.manifest || path === closed.dir),
        procs: nodeProcs(),
        clock: { now: () => Date.now() },
      },
      stateDir,
    );
    const owner = process.getuid?.() === 0 ? "root" : undefined;
    expect(statuses.map((dep) => [dep.deployment, dep.state])).toEqual([
      ["dep-closed000000", "unreadable"],
      ["dep-theirs000000", "unreadable"],
    ]);
    for (const dep of statuses) {
      expect(dep.reason).toContain(`run \`baton status --state-dir ${stateDir}\` as`);
      if (owner !== undefined) expect(dep.reason).toContain(`its files are ${owner}'s`);
      expect(dep.ranks).toEqual([]);
    }
    expect(statuses[0]?.problems).toEqual([`cannot list ${closed.dir}: permission denied`]);
    expect(statuses[1]?.problems).toEqual([`cannot read ${theirs.manifest}: permission denied`]);
  });

  it("says how a deployment ended from its outcome record, and ignores a record of another launch of its name", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-outcome-"));
    dirs.push(stateDir);
    const now = Date.now();
    const outcome = (deployment: string, token: string): Outcome => ({
      deployment,
      launcher: { pid: 4242, token },
      worldSize: 2,
      argv: ["python3", "train.py"],
      startedAt: now - 60_000,
      // This test's own pid: another program's by now, which an ended rank's record is not judged by.
      ranks: [
        { rank: 0, host: "local", pid: process.pid, exit: { at: now - 2_000, code: 3 } },
        { rank: 1, host: "local", pid: process.pid, exit: { at: now - 1_000, signal: "SIGTERM" } },
      ],
      ended: { at: now - 1_000, status: "failed", reason: "rank 0 exited with code 3" },
    });
    const ended = deploymentPaths(stateDir, "dep-ended0000000");
    await mkdir(ended.dir);
    await writeFile(
      ended.outcome,
      encodeStateFile(OUTCOME_FORMAT, outcome("dep-ended0000000", "t")),
    );
    await writeFile(ended.log(0), "rank 0: failing\n");
    // Launched again under the same name: the record left by the launch before is not its own.
    const relaunched = deploymentPaths(stateDir, "dep-relaunched00");
    await mkdir(relaunched.dir);
    await writeFile(
      relaunched.outcome,
      encodeStateFile(OUTCOME_FORMAT, outcome("dep-relaunched00", "old")),
    );
    await writeFile(
      relaunched.lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment: "dep-relaunched00",
        pid: process.pid,
        token: "new",
        renewedAt: now,
        staleAfterMs: 30_000,
      }),
    );
    // Reaped: its launcher died; rank 0 still ran and the reap stopped it, rank 1 had exited.
    const reaped = deploymentPaths(stateDir, "dep-reaped000000");
    await mkdir(reaped.dir);
    await writeFile(
      reaped.outcome,
      encodeStateFile(OUTCOME_FORMAT, {
        ...outcome("dep-reaped000000", "r"),
        ranks: [
          { rank: 0, host: "local", pid: process.pid, reaped: true },
          { rank: 1, host: "local", pid: process.pid },
        ],
        ended: { at: now - 1_000, status: "reaped", reason: "launcher pid 4242 is gone" },
      }),
    );
    // The live one first; the two ended at the same time, then by id.
    const [relaunchedStatus, endedStatus, reapedStatus] = await readDeploymentStatuses(
      { files: nodeFiles(), procs: nodeProcs(), clock: { now: () => now } },
      stateDir,
    );
    expect(endedStatus).toMatchObject({
      state: "ended",
      reason: "failed: rank 0 exited with code 3",
      worldSize: 2,
      argv: ["python3", "train.py"],
      ended: { status: "failed", at: now - 1_000, agoMs: 1_000, ranForMs: 59_000 },
    });
    expect(
      endedStatus?.ranks.map((rank) => [rank.rank, rank.phase, rank.alive, rank.exit, rank.log]),
    ).toEqual([
      [0, "exited", false, { code: 3, signal: null, at: now - 2_000, agoMs: 2_000 }, ended.log(0)],
      [
        1,
        "exited",
        false,
        { code: null, signal: "SIGTERM", at: now - 1_000, agoMs: 1_000 },
        undefined,
      ],
    ]);
    expect(reapedStatus).toMatchObject({
      state: "ended",
      reason: "reaped: launcher pid 4242 is gone",
      // Rank 0 ran until the reap stopped it.
      ended: { status: "reaped", ranForMs: 59_000, ranAtLeast: false },
    });
    expect(reapedStatus?.ranks.map((rank) => [rank.phase, rank.alive, rank.exit])).toEqual([
      ["reaped", false, undefined],
      ["gone", false, undefined],
    ]);
    expect(relaunchedStatus).toMatchObject({ state: "live", ended: undefined, ranks: [] });
  });

  it("says a rank that ends while its environment is read is dying or gone, not another program's", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-ending-"));
    dirs.push(stateDir);
    const now = Date.now();
    const deployment = "dep-ending000000";
    const paths = deploymentPaths(stateDir, deployment);
    await mkdir(paths.dir);
    const launcher = { pid: process.pid, token: "t", host: hostname() };
    const rankPid = 999_999_001;
    await writeFile(
      paths.manifest,
      encodeStateFile(MANIFEST_FORMAT, {
        deployment,
        launcher,
        ranks: [{ rank: 0, localRank: 0, host: "local", pid: rankPid, pgid: rankPid }],
        worldSize: 1,
        argv: ["python3", "train.py"],
        startedAt: now - 5_000,
        stateDir,
      }),
    );
    await writeFile(
      paths.lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment,
        ...launcher,
        renewedAt: now,
        staleAfterMs: 30_000,
      }),
    );
    const rank = {
      pid: rankPid,
      ppid: 1,
      pgid: rankPid,
      state: "running" as const,
      argv: [],
      startedAt: now - 6_000,
    };
    /** The rank as the table shows it at each look: alive, then as `after` says. */
    const statusWhen = async (
      after: ProcInfo | undefined,
      environ: Record<string, string> | undefined,
    ) => {
      const real = nodeProcs();
      let looks = 0;
      const procs: Procs = {
        ...real,
        inspect: (pid) => (pid !== rankPid ? real.inspect(pid) : looks++ === 0 ? rank : after),
        environ: (pid) => (pid !== rankPid ? real.environ(pid) : environ),
      };
      const [status] = await readDeploymentStatuses(
        { files: nodeFiles(), procs, clock: { now: () => now } },
        stateDir,
      );
      return status?.ranks.map(({ phase, alive }) => [phase, alive]);
    };
    // Running its exit: its memory released, its environment reads empty.
    expect(await statusWhen({ ...rank, exiting: true }, {})).toEqual([["no marker", true]]);
    // Gone between the reads.
    expect(await statusWhen(undefined, undefined)).toEqual([["gone", false]]);
  });

  it("says a launcher that died removing its files after its group ended had ended, not that it started no rank", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-clearing-"));
    dirs.push(stateDir);
    const now = Date.now();
    const paths = deploymentPaths(stateDir, "dep-clearing0000");
    await mkdir(paths.dir);
    const pid = await deadPid();
    // Its manifest removed, its outcome written, its lease not yet removed: then SIGKILL.
    await writeFile(
      paths.lease,
      encodeStateFile(LEASE_FORMAT, {
        deployment: "dep-clearing0000",
        pid,
        token: "t",
        // This machine's: its dead pid is evidence here.
        host: hostname(),
        renewedAt: now - 3_000,
        staleAfterMs: 30_000,
      }),
    );
    await writeFile(
      paths.outcome,
      encodeStateFile(OUTCOME_FORMAT, {
        deployment: "dep-clearing0000",
        launcher: { pid, token: "t" },
        worldSize: 1,
        argv: ["sleep", "300"],
        startedAt: now - 5_000,
        ranks: [{ rank: 0, host: "local", pid, exit: { at: now - 2_000, signal: "SIGTERM" } }],
        ended: { at: now - 2_000, status: "stopped", reason: "SIGINT to the launcher" },
      }),
    );
    const [status] = await readDeploymentStatuses(
      { files: nodeFiles(), procs: nodeProcs(), clock: { now: () => now } },
      stateDir,
    );
    expect(status).toMatchObject({
      state: "orphaned",
      reason: `launcher pid ${pid} is gone; it had ended (stopped) and died as it removed its files, and \`baton reap\` removes its lease`,
    });
  });

  it("says how long a reaped deployment ran: to the reap while a rank ran, else to its last exit known", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-ranfor-"));
    dirs.push(stateDir);
    const now = Date.now();
    const reaped = async (deployment: string, exits: (number | undefined)[]) => {
      const paths = deploymentPaths(stateDir, deployment);
      await mkdir(paths.dir);
      await writeFile(
        paths.outcome,
        encodeStateFile(OUTCOME_FORMAT, {
          deployment,
          launcher: { pid: 4242, token: "t" },
          worldSize: exits.length,
          argv: ["python3", "train.py"],
          startedAt: now - 3_600_000,
          ranks: exits.map((at, rank) => ({
            rank,
            host: "local",
            pid: process.pid,
            ...(at !== undefined && { exit: { at, code: 0 } }),
          })),
          ended: { at: now - 1_000, status: "reaped", reason: "launcher pid 4242 is gone" },
        }),
      );
    };
    // Both ranks exited (the launcher saw it) an hour before the reap.
    await reaped("dep-ranall000000", [now - 3_000_000, now - 3_000_000 + 5_000]);
    // One exit seen, the other rank ended unseen after its launcher died.
    await reaped("dep-ransome00000", [now - 3_000_000, undefined]);
    // No exit seen at all.
    await reaped("dep-rannone00000", [undefined, undefined]);
    const statuses = await readDeploymentStatuses(
      { files: nodeFiles(), procs: nodeProcs(), clock: { now: () => now } },
      stateDir,
    );
    expect(statuses.map((status) => [status.deployment, status.ended])).toEqual([
      [
        "dep-ranall000000",
        expect.objectContaining({ ranForMs: 605_000, ranAtLeast: false, agoMs: 1_000 }),
      ],
      ["dep-rannone00000", expect.objectContaining({ ranForMs: undefined, ranAtLeast: false })],
      ["dep-ransome00000", expect.objectContaining({ ranForMs: 600_000, ranAtLeast: true })],
    ]);
  });

  it("dates an orphan's launcher by the last it wrote: its lease's renewal or a rank exit it recorded, not another launcher's lease", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-lastseen-"));
    dirs.push(stateDir);
    const now = Date.now();
    const launcher = await deadPid();
    const write = async (
      deployment: string,
      lease: { pid: number; token: string; renewedAt: number },
      exitAt: number | undefined,
    ) => {
      const paths = deploymentPaths(stateDir, deployment);
      await mkdir(paths.dir);
      await writeFile(
        paths.manifest,
        encodeStateFile(MANIFEST_FORMAT, {
          deployment,
          launcher: { pid: launcher, token: "t", host: "here" },
          ranks: [],
          worldSize: 1,
          argv: ["python3", "train.py"],
          startedAt: now - 60_000,
        }),
      );
      await writeFile(
        paths.lease,
        encodeStateFile(LEASE_FORMAT, { deployment, staleAfterMs: 30_000, ...lease }),
      );
      if (exitAt === undefined) return;
      await writeFile(
        paths.outcome,
        encodeStateFile(OUTCOME_FORMAT, {
          deployment,
          launcher: { pid: launcher, token: "t" },
          worldSize: 1,
          argv: ["python3", "train.py"],
          startedAt: now - 60_000,
          ranks: [{ rank: 0, host: "local", pid: launcher, exit: { at: exitAt, code: 0 } }],
        }),
      );
    };
    await write(
      "dep-byexit000000",
      { pid: launcher, token: "t", renewedAt: now - 20_000 },
      now - 15_000,
    );
    await write(
      "dep-bylease00000",
      { pid: launcher, token: "t", renewedAt: now - 20_000 },
      now - 25_000,
    );
    // A lease another launcher instance renewed says nothing of this one: seen last at its launch.
    await write(
      "dep-otherlease00",
      { pid: launcher, token: "other", renewedAt: now - 1_000 },
      undefined,
    );
    const statuses = await readDeploymentStatuses(
      { files: nodeFiles(), procs: nodeProcs(), clock: { now: () => now }, host: "here" },
      stateDir,
    );
    expect(statuses.map((dep) => [dep.deployment, dep.state, dep.launcherLastSeen])).toEqual([
      ["dep-byexit000000", "orphaned", { at: now - 15_000, agoMs: 15_000 }],
      ["dep-bylease00000", "orphaned", { at: now - 20_000, agoMs: 20_000 }],
      ["dep-otherlease00", "orphaned", { at: now - 60_000, agoMs: 60_000 }],
    ]);
  });

  it("refuses, as a JavaScript caller may give them, ports that are no ports and a state directory that is no path", async () => {
    const ports = { files: nodeFiles(), procs: nodeProcs(), clock: { now: () => Date.now() } };
    const called = (...args: unknown[]) =>
      readDeploymentStatuses(...(args as Parameters<typeof readDeploymentStatuses>));
    await expect(called(".baton/run")).rejects.toThrow(
      'readDeploymentStatuses: ports must be { files, procs, clock }, such as { files: nodeFiles(), procs: nodeProcs(), clock: nodeClock() }, not ".baton/run"',
    );
    await expect(called({ ...ports, files: 5 }, ".baton/run")).rejects.toThrow(
      "readDeploymentStatuses: ports.files must be a Files, such as nodeFiles(), not 5",
    );
    await expect(called(ports, 5)).rejects.toThrow(
      'readDeploymentStatuses: stateDir must be the path of the state directory its deployments are in, such as DEFAULT_STATE_DIR (".baton/run"), not 5',
    );
    await expect(called(ports)).rejects.toThrow(ConfigError);
    // As reapDeployments refuses it: "" read the working directory's entries as deployments.
    await expect(called(ports, "")).rejects.toThrow(
      'readDeploymentStatuses: stateDir must be the path of the state directory its deployments are in, such as DEFAULT_STATE_DIR (".baton/run"), not ""',
    );
  });
});
