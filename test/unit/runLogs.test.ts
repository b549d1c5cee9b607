import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  endUnstartedRunLogs,
  markRunLogsEnded,
  pruneRunLogs,
  runLogsDir,
} from "../../src/runtime/runLogs.ts";

const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const DAY = 24 * 60 * 60 * 1000;
const now = Date.parse("2026-12-04T12:00:00.000Z");
const silent = pino({ level: "silent" });

/** A logs/ folder holding one run folder per start time, each written at `writtenAt`. */
function logsRoot(runs: { startedAt: number; writtenAt: number }[]): string {
  const root = mkdtempSync(join(tmpdir(), "baton-run-logs-"));
  dirs.push(root);
  for (const [n, run] of runs.entries()) {
    const dir = runLogsDir(root, run.startedAt, `id${n}`);
    mkdirSync(dir);
    const log = join(dir, "worker-1.log");
    writeFileSync(log, "{}\n");
    const at = new Date(run.writtenAt);
    utimesSync(log, at, at);
    utimesSync(dir, at, at);
  }
  return root;
}

describe("run logs", () => {
  it("names a run's folder after its start, so that names sort by start, and its id", () => {
    expect(runLogsDir("store/logs", Date.parse("2026-12-04T13:50:01.123Z"), "k3x9")).toBe(
      "store/logs/2026-12-04T13-50-01-123Z-k3x9",
    );
    const names = [9, 10, 100].map((s) => runLogsDir("", Date.UTC(2026, 0, 1, 0, 0, s), "a"));
    expect([...names].sort()).toEqual(names);
  });

  it("removes all but the newest folders, oldest first, and leaves other entries alone", async () => {
    const root = logsRoot(
      [5, 4, 3, 2].map((daysAgo) => ({
        startedAt: now - daysAgo * DAY,
        writtenAt: now - daysAgo * DAY,
      })),
    );
    writeFileSync(join(root, "worker-1.log"), "a log of an older version\n");
    mkdirSync(join(root, "mine"));
    const before = readdirSync(root).sort();

    const removed = await pruneRunLogs(root, { keep: 2, now, logger: silent });

    expect(removed).toEqual([join(root, before[0]!), join(root, before[1]!)]);
    expect(readdirSync(root).sort()).toEqual(before.slice(2));
  });

  it("keeps an old run's folder written in the last day: that run may still be going", async () => {
    const root = logsRoot([
      { startedAt: now - 3 * DAY, writtenAt: now - 60_000 },
      { startedAt: now - 2 * DAY, writtenAt: now - 2 * DAY },
      { startedAt: now - DAY, writtenAt: now - DAY },
    ]);
    const [long, short] = readdirSync(root).sort();

    const removed = await pruneRunLogs(root, { keep: 1, now, logger: silent });

    expect(removed).toEqual([join(root, short!)]);
    expect(readdirSync(root)).toContain(long);
  });

  it("removes the folder of a run marked ended however recently it was written", async () => {
    const root = logsRoot([
      { startedAt: now - 3 * 60_000, writtenAt: now - 2 * 60_000 },
      { startedAt: now - 2 * 60_000, writtenAt: now - 60_000 },
      { startedAt: now - 60_000, writtenAt: now - 1_000 },
    ]);
    const [ended, going, newest] = readdirSync(root).sort();
    await markRunLogsEnded(join(root, ended!), silent);
    // A run that started no worker has no folder, and marking it makes none.
    await markRunLogsEnded(join(root, "2026-12-04T11-59-59-000Z-none"), silent);

    const removed = await pruneRunLogs(root, { keep: 1, now, logger: silent });

    expect(removed).toEqual([join(root, ended!)]);
    expect(readdirSync(root).sort()).toEqual([going, newest]);
  });

  it("does nothing where there is no logs/ yet", async () => {
    expect(
      await pruneRunLogs(join(tmpdir(), "baton-no-such-dir"), { keep: 1, now, logger: silent }),
    ).toEqual([]);
  });

  it("removes the folder of a run that never started when its run.log is empty, else marks it ended", async () => {
    const root = mkdtempSync(join(tmpdir(), "baton-run-logs-"));
    dirs.push(root);
    const [empty, said] = [runLogsDir(root, now, "empty"), runLogsDir(root, now, "said")];
    for (const dir of [empty, said]) mkdirSync(dir);
    writeFileSync(join(empty, "run.log"), "");
    writeFileSync(join(said, "run.log"), '{"msg":"took over the lock"}\n');

    await endUnstartedRunLogs(empty, silent);
    await endUnstartedRunLogs(said, silent);

    expect(readdirSync(root)).toEqual([said.slice(root.length + 1)]);
    expect(readdirSync(said).sort()).toEqual(["ended", "run.log"]);
  });
});
