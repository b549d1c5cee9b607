/**
 * `baton reap`, in process, on a state dir that is also a store's `run/` folder: the Slurm
 * allocations a killed `baton run` left in the queue (its batch script names its pool) are
 * cancelled and reported, a live coordinator's are left alone, and where Slurm's commands are
 * not on the PATH it says so, keeps the batch script and exits 0, the rank groups reaped all
 * the same; a Slurm command that fails exits 1.
 */
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { MANIFEST_FORMAT } from "../../src/rank/manifestFormat.ts";
import { encodeStateFile } from "../../src/rank/stateFile.ts";
import type { SlurmCommands } from "../../src/runtime/slurmCommands.ts";
import { capturedOutput } from "../fixtures/capturedOutput.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { FakeSlurm } from "../fixtures/fakeSlurm.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const fake = vi.hoisted(() => ({ slurm: undefined as SlurmCommands | undefined }));
vi.mock("../../src/runtime/slurmCommands.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/runtime/slurmCommands.ts")>();
  return {
    ...real,
    nodeSlurmCommands: (...args: Parameters<typeof real.nodeSlurmCommands>) =>
      fake.slurm ?? real.nodeSlurmCommands(...args),
  };
});

const { reapCommand } = await import("../../src/cli/reapCommand.ts");

const host = hostname().replace(/[^A-Za-z0-9._-]/g, "_");
const path = process.env.PATH;

afterEach(() => {
  vi.restoreAllMocks();
  fake.slurm = undefined;
  process.env.PATH = path;
});

/** The run files a `baton run` with a Slurm pool leaves: its secret and its pool's script. */
function runFiles(dir: string, stem: string, pool: string): string[] {
  const names = [`${stem}.secret`, `${stem}.${pool}.sbatch`];
  for (const name of names) writeFileSync(join(dir, name), "x", { mode: 0o600 });
  return names;
}

describe("baton reap and the Slurm allocations of dead runs", () => {
  it("cancels the allocations of a killed run's pool, reports them, and leaves a live run's", async () => {
    const dir = tempDir();
    const slurm = new FakeSlurm(1);
    fake.slurm = slurm;
    const dead = await deadPid();
    const request = { script: "x", count: 1, array: false, logsDir: dir, options: [] };
    const [running] = await slurm.submit({ ...request, name: "baton-0000dead" });
    const [pending] = await slurm.submit({ ...request, name: "baton-0000dead" });
    slurm.startPending();
    const [live] = await slurm.submit({ ...request, name: "baton-1111a11e" });
    const deadRun = `run-aa11-${dead}@${host}`;
    runFiles(dir, deadRun, "baton-0000dead");
    const liveFiles = runFiles(dir, `run-bb22-${process.pid}@${host}`, "baton-1111a11e");

    const out = capturedOutput();
    expect(await reapCommand(["--state-dir", dir])).toBe(0);
    expect(out.text).toBe(
      `Slurm pool baton-0000dead of dead run ${deadRun}: cancelled its allocations ${running}, ${pending}\n`,
    );
    expect(slurm.inState("CANCELLED").sort()).toEqual([running, pending].sort());
    expect(slurm.active()).toEqual([live]);
    expect(readdirSync(dir).sort()).toEqual(liveFiles.sort());

    // Once cancelled, and the run files gone, there is nothing left to reap.
    const again = capturedOutput();
    expect(await reapCommand(["--state-dir", dir, "--json"])).toBe(0);
    expect(JSON.parse(again.text).slurm).toEqual({ cancelled: [], failed: [], unchecked: [] });
  });

  it("reports the cancelled allocations in --json", async () => {
    const dir = tempDir();
    const slurm = new FakeSlurm(1);
    fake.slurm = slurm;
    const dead = await deadPid();
    const request = { script: "x", count: 2, array: true, logsDir: dir, options: [] };
    const ids = await slurm.submit({ ...request, name: "baton-0000dead" });
    runFiles(dir, `run-aa11-${dead}@${host}`, "baton-0000dead");

    const out = capturedOutput();
    expect(await reapCommand(["--state-dir", dir, "--json"])).toBe(0);
    expect(JSON.parse(out.text).slurm).toEqual({
      cancelled: [{ pool: "baton-0000dead", run: `run-aa11-${dead}@${host}`, allocations: ids }],
      failed: [],
      unchecked: [],
    });
  });

  it("says so when Slurm's commands are not on the PATH, keeps the script, reaps the rank groups all the same, and exits 0", async () => {
    const dir = tempDir();
    const dead = await deadPid();
    const deadRun = `run-aa11-${dead}@${host}`;
    runFiles(dir, deadRun, "baton-0000dead");
    const paths = deploymentPaths(dir, "train");
    const manifest = {
      deployment: "train",
      launcher: { host: hostname(), pid: dead, token: "t0" },
      ranks: [],
      worldSize: 1,
      argv: ["python3", "rank.py"],
      startedAt: Date.now(),
      stateDir: dir,
    };
    const { nodeFiles } = await import("../../src/runtime/nodeFiles.ts");
    await nodeFiles().writeAtomic(paths.manifest, encodeStateFile(MANIFEST_FORMAT, manifest));
    process.env.PATH = tempDir();

    const script = join(dir, `${deadRun}.baton-0000dead.sbatch`);

    const out = capturedOutput();
    // It was 1, as for a failure: nothing failed, and no reap on this machine could do more.
    expect(await reapCommand(["--state-dir", dir])).toBe(0);
    const lines = out.text.split("\n");
    expect(lines[0]).toMatch(/^train: reaped \(/);
    expect(lines[1]).toBe(
      `Slurm pool baton-0000dead of dead run ${deadRun}: allocations not looked for, as Slurm's commands (squeue, scancel) are not on this machine's PATH; any still queued end by themselves once they start (their workers cannot reach the dead run); to cancel them sooner, run \`scancel -n baton-0000dead\` where Slurm is, or baton reap on this host with Slurm's commands on the PATH (the batch script naming the pool stays for it: ${script})`,
    );
    expect(existsSync(paths.manifest)).toBe(false);
    // The secret is gone; the script stays, so that a reap where Slurm is can cancel them.
    expect(readdirSync(dir).filter((name) => name.startsWith("run-"))).toEqual([
      `${deadRun}.baton-0000dead.sbatch`,
    ]);

    const again = capturedOutput();
    expect(await reapCommand(["--state-dir", dir, "--json"])).toBe(0);
    expect(JSON.parse(again.text).slurm).toEqual({
      cancelled: [],
      failed: [],
      unchecked: [{ pool: "baton-0000dead", run: deadRun, script }],
    });
  });

  it("exits 1 when a Slurm command fails, and keeps the script", async () => {
    const dir = tempDir();
    const slurm = new FakeSlurm(1);
    slurm.failingQueues = 1;
    fake.slurm = slurm;
    const dead = await deadPid();
    const deadRun = `run-aa11-${dead}@${host}`;
    runFiles(dir, deadRun, "baton-0000dead");

    const out = capturedOutput();
    expect(await reapCommand(["--state-dir", dir, "--json"])).toBe(1);
    expect(JSON.parse(out.text).slurm).toEqual({
      cancelled: [],
      failed: [
        {
          pool: "baton-0000dead",
          run: deadRun,
          error: "squeue did not answer within 30000 ms and was killed",
        },
      ],
      unchecked: [],
    });
    expect(readdirSync(dir)).toEqual([`${deadRun}.baton-0000dead.sbatch`]);
  });
});
