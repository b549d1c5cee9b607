/**
 * `baton run` stopped while it loads baton's own modules, before it has read its flags: one
 * line says that nothing was run, and it exits with the signal's code. A preloaded fixture
 * (`heldWhileLoading.mjs`) holds the process at the moment it first listens for a signal,
 * so the signal comes then, however fast the machine. Real processes, stopped by pid when the
 * test ends.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { LOADING_STOP_SIGNALS } from "../../bin/stoppedWhileLoading.mjs";
import { STOP_SIGNALS } from "../../src/cli/signalExit.ts";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { tempDir } from "../fixtures/tempDir.ts";
import { within } from "../fixtures/within.ts";

afterEach(stopBatons);

const HOLD = pathToFileURL(join(import.meta.dirname, "../fixtures/heldWhileLoading.mjs")).href;

describe("baton run stopped while baton loads", () => {
  it.each([
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const)(
    "on %s says nothing was run, and exits %i",
    async (signal, exitCode) => {
      const markers = tempDir("baton-loading-");
      const store = join(markers, "store");
      const baton = startBaton(["run", "examples/pipeline.graph.ts", "--store", store], {
        env: {
          BATON_TEST_MARKERS: markers,
          NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${HOLD}`,
        },
      });
      await within(
        (async () => {
          while (!existsSync(join(markers, "listening"))) await sleep(20);
        })(),
        60_000,
        "baton run's first listening for a signal",
      );
      process.kill(baton.child.pid!, signal);
      writeFileSync(join(markers, "signalled"), "");
      const { code, stdout, stderr } = await baton.exit;
      expect(stderr).toBe(
        `\nstopped (${signal}) before the run started: baton was still loading, so nothing was run; the same baton run again starts the run\n`,
      );
      expect(code).toBe(exitCode);
      expect(stdout).toBe("");
      expect(existsSync(store)).toBe(false);
    },
    90_000,
  );

  it("answers the signals the command answers once loaded", () => {
    expect(LOADING_STOP_SIGNALS).toEqual(STOP_SIGNALS);
  });
});
