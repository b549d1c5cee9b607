/**
 * The teardown's probe of the local process table (`readTable`) on real processes that end
 * while it reads them. Every process the test starts is killed by its pid when the test ends.
 */
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { ProcView } from "../../src/machines/teardown.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcHandle } from "../../src/runtime/ports.ts";
import { readTable } from "../../src/runtime/tearDown.ts";
import { emptyTeardownTarget } from "../fixtures/emptyTeardownTarget.ts";

const procs = nodeProcs();
const loops: ProcHandle[] = [];

afterEach(async () => {
  for (const loop of loops.splice(0)) {
    // Each loop leads its own group: its sleep goes with it.
    procs.signalGroup(loop.pid, "SIGKILL");
    await loop.exited;
  }
});

describe("the teardown's probe of the local process table", () => {
  it("never reports a process that ends while it is read as alive without its environment", async () => {
    const deployment = `dep-${randomBytes(6).toString("hex")}`;
    const stateDir = "/tmp/baton-teardown-table";
    // Ten loops of processes that live 20 ms, each carrying the deployment: a scan of the
    // table reads many of them as they end.
    for (let i = 0; i < 10; i++) {
      loops.push(
        procs.spawn({
          argv: ["/bin/sh", "-c", "while :; do sleep 0.02; done"],
          env: {
            PATH: process.env.PATH ?? "/usr/bin:/bin",
            BATON_DEPLOYMENT: deployment,
            BATON_STATE_DIR: stateDir,
          },
          newGroup: true,
        }),
      );
    }
    const target = emptyTeardownTarget(deployment, stateDir);
    const ours = new Set(loops.map(({ pid }) => pid));
    const entries: ProcView[] = [];
    for (let seq = 1; seq <= 200; seq++) {
      const table = readTable(
        procs,
        { type: "probe", seq, groups: [], pids: [], scan: true },
        target,
      );
      // The loops' sleeps: in the loops' groups, not the loops themselves.
      entries.push(...table.filter((proc) => ours.has(proc.pgid) && !ours.has(proc.pid)));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(entries.length).toBeGreaterThan(0);
    // Each is the test's own, its environment readable and carrying the deployment while it
    // lives: one read as it ended is gone, or a zombie, not alive with another environment or
    // none; one still running its exit (its memory, environment with it, maybe released
    // already) is alive with its environment unknown, never empty.
    const misread = entries.filter(
      ({ state, env, exiting }) =>
        env?.BATON_DEPLOYMENT !== deployment &&
        !(env === undefined && exiting === true) &&
        state !== "zombie" &&
        state !== "dead",
    );
    expect(misread.map(({ pid, state, env, exiting }) => ({ pid, state, env, exiting }))).toEqual(
      [],
    );
  });
});
