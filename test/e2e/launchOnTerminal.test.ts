/**
 * `baton launch` on a terminal, as a user sees it (under script(1), which gives it a
 * pseudo-terminal): its log lines, pretty there, go above its live status line. script is
 * stopped by its pid when the test ends (the launcher then gets SIGHUP and stops its ranks),
 * and the ranks' cgroups are emptied by pid.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ROOT } from "../fixtures/batonCli.ts";
import { onTerminal, stopTerminals } from "../fixtures/onTerminal.ts";
import { cleanUpRanks, tempDir } from "../fixtures/rankStrays.ts";
import { within } from "../fixtures/within.ts";

afterEach(async () => {
  stopTerminals();
  await cleanUpRanks();
});

describe("baton launch on a terminal", () => {
  it("prints its log lines above the status line, where they were glued to its end", async () => {
    const dir = tempDir();
    const launch = onTerminal(
      [
        "launch",
        "--world",
        "2",
        "--state-dir",
        join(dir, "state"),
        "--log-level",
        "info",
        "--",
        process.execPath,
        join(ROOT, "examples/ranks/rank.mjs"),
        "--steps",
        "3",
        "--step-ms",
        "100",
      ],
      dir,
    );
    const { code, out } = await within(launch, 60_000, "the launch on a terminal");
    expect(code, out).toBe(0);
    // Each time the status line was drawn or erased, and each line the terminal kept.
    const pieces = out.split(/\r\n|\r\x1b\[2K/);
    const logged = pieces.filter((piece) => piece.includes("rank group launched"));
    expect(logged, out).toHaveLength(1);
    // Pretty (a time, the level), at the start of a line of its own.
    expect(logged[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] (\x1b\[\d+m)?INFO/);
    // And the status line was there to be printed above.
    expect(pieces.some((piece) => /^2 ranks running: /.test(piece))).toBe(true);
  }, 90_000);
});
