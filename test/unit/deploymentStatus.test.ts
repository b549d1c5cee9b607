/**
 * `readDeploymentStatuses` on a shared state dir: another user's deployment, whose files this
 * user may not read (the Files port answers EACCES, as Node does for a 0600 file of another
 * user; tests may run as root, where a chmod denies nothing).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { readDeploymentStatuses } from "../../src/rank/deploymentStatus.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import { filesDenying } from "../fixtures/filesDenying.ts";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("readDeploymentStatuses", () => {
  it("reports another user's deployment as unreadable, naming its owner, instead of failing", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "baton-shared-"));
    dirs.push(stateDir);
    const theirs = deploymentPaths(stateDir, "dep-theirs000000");
    const closed = deploymentPaths(stateDir, "dep-closed000000");
    for (const paths of [theirs, closed]) {
      await mkdir(paths.dir, { recursive: true });
      await writeFile(paths.manifest, "{}");
    }
    const statuses = await readDeploymentStatuses(
      {
        files: filesDenying((path) => path === theirs.manifest || path === closed.dir),
        procs: nodeProcs(),
        clock: { now: () => Date.now() },
      },
      stateDir,
    );
    const owner = process.getuid?.() === 0 ? "root" : undefined;
    expect(statuses.map((dep) => [dep.deployment, dep.state])).toEqual([
      ["dep-closed000000", "unreadable"],
      ["dep-theirs000000", "unreadable"],
    ]);
    for (const dep of statuses) {
      expect(dep.reason).toContain(`run \`baton status --state-dir ${stateDir}\` as`);
      if (owner !== undefined) expect(dep.reason).toContain(`its files are ${owner}'s`);
      expect(dep.ranks).toEqual([]);
    }
    expect(statuses[0]?.problems).toEqual([`cannot list ${closed.dir}: permission denied`]);
    expect(statuses[1]?.problems).toEqual([`cannot read ${theirs.manifest}: permission denied`]);
  });
});
