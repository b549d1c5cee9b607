import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  ENDED_DEPLOYMENT_KEPT_MS,
  KEEP_ENDED_DEPLOYMENTS,
  pruneDeploymentLogs,
} from "../../src/runtime/deploymentLogs.ts";
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
});
