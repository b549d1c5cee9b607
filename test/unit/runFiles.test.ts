import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { runFileStem, slurmPoolOf, sweepAbandonedRunFiles } from "../../src/runtime/runFiles.ts";
import { writeSecretFile } from "../../src/runtime/secret.ts";
import { deadPid } from "../fixtures/deadPid.ts";

const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function runDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-run-files-"));
  dirs.push(dir);
  return dir;
}

const host = hostname().replace(/[^A-Za-z0-9._-]/g, "_");

describe("run files", () => {
  it("names a run's secret after this process and host", async () => {
    const { path } = await writeSecretFile(runDir());
    expect(path).toMatch(new RegExp(`/run-[0-9a-f]{12}-${process.pid}@${host}\\.secret$`));
    expect(runFileStem(new Uint8Array([1, 2]))).toBe(`run-0102-${process.pid}@${host}`);
  });

  it("removes the secret, batch scripts and temp file of one of them of a gone coordinator on this host, and nothing else; warns of another live run", async () => {
    const dir = runDir();
    const dead = await deadPid();
    const files = [
      `run-aa11-${dead}@${host}.secret`,
      `run-aa11-${dead}@${host}.baton-0123abcd.sbatch`,
      // Killed as it wrote its secret: the temp file of its writeAtomic holds the secret.
      `.run-ff66-${dead}@${host}.secret.${dead}.0a1b2c3d4e5f.tmp`,
      `run-bb22-${process.pid}@${host}.secret`,
      `.run-bb22-${process.pid}@${host}.secret.${process.pid}.0a1b2c3d4e5f.tmp`,
      `run-bb22-${process.pid}@${host}.baton-4567cdef.sbatch`,
      `run-cc33-${dead}@another-host.example.secret`,
      // A living process other than this one: another run using the store right now.
      `run-ee55-${process.ppid}@${host}.secret`,
      "run-dd44.secret",
      "notes.txt",
    ];
    for (const name of files) writeFileSync(join(dir, name), "x", { mode: 0o600 });
    const infos: object[] = [];
    const warnings: { fields: object; message: string }[] = [];
    const removed = await sweepAbandonedRunFiles(dir, {
      files: nodeFiles(),
      logger: {
        info: (fields) => infos.push(fields),
        warn: (fields, message) => warnings.push({ fields, message }),
      },
    });
    expect(removed.sort()).toEqual(files.slice(0, 3).sort());
    expect(readdirSync(dir).sort()).toEqual(files.slice(3).sort());
    expect(infos).toEqual([{ dir, files: removed }]);
    expect(warnings).toEqual([
      {
        fields: { dir, pids: [process.ppid] },
        message: expect.stringMatching(
          new RegExp(
            `^another baton run on this machine uses this store \\(pid ${process.ppid}\\)`,
          ),
        ),
      },
    ]);
  });

  it("reads the Slurm pool a batch script stands for", () => {
    expect(slurmPoolOf("run-3f2a-4242@login1.cluster.baton-0123abcd.sbatch")).toBe(
      "baton-0123abcd",
    );
    expect(slurmPoolOf("run-3f2a-4242@login1.cluster.secret")).toBeUndefined();
    expect(slurmPoolOf("baton-0123abcd.sbatch")).toBeUndefined();
  });

  it("does nothing in a directory that does not exist", async () => {
    expect(await sweepAbandonedRunFiles(join(runDir(), "run"), { files: nodeFiles() })).toEqual([]);
  });
});
