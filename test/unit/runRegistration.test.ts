import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LOCK_STALE_MS } from "../../src/runtime/graphLock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { removeGoneRegistrations } from "../../src/runtime/runRegistration.ts";
import { deadPid } from "../fixtures/deadPid.ts";

const dirs: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A `run/` folder of its own. */
function runDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-registration-"));
  dirs.push(dir);
  mkdirSync(join(dir, "run"));
  return join(dir, "run");
}

/** Writes the file `name` in `dir` as the run `holder` would, its mtime `ageMs` ago. */
function forge(dir: string, name: string, holder: object, ageMs = 0): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      format: "baton.graph-lock/1",
      host: hostname(),
      argv: ["node", "baton", "run", "g.graph.ts", "--no-store"],
      graph: "/home/me/g.graph.ts",
      startedAt: 1_700_000_000_000,
      withoutLock: "--no-store",
      ...holder,
    }),
  );
  const at = new Date(Date.now() - ageMs);
  utimesSync(path, at, at);
  return path;
}

/** A logger that keeps what it says. */
function keptLog() {
  const lines: { level: string; fields: object; message: string }[] = [];
  const keep = (level: string) => (fields: object, message: string) =>
    lines.push({ level, fields, message });
  return { lines, logger: { info: keep("info"), warn: keep("warn") } };
}

const STEM = "graph-0123456789abcdef";

describe("removeGoneRegistrations", () => {
  it("removes the registrations of runs that are gone, by status's and reap's rule, and keeps the living, another host's renewed one, and every lock", async () => {
    const dir = runDir();
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      stdio: "ignore",
    });
    children.push(child);
    await new Promise((resolve) => child.once("spawn", resolve));
    const live = { pid: child.pid as number, argv: nodeProcs().inspect(child.pid as number)!.argv };
    const dead = await deadPid();
    const living = forge(dir, `${STEM}-${live.pid}-00000001.run`, live);
    const killed = forge(dir, `${STEM}-${dead}-00000002.run`, { pid: dead });
    const reused = forge(dir, `${STEM}-${live.pid}-00000003.run`, {
      pid: live.pid,
      argv: ["node", "another", "program"],
    });
    const renewedElsewhere = forge(dir, `${STEM}-4242-00000004.run`, {
      pid: 4242,
      host: "login2.example",
    });
    const staleElsewhere = forge(
      dir,
      `${STEM}-4343-00000005.run`,
      { pid: 4343, host: "login2.example" },
      LOCK_STALE_MS + 5_000,
    );
    const deadLock = forge(dir, "graph-fedcba9876543210.lock", {
      pid: dead,
      withoutLock: undefined,
    });
    const { lines, logger } = keptLog();

    const removed = await removeGoneRegistrations(dir, { logger });

    expect(removed.map((run) => [run.path, run.gone]).sort()).toEqual(
      [
        [killed, "its process is gone"],
        [reused, "its pid was reused"],
        [staleElsewhere, "not renewed"],
      ].sort(),
    );
    expect(readdirSync(dir).map((name) => join(dir, name))).toEqual(
      [deadLock, living, renewedElsewhere].sort(),
    );
    expect(lines).toEqual([
      {
        level: "info",
        fields: expect.objectContaining({
          dir,
          runs: expect.arrayContaining([
            {
              pid: dead,
              host: hostname(),
              graph: "/home/me/g.graph.ts",
              why: "its process is gone",
            },
          ]),
        }),
        message:
          "removed the registrations of runs that ended without removing them (killed), which baton status listed as dead runs",
      },
    ]);
  });

  it("says nothing when nothing is gone, and a registration it cannot remove is a warning, not an error", async () => {
    const dir = runDir();
    const quiet = keptLog();
    expect(await removeGoneRegistrations(join(dir, "absent"), quiet)).toEqual([]);
    expect(quiet.lines).toEqual([]);
    const dead = await deadPid();
    forge(dir, `${STEM}-${dead}-00000001.run`, { pid: dead });
    const real = nodeFiles();
    const files: Files = {
      ...real,
      remove: async (path) => {
        throw Object.assign(new Error(`EACCES: permission denied, unlink '${path}'`), {
          code: "EACCES",
          syscall: "unlink",
          path,
        });
      },
      owner: async () => ({ uid: 4321, self: false }),
    };
    const { lines, logger } = keptLog();
    expect(await removeGoneRegistrations(dir, { files, logger })).toEqual([]);
    expect(lines.map(({ level, message }) => [level, message])).toEqual([
      [
        "warn",
        "could not remove the registrations of runs that are gone, which baton status lists as dead runs until baton reap removes them",
      ],
    ]);
  });
});
