import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { deploymentPaths } from "../../src/rank/deploymentPaths.ts";
import { atomicTempTarget } from "../../src/runtime/atomicTempTarget.ts";
import { clearDeployment, controlFiles } from "../../src/runtime/clearDeployment.ts";
import { nodeFiles } from "../../src/runtime/nodeFiles.ts";

const dirs: string[] = [];
/** The lease of another launcher that took the deployment's name over. */
const otherLease = {
  deployment: "dep-abc123def456",
  pid: 4242,
  token: "other",
  renewedAt: 0,
  staleAfterMs: 30_000,
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("atomicTempTarget", () => {
  it("names the file a node, ssh or simulated atomic write was meant to become", () => {
    expect(atomicTempTarget(".rank-1.marker.json.8504.f46acc33a054.tmp")).toBe(
      "rank-1.marker.json",
    );
    expect(atomicTempTarget(".lease.json.4711.tmp")).toBe("lease.json");
    expect(atomicTempTarget(".manifest.json.12.tmp")).toBe("manifest.json");
    expect(atomicTempTarget(".rank-0.ack.json.8504.123456789012.tmp")).toBe("rank-0.ack.json");
  });

  it("is undefined for anything else", () => {
    for (const name of ["rank-1.log", "rank-1.marker.json", ".hidden", ".x.tmp", "a.1.tmp"]) {
      expect(atomicTempTarget(name)).toBeUndefined();
    }
  });
});

/** A temporary state dir with the folder of deployment dep-abc123def456 in it, made. */
function deploymentDir() {
  const stateDir = mkdtempSync(join(tmpdir(), "baton-clear-"));
  dirs.push(stateDir);
  const paths = deploymentPaths(stateDir, "dep-abc123def456");
  mkdirSync(paths.dir);
  return { stateDir, paths };
}

describe("clearDeployment", () => {
  it("removes every control file and the temp files of interrupted writes, and keeps the logs", async () => {
    const { paths } = deploymentDir();
    const names = [
      "manifest.json",
      "lease.json",
      "cancel.json",
      "rank-0.marker.json",
      "rank-0.ack.json",
      "rank-0.log",
      "rank-1.log",
      ".rank-1.marker.json.8504.f46acc33a054.tmp",
      ".lease.json.8504.0a1b2c3d4e5f.tmp",
      ".rank-1.log.8504.0a1b2c3d4e5f.tmp",
      "outcome.json",
      // A launcher killed while it rewrote its outcome record.
      ".outcome.json.8504.0a1b2c3d4e5f.tmp",
      "notes.txt",
    ];
    for (const name of names) writeFileSync(join(paths.dir, name), "{}");

    await clearDeployment(nodeFiles(), paths);

    expect(readdirSync(paths.dir).sort()).toEqual([
      ".rank-1.log.8504.0a1b2c3d4e5f.tmp",
      "notes.txt",
      "outcome.json",
      "rank-0.log",
      "rank-1.log",
    ]);
  });

  it("removes the deployment's folder when only control files were in it, and keeps it under a kept lease", async () => {
    const { stateDir, paths } = deploymentDir();
    const names = ["manifest.json", "lease.json", "rank-1.marker.json", "rank-1.ack.json"];
    for (const name of names) writeFileSync(join(paths.dir, name), "{}");

    await clearDeployment(nodeFiles(), paths, { keepLease: true });
    expect(readdirSync(paths.dir)).toEqual(["lease.json"]);

    await clearDeployment(nodeFiles(), paths);
    expect(readdirSync(stateDir)).toEqual([]);
    // Nothing left to clear: no error.
    await clearDeployment(nodeFiles(), paths);
  });

  it("releases a held lease only once the other files are gone, then removes it and its renewal's temp file", async () => {
    const { stateDir, paths } = deploymentDir();
    // A renewal in flight: its temp file is written, not yet renamed.
    const names = [
      "manifest.json",
      "lease.json",
      ".lease.json.8504.0a1b2c3d4e5f.tmp",
      "rank-0.marker.json",
    ];
    for (const name of names) writeFileSync(join(paths.dir, name), "{}");
    const atRelease: string[][] = [];
    const lease = {
      release: async () => void atRelease.push(readdirSync(paths.dir).sort()),
      takenBy: async () => undefined,
    };

    await clearDeployment(nodeFiles(), paths, { lease });
    expect(atRelease[0]).toEqual([".lease.json.8504.0a1b2c3d4e5f.tmp", "lease.json"]);
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it("removes nothing when another launcher took the held lease over, and says whose it is", async () => {
    const { paths } = deploymentDir();
    const names = ["lease.json", "manifest.json", "rank-0.marker.json"];
    for (const name of names) writeFileSync(join(paths.dir, name), "{}");
    let released = 0;
    const lease = { release: async () => void released++, takenBy: async () => otherLease };

    expect(await clearDeployment(nodeFiles(), paths, { lease })).toEqual({ takenBy: otherLease });
    expect(released).toBeGreaterThan(0);
    expect(readdirSync(paths.dir).sort()).toEqual(names);
  });

  it("keeps the lease of a launcher that took the name over while the other files went", async () => {
    const { paths } = deploymentDir();
    for (const name of ["lease.json", "manifest.json", "rank-0.marker.json"]) {
      writeFileSync(join(paths.dir, name), "{}");
    }
    // This launcher's at the clear's start; the other's once it looks again.
    let looks = 0;
    const lease = {
      release: async () => {},
      takenBy: async () => (looks++ === 0 ? undefined : otherLease),
    };

    expect(await clearDeployment(nodeFiles(), paths, { lease })).toEqual({
      takenDuring: otherLease,
    });
    expect(readdirSync(paths.dir)).toEqual(["lease.json"]);
  });

  it("releases a held lease when a removal fails, and keeps the files", async () => {
    const { paths } = deploymentDir();
    for (const name of ["manifest.json", "lease.json"]) writeFileSync(join(paths.dir, name), "{}");
    let released = 0;
    const lease = { release: async () => void released++, takenBy: async () => undefined };
    const refusing = { ...nodeFiles(), remove: async () => Promise.reject(new Error("EIO")) };

    await expect(clearDeployment(refusing, paths, { lease })).rejects.toThrow("EIO");
    expect(released).toBeGreaterThan(0);
    expect(readdirSync(paths.dir).sort()).toEqual(["lease.json", "manifest.json"]);
  });
});

describe("clearDeployment's last step, the folder's removal", () => {
  /**
   * The deployment's folder as a symbolic link to `target`, a folder holding `names`: its
   * files go through the link, and `rmdir` of the link fails (ENOTDIR), as root too.
   */
  function linkedDeployment(names: string[]) {
    const { stateDir, paths } = deploymentDir();
    const target = join(stateDir, "elsewhere");
    mkdirSync(target);
    for (const name of names) writeFileSync(join(target, name), "{}");
    rmSync(paths.dir, { recursive: true });
    symlinkSync(target, paths.dir);
    return { paths, target };
  }

  it("does not fail the clear when the folder, left empty, cannot be removed: it names it and why", async () => {
    const { paths, target } = linkedDeployment(["manifest.json", "lease.json"]);
    const cleared = await clearDeployment(nodeFiles(), paths);
    expect(readdirSync(target)).toEqual([]);
    expect(cleared).toEqual({
      folderNotRemoved: {
        dir: paths.dir,
        reason: "not a directory (ENOTDIR)",
      },
    });
  });

  it("says nothing of a folder with something left in it, which stays whatever refused its removal", async () => {
    const { paths, target } = linkedDeployment(["manifest.json", "rank-0.log", "outcome.json"]);
    expect(await clearDeployment(nodeFiles(), paths)).toEqual({});
    expect(readdirSync(target).sort()).toEqual(["outcome.json", "rank-0.log"]);
  });

  it("is quiet when it removed the folder", async () => {
    const { stateDir, paths } = deploymentDir();
    writeFileSync(paths.lease, "{}");
    expect(await clearDeployment(nodeFiles(), paths)).toEqual({});
    expect(readdirSync(stateDir)).toEqual([]);
  });
});

describe("controlFiles", () => {
  it("picks the control files and their temp files out of a directory's entries", () => {
    const paths = deploymentPaths("/state", "dep-abc123def456");
    expect(
      controlFiles(paths, [
        "lease.json",
        "rank-0.log",
        ".rank-1.ack.json.7.tmp",
        "rank-2.marker.json",
        ".rank-0.log.8504.0a1b2c3d4e5f.tmp",
        "outcome.json",
        ".outcome.json.8504.0a1b2c3d4e5f.tmp",
        "notes.txt",
      ]),
    ).toEqual([
      "lease.json",
      ".rank-1.ack.json.7.tmp",
      "rank-2.marker.json",
      ".outcome.json.8504.0a1b2c3d4e5f.tmp",
    ]);
  });
});
