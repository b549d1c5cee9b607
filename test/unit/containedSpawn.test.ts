/**
 * `nodeProcs().spawn` with a cgroup moves the launcher back to its own cgroup after each
 * fork: the one `containment` found, not looked up again in /proc/self/cgroup every time.
 * Every process started is stopped by its pid, and the cgroup removed, when the test ends.
 */
import * as fs from "node:fs";
import { afterEach, expect, it, vi } from "vitest";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcHandle } from "../../src/runtime/ports.ts";
import { canContain } from "../fixtures/canContain.ts";

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs")>();
  return { ...actual, readFileSync: vi.fn(actual.readFileSync) };
});

const procs = nodeProcs();
const started: ProcHandle[] = [];
const cgroups: string[] = [];

afterEach(async () => {
  for (const handle of started.splice(0)) {
    procs.signal(handle.pid, "SIGKILL");
    await handle.exited;
  }
  for (const cgroup of cgroups.splice(0)) procs.containment?.remove(cgroup);
});

const usable = canContain(procs, "spawn");

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
