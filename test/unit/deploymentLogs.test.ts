import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.ts";
import {
  checkEndedLogsRetention,
  ENDED_DEPLOYMENT_KEPT_MS,
  endedLogsRetention,
  KEEP_ENDED_DEPLOYMENTS,
  parseEndedLogsRetention,
  pruneDeploymentLogs,
} from "../../src/runtime/deploymentLogs.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";
import type { Files } from "../../src/runtime/ports.ts";
import { DAY, deploymentFolder, endedDeployments } from "../fixtures/endedDeployments.ts";

const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const now = Date.now();
const silent = pino({ level: "silent" });

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-deployment-logs-"));
  dirs.push(dir);
  return dir;
}

describe("the logs of ended deployments", () => {
  it("removes those that ended over a week ago beyond the newest 20, oldest first", async () => {
    const root = stateDir();
    const folders = endedDeployments(root, KEEP_ENDED_DEPLOYMENTS + 3, 30, now);

    const removed = await pruneDeploymentLogs(root, { now, logger: silent });

    expect(removed).toEqual(folders.slice(0, 3));
    expect(readdirSync(root).sort()).toEqual(
      folders.slice(3).map((dir) => dir.slice(root.length + 1)),
    );
  });

  it("keeps every deployment that ended in the last week, however many newer there are", async () => {
    const root = stateDir();
    const folders = endedDeployments(
      root,
      KEEP_ENDED_DEPLOYMENTS + 5,
      ENDED_DEPLOYMENT_KEPT_MS / DAY - 1,
      now,
    );

    expect(await pruneDeploymentLogs(root, { now, logger: silent })).toEqual([]);
    expect(readdirSync(root)).toHaveLength(folders.length);
  });

  it("never removes a deployment with a control file, a file of the user's, or anything else", async () => {
    const root = stateDir();
    endedDeployments(root, KEEP_ENDED_DEPLOYMENTS, 30, now);
    const old = now - 60 * DAY;
    const kept = [
      deploymentFolder(root, "live", old, ["manifest.json", "lease.json", "rank-0.log"]),
      deploymentFolder(root, "claiming", old, ["lease.json"]),
      deploymentFolder(root, "cleared-half", old, ["rank-0.marker.json", "rank-0.log"]),
      deploymentFolder(root, "torn", old, [".lease.json.42.tmp", "rank-0.log"]),
      deploymentFolder(root, "notes", old, ["rank-0.log", "notes.txt"]),
      deploymentFolder(root, "empty", old, []),
      deploymentFolder(root, "outcome-only", old, ["outcome.json"]),
      // Its folder is old but a log was written just now: a launch of that name took it over.
      deploymentFolder(root, "relaunched", old),
    ];
    writeFileSync(join(root, "relaunched", "rank-0.log"), "a new line\n", { flag: "a" });
    utimesSync(join(root, "relaunched"), new Date(old), new Date(old));
    writeFileSync(join(root, "graph-1234.lock"), "{}");
    const oldest = deploymentFolder(root, "dep-gone", old - DAY);

    const removed = await pruneDeploymentLogs(root, { now, logger: silent });

    expect(removed).toEqual([oldest]);
    for (const dir of kept) expect(readdirSync(root)).toContain(dir.slice(root.length + 1));
    expect(readdirSync(root)).toContain("graph-1234.lock");
  });

  it("does nothing where there is no state dir yet", async () => {
    const missing = join(stateDir(), "no-such-dir");
    expect(await pruneDeploymentLogs(missing, { now, logger: silent })).toEqual([]);
  });

  it("keeps as many and as long as it is told, or everything", async () => {
    const root = stateDir();
    const folders = endedDeployments(root, 6, 3, now);
    const keepAll = await pruneDeploymentLogs(root, { now, logger: silent, retention: false });
    expect(keepAll).toEqual([]);
    // They ended three days ago: four days keep them all; a day, only the newest two.
    const fourDays = { keep: 2, keptMs: 4 * DAY };
    expect(await pruneDeploymentLogs(root, { now, logger: silent, retention: fourDays })).toEqual(
      [],
    );
    const oneDay = { keep: 2, keptMs: DAY };
    expect(await pruneDeploymentLogs(root, { now, logger: silent, retention: oneDay })).toEqual(
      folders.slice(0, 4),
    );
    expect(readdirSync(root).sort()).toEqual(
      folders.slice(4).map((dir) => dir.slice(root.length + 1)),
    );
    const last = { keep: 1, keptMs: 0 };
    expect(await pruneDeploymentLogs(root, { now, logger: silent, retention: last })).toEqual(
      folders.slice(4, 5),
    );
    expect(readdirSync(root)).toEqual([folders[5]!.slice(root.length + 1)]);
  });

  it("goes through the Files port, and never removes another user's deployments", async () => {
    const root = stateDir();
    const folders = endedDeployments(root, 4, 30, now);
    const theirs = folders[0]!;
    const real = nodeFiles();
    const calls: string[] = [];
    const files: Files = {
      ...real,
      owner: async (path) => (path === theirs ? { uid: 4242, self: false } : real.owner(path)),
      removeDir: (dir) => {
        calls.push(dir);
        return real.removeDir(dir);
      },
    };
    const removed = await pruneDeploymentLogs(root, {
      now,
      logger: silent,
      files,
      retention: { keep: 1, keptMs: 0 },
    });
    // Theirs is not counted among the newest either: the newest of the others stays.
    expect(removed).toEqual(folders.slice(1, 3));
    expect(calls).toEqual(folders.slice(1, 3));
    expect(readdirSync(root).sort()).toEqual(
      [theirs, folders[3]!].map((dir) => dir.slice(root.length + 1)),
    );
  });

  it("reads a retention as the flag and the variable take it, and refuses anything else, saying how", () => {
    expect(parseEndedLogsRetention("5", "--keep-ended-logs")).toEqual({
      keep: 5,
      keptMs: ENDED_DEPLOYMENT_KEPT_MS,
    });
    expect(parseEndedLogsRetention("5,12h", "--keep-ended-logs")).toEqual({
      keep: 5,
      keptMs: 12 * 60 * 60 * 1000,
    });
    expect(parseEndedLogsRetention("1,0", "--keep-ended-logs")).toEqual({ keep: 1, keptMs: 0 });
    expect(parseEndedLogsRetention("forever", "--keep-ended-logs")).toBe(false);
    expect(parseEndedLogsRetention("10000", "--keep-ended-logs")).toEqual({
      keep: 10_000,
      keptMs: ENDED_DEPLOYMENT_KEPT_MS,
    });
    const bad = ["", "0,0", "-1", "5,7", "5,7d,1", "lots", "5,-1d", "1e3", "all", "10001"];
    for (const text of [...bad, "999999999", "1000000000000"]) {
      expect(() => parseEndedLogsRetention(text, "--keep-ended-logs")).toThrow(
        new ConfigError(
          `--keep-ended-logs must be COUNT[,AGE] (keep the logs of the newest COUNT ended deployments, 1 to 10000, and of any that ended within AGE, such as 7d or 12h, or 0; default 20,7d) or forever (keep them all), not ${JSON.stringify(text)}`,
        ),
      );
    }
    expect(endedLogsRetention({})).toEqual({ keep: 20, keptMs: ENDED_DEPLOYMENT_KEPT_MS });
    expect(endedLogsRetention({ BATON_KEEP_ENDED_LOGS: "forever" })).toBe(false);
    expect(() => endedLogsRetention({ BATON_KEEP_ENDED_LOGS: "7d" })).toThrow(
      /^BATON_KEEP_ENDED_LOGS must be COUNT\[,AGE\]/,
    );
  });

  it("refuses a retention given in code that is not one", () => {
    checkEndedLogsRetention('job kind "train"', false);
    checkEndedLogsRetention('job kind "train"', { keep: 1, keptMs: 0 });
    expect(() => checkEndedLogsRetention('job kind "train"', true)).toThrow(
      'job kind "train": keepEndedLogs must be { keep, keptMs } or false (keep them all), not true',
    );
    expect(() => checkEndedLogsRetention('job kind "train"', { keep: 5 })).toThrow(
      'job kind "train": keepEndedLogs.keptMs must be a whole number of 0 or more, not undefined',
    );
    expect(() => checkEndedLogsRetention('job kind "train"', { keep: 0, keptMs: 0 })).toThrow(
      /keepEndedLogs\.keep must be a whole number from 1 to 10000, not 0/,
    );
    expect(() => checkEndedLogsRetention('job kind "train"', { keep: 1e12, keptMs: 0 })).toThrow(
      /keepEndedLogs\.keep must be a whole number from 1 to 10000, not 1000000000000/,
    );
  });
});
