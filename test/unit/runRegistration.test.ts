import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LOCK_STALE_MS } from "../../src/runtime/graphLock.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { registerRun, removeGoneRegistrations } from "../../src/runtime/runRegistration.ts";
import { deadPid } from "../fixtures/deadPid.ts";
import { forgeRunRecord } from "../fixtures/forgeRunRecord.ts";

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

/** A logger that keeps what it says. */
function keptLog() {
  const lines: { level: string; fields: object; message: string }[] = [];
  const keep = (level: string) => (fields: object, message: string) =>
    lines.push({ level, fields, message });
  return { lines, logger: { info: keep("info"), warn: keep("warn") } };
}

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
    const living = forgeRunRecord(dir, live);
    const killed = forgeRunRecord(dir, { pid: dead });
    const reused = forgeRunRecord(dir, { pid: live.pid, argv: ["node", "another", "program"] });
    const renewedElsewhere = forgeRunRecord(dir, { pid: 4242, host: "login2.example" });
    const staleElsewhere = forgeRunRecord(
      dir,
      { pid: 4343, host: "login2.example" },
      { ageMs: LOCK_STALE_MS + 5_000 },
    );
    const deadLock = forgeRunRecord(
      dir,
      { pid: dead, withoutLock: undefined },
      { name: "graph-fedcba9876543210.lock" },
    );
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
    forgeRunRecord(dir, { pid: dead });
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

describe("registerRun", () => {
  /** A folder holding a graph module, with no `run/` folder yet. */
  function graphFolder(): { dir: string; graph: string } {
    const dir = mkdtempSync(join(tmpdir(), "baton-registration-"));
    dirs.push(dir);
    const graph = join(dir, "g.graph.ts");
    writeFileSync(graph, "export default [];\n");
    return { dir, graph };
  }

  it("removes on release the run/ folder it made, once empty; one that was there before stays", async () => {
    const { dir, graph } = graphFolder();
    const made = join(dir, "made", "run");
    const record = await registerRun(made, graph, { withoutLock: "--no-store" });
    expect(readdirSync(made)).toEqual([expect.stringMatching(/\.run$/)]);
    await record.release();
    expect(existsSync(made)).toBe(false);
    expect(readdirSync(join(dir, "made"))).toEqual([]);

    const there = join(dir, "there", "run");
    mkdirSync(there, { recursive: true });
    await (await registerRun(there, graph, { withoutLock: "--no-store" })).release();
    expect(readdirSync(there)).toEqual([]);
  });

  it("keeps the folder it made while another run's registration is in it", async () => {
    const { dir, graph } = graphFolder();
    const run = join(dir, "run");
    const first = await registerRun(run, graph, { withoutLock: "--no-store" });
    const second = await registerRun(run, graph, { withoutLock: "--store-read-only" });
    await first.release();
    expect(readdirSync(run).map((name) => join(run, name))).toEqual([second.path]);
    await second.release();
    expect(readdirSync(run)).toEqual([]);
  });

  it("creates its file again when the folder went between being made and the file (another run ending)", async () => {
    const { dir, graph } = graphFolder();
    const run = join(dir, "run");
    const real = nodeFiles();
    let met = 0;
    const files: Files = {
      ...real,
      createExclusive: async (path, data, mode) => {
        met += 1;
        if (met === 1) {
          throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), {
            code: "ENOENT",
            path,
          });
        }
        return real.createExclusive(path, data, mode);
      },
    };
    const record = await registerRun(run, graph, { files, withoutLock: "--no-store" });
    expect(met).toBe(2);
    expect(readdirSync(run).map((name) => join(run, name))).toEqual([record.path]);
    await record.release();
  });
});
