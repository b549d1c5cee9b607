import { spawnSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { writeDeniedReason } from "../../src/runtime/writeDeniedReason.ts";

const dirs: string[] = [];
/** Files and folders made immutable by a test, made mutable again after it. */
const frozen: string[] = [];

afterEach(() => {
  for (const path of frozen.splice(0)) spawnSync("chattr", ["-i", path]);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A folder of its own, holding the file `kept`. */
function folder(): { dir: string; kept: string } {
  const dir = mkdtempSync(join(tmpdir(), "baton-not-permitted-"));
  dirs.push(dir);
  const kept = join(dir, "kept.lock");
  writeFileSync(kept, "{}");
  return { dir, kept };
}

/** Makes `path` immutable (`chattr +i`), until the test ends. */
function freeze(path: string): void {
  frozen.push(path);
  expect(spawnSync("chattr", ["+i", path]).status).toBe(0);
}

/** Whether this user may make a folder immutable here (root, chattr, a file system that has it). */
const canFreeze = (() => {
  const probe = mkdtempSync(join(tmpdir(), "baton-chattr-"));
  const can = spawnSync("chattr", ["+i", probe]).status === 0;
  spawnSync("chattr", ["-i", probe]);
  rmSync(probe, { recursive: true, force: true });
  return can;
})();

describe("writeDeniedReason, for an EPERM", () => {
  it("names the folder for an entry it may not create in it, the file for one it may not write, both for one it may not remove", () => {
    const { dir, kept } = folder();
    expect(writeDeniedReason("EPERM", "open", join(dir, "new.lock"))).toBe(
      `operation not permitted, though the permissions of ${dir} let this user write there (is it immutable? see lsattr -d ${dir})`,
    );
    expect(writeDeniedReason("EPERM", "mkdir", join(dir, "run", "deeper"))).toBe(
      `operation not permitted, though the permissions of ${dir} let this user write there (is it immutable? see lsattr -d ${dir})`,
    );
    expect(writeDeniedReason("EPERM", "open", kept)).toBe(
      `operation not permitted, though the permissions of ${kept} let this user write it (is it immutable or append-only? see lsattr -d ${kept})`,
    );
    expect(writeDeniedReason("EPERM", "unlink", kept)).toBe(
      `operation not permitted, though the permissions of ${dir} let this user write there (is ${kept} or ${dir} immutable or append-only? see lsattr -d ${kept} ${dir})`,
    );
  });

  it("names a rename's target that is there when its source is gone (a temp file removed after the rename failed)", () => {
    const { dir, kept } = folder();
    expect(writeDeniedReason("EPERM", "rename", join(dir, ".kept.lock.1.ab.tmp"), kept)).toBe(
      `operation not permitted, though the permissions of ${dir} let this user write there (is ${kept} or ${dir} immutable or append-only? see lsattr -d ${kept} ${dir})`,
    );
  });

  it.skipIf(process.getuid?.() === 0)(
    "says what the permissions deny when the file's mode does not let this user write it",
    () => {
      const { kept } = folder();
      chmodSync(kept, 0o444);
      expect(writeDeniedReason("EPERM", "open", kept)).toMatch(
        /^permission denied: .+ may not write it/,
      );
    },
  );

  it.skipIf(!canFreeze)(
    "names the one that is immutable, file or folder, as it is (chattr +i)",
    () => {
      const { dir, kept } = folder();
      freeze(kept);
      expect(writeDeniedReason("EPERM", "unlink", kept)).toBe(
        `operation not permitted: ${kept} is immutable (lsattr -d ${kept} shows an i; chattr -i ${kept}, as root, lifts it)`,
      );
      expect(writeDeniedReason("EPERM", "rename", join(dir, ".kept.lock.1.ab.tmp"), kept)).toBe(
        `operation not permitted: ${kept} is immutable (lsattr -d ${kept} shows an i; chattr -i ${kept}, as root, lifts it)`,
      );
      const run = join(dir, "run");
      mkdirSync(run);
      writeFileSync(join(run, "graph.run"), "{}");
      freeze(run);
      expect(writeDeniedReason("EPERM", "unlink", join(run, "graph.run"))).toBe(
        `operation not permitted: ${run} is immutable (lsattr -d ${run} shows an i; chattr -i ${run}, as root, lifts it)`,
      );
      expect(writeDeniedReason("EPERM", "open", join(run, "new.run"))).toBe(
        `operation not permitted: ${run} is immutable (lsattr -d ${run} shows an i; chattr -i ${run}, as root, lifts it)`,
      );
    },
  );
});

/**
 * What `writeDeniedReason` says, as `nobody` (uid 65534), of the error it meets removing
 * `theirs` and renaming a file of its own onto it (a lock replaced as `writeAtomic` does).
 */
function asNobody(theirs: string): string[] {
  const script = `
    import { renameSync, unlinkSync, writeFileSync } from "node:fs";
    import { writeDeniedReason } from ${JSON.stringify(fileURLToPath(new URL("../../src/runtime/writeDeniedReason.ts", import.meta.url)))};
    const theirs = ${JSON.stringify(theirs)};
    const said = ({ code, syscall, path, dest }) => writeDeniedReason(code, syscall, path, dest);
    try { unlinkSync(theirs); } catch (error) { console.log(said(error)); }
    writeFileSync(theirs + ".tmp", "{}");
    try { renameSync(theirs + ".tmp", theirs); } catch (error) { console.log(said(error)); }`;
  const child = spawnSync(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", script],
    {
      uid: 65534,
      gid: 65534,
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  expect(child.stderr).toBe("");
  return child.stdout.trim().split("\n");
}

describe("writeDeniedReason, for an EPERM of a sticky folder", () => {
  it.runIf(process.getuid?.() === 0)(
    "says whose the file is that another user may not remove or replace in a folder shared as /tmp is",
    () => {
      const { dir } = folder();
      chmodSync(dir, 0o755);
      const shared = join(dir, "shared");
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      const theirs = join(shared, "graph.lock");
      writeFileSync(theirs, "{}");
      const sticky = `operation not permitted: ${shared} is sticky (mode 1777, as /tmp is), where only an entry's owner, the folder's owner or root may remove or replace it, and ${theirs} is root's`;
      // It asked whether the file or the folder is immutable or append-only.
      expect(asNobody(theirs)).toEqual([sticky, sticky]);
    },
  );
});

/** Where a cgroup v2 file system is mounted here, if one is. */
const cgroup2 = readFileSync("/proc/self/mountinfo", "utf8")
  .split("\n")
  .map((line) => line.split(" "))
  .find((fields) => fields[fields.indexOf("-") + 1] === "cgroup2")?.[4];

describe("writeDeniedReason, in a file system of the kernel's own files", () => {
  it.skipIf(statfsSync("/sys").type !== 0x62656572)(
    "says that no one makes a folder in sysfs, where it asked whether /sys is immutable",
    () => {
      expect(writeDeniedReason("EPERM", "mkdir", "/sys/baton-state/run")).toBe(
        "operation not permitted: /sys is in sysfs, which holds the kernel's own files: no one, root included, makes a file or folder there",
      );
    },
  );

  it.skipIf(cgroup2 === undefined)(
    "says that a cgroup file system holds the kernel's files and cgroups only, whose making is a matter of delegation",
    () => {
      const mount = cgroup2 ?? "";
      const cgroupFiles =
        "which holds the kernel's cgroup files: no one, root included, makes a file there, and a folder made there is a cgroup, which only root or a user the cgroup is delegated to may make or change";
      // Removing one of its files: the hint asked whether it or the cgroup is immutable.
      expect(writeDeniedReason("EPERM", "unlink", join(mount, "cgroup.procs"))).toBe(
        `operation not permitted: ${join(mount, "cgroup.procs")} is in a cgroup file system (cgroup2), ${cgroupFiles}`,
      );
      // A file of baton's in a cgroup (root): it said root may not create anything there, "or change its mode".
      expect(writeDeniedReason("EACCES", "open", join(mount, "baton-state", "lease.json"))).toBe(
        `permission denied: ${mount} is in a cgroup file system (cgroup2), ${cgroupFiles}`,
      );
      // Writing a cgroup's own file (a move writes cgroup.procs): a matter of delegation, not
      // "no one makes a file there".
      expect(writeDeniedReason("EACCES", "open", join(mount, "cgroup.procs"))).toBe(
        `permission denied: ${join(mount, "cgroup.procs")} is a file of a cgroup (cgroup2), which only root or a user the cgroup is delegated to may write`,
      );
    },
  );
});
