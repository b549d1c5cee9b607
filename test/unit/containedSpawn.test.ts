/**
 * Where this process goes to start processes in cgroups: `nodeProcs().spawn` with a cgroup moves
 * it back to its own cgroup after each fork (the one `containment` found, not looked up again in
 * /proc/self/cgroup every time), and only that fork takes it into a local worker's cgroup:
 * `create` proves a pool's cgroup usable once, and makes those below it without moving in.
 * Every process started is stopped by its pid, and the cgroups removed, when the test ends.
 */
import * as fs from "node:fs";
import { basename, dirname, join } from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { ownCgroupDir } from "../../src/runtime/cgroupContainment.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcHandle } from "../../src/runtime/ports.ts";
import { canContain } from "../fixtures/canContain.ts";

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs")>();
  return {
    ...actual,
    readFileSync: vi.fn(actual.readFileSync),
    writeFileSync: vi.fn(actual.writeFileSync),
  };
});

const procs = nodeProcs();
const started: ProcHandle[] = [];
const cgroups: string[] = [];
const writes = vi.mocked(fs.writeFileSync);

afterEach(async () => {
  writes.mockRestore();
  for (const handle of started.splice(0)) {
    procs.signal(handle.pid, "SIGKILL");
    await handle.exited;
  }
  for (const cgroup of cgroups.splice(0)) {
    for (const pid of procs.containment?.members(cgroup) ?? []) {
      if (pid !== process.pid) procs.signal(pid, "SIGKILL");
    }
    for (let i = 0; i < 100 && procs.containment?.remove(cgroup) === false; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
});

const usable = canContain(procs, "spawn");

/** The cgroups this process was moved into by writes since the mock was cleared. */
const movedInto = () =>
  writes.mock.calls
    .map(([path]) => String(path))
    .filter((path) => basename(path) === "cgroup.procs")
    .map((path) => dirname(path));

it.skipIf(!usable)("reads this process's cgroup once, not on every contained spawn", async () => {
  const cgroup = procs.containment!.create(`spawn-${process.pid}`);
  cgroups.push(cgroup);
  const ownBefore = fs.readFileSync("/proc/self/cgroup", "utf8");
  const reads = vi.mocked(fs.readFileSync);
  reads.mockClear();
  for (let i = 0; i < 3; i++) {
    started.push(procs.spawn({ argv: ["sleep", "30"], newGroup: true, cgroup }));
  }
  const ownReads = reads.mock.calls.filter(([path]) => path === "/proc/self/cgroup");
  expect(ownReads).toEqual([]);
  expect(procs.containment!.members(cgroup)?.sort()).toEqual(
    started.map((handle) => handle.pid).sort(),
  );
  expect(fs.readFileSync("/proc/self/cgroup", "utf8")).toBe(ownBefore);
});

it.skipIf(!usable)(
  "proves a pool's cgroup once: its workers' cgroups are made without moving this process in",
  () => {
    const own = dirname(join(ownCgroupDir()!, "cgroup.procs"));
    writes.mockClear();
    const pool = procs.containment!.create(`spawn-pool-${process.pid}`);
    cgroups.push(pool);
    expect(movedInto()).toEqual([pool, own]);

    writes.mockClear();
    const workers = [1, 2, 3].map((n) =>
      procs.containment!.create(`spawn-pool-${process.pid}/local-${n}`),
    );
    expect(movedInto()).toEqual([]);
    for (const cgroup of workers) {
      started.push(procs.spawn({ argv: ["sleep", "30"], newGroup: true, cgroup }));
    }
    // Only the fork of each worker takes this process into the worker's cgroup, and back.
    expect(movedInto()).toEqual(workers.flatMap((cgroup) => [cgroup, own]));
    expect(workers.map((cgroup) => procs.containment!.members(cgroup))).toEqual(
      started.map((handle) => [handle.pid]),
    );
  },
);

it.skipIf(!usable)(
  "kills what it started and says so when this process cannot move back to its own cgroup",
  async () => {
    const own = ownCgroupDir()!;
    const ownProcs = join(own, "cgroup.procs");
    const cgroup = procs.containment!.create(`spawn-stuck-${process.pid}`);
    cgroups.push(cgroup);
    const actualWrite = writes.getMockImplementation()!;
    writes.mockImplementation((path, data, options) => {
      if (path === ownProcs)
        throw Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
      actualWrite(path, data, options);
    });
    try {
      expect(() => procs.spawn({ argv: ["sleep", "30"], newGroup: true, cgroup })).toThrow(
        new RegExp(
          `^cannot move this process \\(pid ${process.pid}\\) back from the cgroup ${cgroup}, where it started a process, to its own ${own}: cannot write ${ownProcs}: permission denied: [^;]*; the process started there \\(pid \\d+\\) was killed\\. baton does not kill or empty a cgroup this process is in`,
        ),
      );
      let members = procs.containment!.members(cgroup);
      for (let i = 0; i < 250 && members?.join() !== String(process.pid); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        members = procs.containment!.members(cgroup);
      }
      expect(members).toEqual([process.pid]);
    } finally {
      writes.mockRestore();
      fs.writeFileSync(ownProcs, String(process.pid));
    }
  },
);
