/**
 * A pool's `logsDir` that cannot be made (a symbolic link to nothing on its way, a file in its
 * way, a folder this user may not write in) is a `ConfigError` when the pool starts, saying
 * why and what to do, before any worker starts: the local pool builds no worker's command
 * line, the Slurm pool (against the in-memory Slurm) submits nothing.
 */
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import { localPool } from "../../src/runtime/localPool.ts";
import { slurmPool } from "../../src/runtime/slurmPool.ts";
import type { PoolStart, RunningPool } from "../../src/runtime/workerPool.ts";
import { FakeSlurm } from "../fixtures/fakeSlurm.ts";
import { poolStart } from "../fixtures/poolStart.ts";
import { tempDir } from "../fixtures/tempDir.ts";

const started: RunningPool[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((pool) => pool.stop().catch(() => {})));
});

/** What a pool is started with, its workers' logs in `logsDir`. */
function context(logsDir: string): PoolStart {
  const dir = tempDir();
  writeFileSync(join(dir, "run.secret"), `${"ab".repeat(32)}\n`, { mode: 0o600 });
  return poolStart(dir, { logsDir });
}

/** What starting a local pool of two workers threw, and the workers it built a command for. */
function startLocal(logsDir: string): { error: unknown; workers: string[] } {
  const workers: string[] = [];
  const pool = localPool({
    jobsModule: "jobs.ts",
    count: 2,
    maxRestarts: 0,
    command: (worker) => {
      workers.push(worker.name);
      return ["/nonexistent/baton-test-worker", ...worker.args];
    },
  });
  try {
    started.push(pool.start(context(logsDir)));
    return { error: undefined, workers };
  } catch (error) {
    return { error, workers };
  }
}

/** A symbolic link to a folder that does not exist, and that folder. */
function linkToNothing(): { link: string; target: string } {
  const dir = tempDir();
  const link = join(dir, "scratch");
  const target = join(dir, "not-mounted");
  symlinkSync(target, link);
  return { link, target };
}

describe("a pool's logsDir that cannot be made", () => {
  it("through a symbolic link to nothing: the local pool names the link and its target, and starts no worker", () => {
    const { link, target } = linkToNothing();
    const logsDir = join(link, "logs");
    const { error, workers } = startLocal(logsDir);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({
      code: "CONFIG",
      message: `cannot write the workers' logs in ${logsDir}: ${link} is a symbolic link to ${target}, which does not exist (a disk not mounted?); make ${target}, or give the workers' logs (logsDir) another directory`,
    });
    expect(workers).toEqual([]);
  });

  it("with a file in its way: the local pool names the file", () => {
    const file = join(tempDir(), "notes.txt");
    writeFileSync(file, "not a folder\n");
    const logsDir = join(file, "logs");
    const { error, workers } = startLocal(logsDir);
    expect(error).toMatchObject({
      code: "CONFIG",
      message: `cannot write the workers' logs in ${logsDir}: ${file} is a file, not a directory; move it aside, or give the workers' logs (logsDir) another directory`,
    });
    expect(workers).toEqual([]);
  });

  it("where this user may not make a folder: the local pool says so", () => {
    // sysfs refuses mkdir even to root (EPERM); to anyone else /sys is root's, mode 555 (EACCES).
    const { error, workers } = startLocal("/sys/baton-logs");
    expect(error).toBeInstanceOf(ConfigError);
    const { message } = error as ConfigError;
    expect(message.startsWith("cannot write the workers' logs in /sys/baton-logs: ")).toBe(true);
    // Said as what it is, whoever asks: not an immutable /sys, nor root's mode 555.
    expect(message).toMatch(
      /: cannot mkdir \/sys\/baton-logs: (operation not permitted|permission denied): \/sys is in sysfs, which holds the kernel's own files: no one, root included, makes a file or folder there; give the workers' logs \(logsDir\) another directory, one you can write to$/,
    );
    expect(workers).toEqual([]);
  });

  it("that is there but this user may not write in: the local pool says so", () => {
    // procfs refuses to let anyone, root too, write in /proc/sys (mode 555).
    const { error, workers } = startLocal("/proc/sys");
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      "cannot write the workers' logs in /proc/sys: cannot write /proc/sys: permission denied: /proc/sys is in procfs, which holds the kernel's own files: no one, root included, makes a file or folder there; give the workers' logs (logsDir) another directory, one you can write to",
    );
    expect(workers).toEqual([]);
  });

  it("through a symbolic link to nothing: the Slurm pool says so, and submits nothing", () => {
    const { link, target } = linkToNothing();
    const logsDir = join(link, "logs");
    const slurm = new FakeSlurm();
    const pool = slurmPool({ jobsModule: "/shared/jobs.ts", pollMs: 5, commands: slurm });
    expect(() => started.push(pool.start(context(logsDir)))).toThrow(
      expect.objectContaining({
        code: "CONFIG",
        message: `cannot write the workers' logs in ${logsDir}: ${link} is a symbolic link to ${target}, which does not exist (a disk not mounted?); make ${target}, or give the workers' logs (logsDir) another directory`,
      }),
    );
    expect(slurm.active()).toEqual([]);
  });
});
