/**
 * `baton run`, `worker`, `launch`, `sim` and `reap` stopped while they load baton's own
 * modules, before they have read their flags: one line says what had not begun, and the
 * command exits with the signal's code. A preloaded fixture (`heldWhileLoading.mjs`) holds the
 * process at the moment it listens for a signal, so the signal comes then, however fast the
 * machine. Real processes, stopped by pid when the test ends.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LOADING_STOP_SIGNALS } from "../../bin/stoppedWhileLoading.mjs";
import { STOP_SIGNALS } from "../../src/cli/signalExit.ts";
import { type BatonExit, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { within } from "../fixtures/within.ts";

afterEach(stopBatons);

const HOLD = pathToFileURL(join(import.meta.dirname, "../fixtures/heldWhileLoading.mjs")).href;

/**
 * Runs `baton …args`, held at its `holdAt`-th listener for SIGINT, then sends it `signal`;
 * `markers` is the folder the fixture marks. Settles with how the command ended.
 */
async function stoppedAt(
  args: string[],
  signal: NodeJS.Signals,
  markers: string,
  holdAt = 1,
): Promise<BatonExit> {
  const baton = startBaton(args, {
    env: {
      BATON_TEST_MARKERS: markers,
      BATON_TEST_HOLD_AT: String(holdAt),
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${HOLD}`,
    },
  });
  await within(
    (async () => {
      while (!existsSync(join(markers, "listening"))) await sleep(20);
    })(),
    60_000,
    `baton ${args[0]}'s listening for a signal`,
  );
  process.kill(baton.child.pid!, signal);
  writeFileSync(join(markers, "signalled"), "");
  return baton.exit;
}

describe("baton stopped while baton loads", () => {
  it.each([
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const)(
    "baton run on %s says nothing was run, and exits %i",
    async (signal, exitCode) => {
      const markers = tempDir("baton-loading-");
      const store = join(markers, "store");
      const args = ["run", "examples/pipeline.graph.ts", "--store", store];
      const { code, stdout, stderr } = await stoppedAt(args, signal, markers);
      expect(stderr).toBe(
        `\nstopped (${signal}) before the run started: baton was still loading, so nothing was run; the same baton run again starts the run\n`,
      );
      expect(code).toBe(exitCode);
      expect(stdout).toBe("");
      expect(existsSync(store)).toBe(false);
    },
    90_000,
  );

  it.each([
    {
      // What a pool sends a worker it stops while the worker starts.
      command: "worker",
      args: () => ["--connect", "ws://127.0.0.1:1", "--jobs", "examples/pipeline.graph.ts"],
      signal: "SIGTERM",
      exitCode: 143,
      says: "before the worker connected: it took no job; the same baton worker again connects and takes jobs",
    },
    {
      command: "launch",
      args: (state: string) => ["--world", "2", "--state-dir", state, "--", "sleep", "60"],
      signal: "SIGINT",
      exitCode: 130,
      says: "before any rank started: baton was still loading, so nothing was launched; the same baton launch again launches the group",
    },
    {
      command: "sim",
      args: () => ["--seeds", "1..3"],
      signal: "SIGHUP",
      exitCode: 129,
      says: "before the first seed ran: baton was still loading, so nothing was simulated; the same baton sim again runs the seeds",
    },
    {
      command: "reap",
      args: (state: string) => ["--state-dir", state],
      signal: "SIGQUIT",
      exitCode: 131,
      says: "before the reap started: baton was still loading, so nothing was reaped; the same baton reap again reaps the state dir",
    },
  ] as const)(
    "baton $command on $signal says what had not begun, and exits $exitCode",
    async ({ command, args, signal, exitCode, says }) => {
      const markers = tempDir("baton-loading-");
      const state = join(markers, "state");
      const { code, stdout, stderr } = await stoppedAt([command, ...args(state)], signal, markers);
      expect(stderr).toBe(`\nstopped (${signal}) ${says}\n`);
      expect(code).toBe(exitCode);
      expect(stdout).toBe("");
      expect(existsSync(state)).toBe(false);
    },
    90_000,
  );

  it("leaves a signal to baton launch once it listens itself: it stops the group it began, which started no rank", async () => {
    const markers = tempDir("baton-loading-");
    const stateDir = join(markers, "state");
    const args = ["launch", "--world", "2", "--state-dir", stateDir, "--name", "held"];
    const { code, stderr } = await stoppedAt([...args, "--", "sleep", "60"], "SIGINT", markers, 2);
    expect(stderr).toContain("baton launch: SIGINT: no rank of held was started, and none will be");
    expect(stderr).toContain("baton launch: stopped before any rank started\n");
    expect(stderr).not.toContain("baton was still loading");
    expect(code).toBe(130);
  }, 90_000);

  it("answers the signals the commands answer once loaded", () => {
    expect(LOADING_STOP_SIGNALS).toEqual(STOP_SIGNALS);
  });
});
