import { spawnSync } from "node:child_process";
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { CGROUP_FOLDER } from "../../src/rank/deploymentCgroup.ts";
import {
  cgroupContainment,
  containmentUnavailable,
  ownCgroupDir,
} from "../../src/runtime/cgroupContainment.ts";
import { nodeProcs } from "../../src/runtime/nodeProcs.ts";
import type { ProcHandle } from "../../src/runtime/ports.ts";
import { canContain } from "../fixtures/canContain.ts";

/** The checkout, where `tsx` resolves for a child process. */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The user a cgroup is delegated to (nobody). */
const NOBODY = 65534;

const procs = nodeProcs();
const dirs: string[] = [];
const cgroups: string[] = [];
const started: ProcHandle[] = [];

afterEach(async () => {
  for (const handle of started.splice(0)) {
    try {
      process.kill(-handle.pid, "SIGKILL");
    } catch {
      // The group is gone.
    }
  }
  const made = cgroups.splice(0);
  for (const cgroup of made) {
    for (const pid of procs.containment?.members(cgroup) ?? []) process.kill(pid, "SIGKILL");
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  for (const cgroup of made) procs.containment?.remove(cgroup);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fake `/proc/self` holding `cgroup` and `mountinfo`. */
function fakeProc(cgroup: string, mountinfo: string): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-proc-"));
  dirs.push(dir);
  writeFileSync(join(dir, "cgroup"), cgroup);
  writeFileSync(join(dir, "mountinfo"), mountinfo);
  return dir;
}

const V1_LINE = "31 25 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory";

describe("ownCgroupDir", () => {
  it("joins the cgroup2 mount point and this process's cgroup path", () => {
    const proc = fakeProc(
      "4:memory:/x\n0::/user.slice/app.scope\n",
      `${V1_LINE}\n40 30 0:37 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n`,
    );
    expect(ownCgroupDir(proc)).toBe("/sys/fs/cgroup/user.slice/app.scope");
  });

  it("takes a mount of a sub-tree into account, and unescapes the mount point", () => {
    const proc = fakeProc(
      "0::/jobs/job-7/step\n",
      "40 30 0:37 /jobs/job-7 /mnt/my\\040cgroup rw - cgroup2 cgroup2 rw\n",
    );
    expect(ownCgroupDir(proc)).toBe("/mnt/my cgroup/step");
  });

  it("is undefined with cgroup v1 alone, outside the mounted sub-tree, or without /proc", () => {
    expect(ownCgroupDir(fakeProc("4:memory:/x\n", `${V1_LINE}\n`))).toBeUndefined();
    const elsewhere = fakeProc(
      "0::/other/place\n",
      "40 30 0:37 /jobs /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
    );
    expect(ownCgroupDir(elsewhere)).toBeUndefined();
    expect(ownCgroupDir("/nonexistent/proc")).toBeUndefined();
  });
});

describe("cgroupContainment", () => {
  it("refuses, saying why and what to do, where a cgroup cannot be made", () => {
    const parent = mkdtempSync(join(tmpdir(), "baton-cg-"));
    dirs.push(parent);
    const file = join(parent, "not-a-dir");
    writeFileSync(file, "");
    const containment = cgroupContainment(file);
    expect(() => containment?.create("dep-x")).toThrow(
      `cannot contain processes in the cgroup ${file}/baton/dep-x: ${file} is a file, not a directory. They still start, in their own process groups; to contain them, run as root or in a cgroup delegated to this user (`,
    );
  });

  it("says what an error of another kind met making a cgroup means, naming the file, never Node's text alone", () => {
    const own = mkdtempSync(join(tmpdir(), "baton-cg-"));
    dirs.push(own);
    const cgroup = join(own, CGROUP_FOLDER, "dep-x");
    // Its cgroup.procs a folder: writing it to move this process in fails as no cgroup does.
    mkdirSync(join(cgroup, "cgroup.procs"), { recursive: true });
    expect(() => cgroupContainment(own)?.create("dep-x")).toThrow(
      `cannot contain processes in the cgroup ${cgroup}: cannot write ${cgroup}/cgroup.procs: illegal operation on a directory (EISDIR). They still start, in their own process groups;`,
    );
  });

  it("says a move the kernel refuses as busy (EBUSY) is a cgroup that enables controllers below it", () => {
    // As writeFileSync throws it: the write(2) to cgroup.procs names no file.
    const busy = Object.assign(new Error("EBUSY: resource busy or locked, write"), {
      code: "EBUSY",
      syscall: "write",
    });
    const error = containmentUnavailable(
      "/sys/fs/cgroup/user.slice/baton/dep-x",
      busy,
      "/sys/fs/cgroup/user.slice/cgroup.procs",
    );
    expect(error).toMatchObject({ code: "CONTAINMENT_UNAVAILABLE" });
    expect(error.message).toBe(
      "cannot contain processes in the cgroup /sys/fs/cgroup/user.slice/baton/dep-x: the kernel will not move a process into it (EBUSY): it enables controllers for the cgroups below it (its cgroup.subtree_control), and such a cgroup may hold no process itself. They still start, in their own process groups; to contain them, run as root or in a cgroup delegated to this user (for example `systemd-run --user --scope -p Delegate=yes baton launch ...`)",
    );
  });

  const containment = procs.containment;
  const usable = canContain(procs, "unit");

  it.skipIf(!usable || process.getuid?.() !== 0)(
    "says in baton's words why a user a cgroup is delegated to may not move a process into one made there",
    () => {
      const root = ownCgroupDir()!;
      const delegated = join(root, `unit-delegated-${process.pid}`);
      mkdirSync(delegated);
      cgroups.push(delegated);
      for (const path of [delegated, join(delegated, "cgroup.procs")])
        chownSync(path, NOBODY, NOBODY);
      const script = `import { cgroupContainment } from ${JSON.stringify(join(ROOT, "src/runtime/cgroupContainment.ts"))};
try { cgroupContainment(${JSON.stringify(delegated)}).create("dep-x"); } catch (error) { console.log(error.message); }`;
      const run = spawnSync(
        process.execPath,
        ["--import", "tsx", "--input-type=module", "-e", script],
        {
          cwd: ROOT,
          uid: NOBODY,
          gid: NOBODY,
          encoding: "utf8",
          timeout: 60_000,
        },
      );
      expect(run.stderr).toBe("");
      // This process's cgroup holds both ends: moving takes writing its cgroup.procs.
      const procsFile = join(root, "cgroup.procs");
      expect(run.stdout.trim()).toBe(
        `cannot contain processes in the cgroup ${delegated}/baton/dep-x: cannot write ${procsFile}: permission denied: ${procsFile} is a file of a cgroup (cgroup2), which only root or a user the cgroup is delegated to may write. They still start, in their own process groups; to contain them, run as root or in a cgroup delegated to this user (for example \`systemd-run --user --scope -p Delegate=yes baton launch ...\`)`,
      );
      // Nothing it made stays, the `baton` folder included.
      expect(existsSync(join(delegated, "baton"))).toBe(false);
    },
  );

  it.skipIf(!usable)(
    "keeps every descendant of a process started in it, lists them, and is removed once empty",
    async () => {
      const cgroup = containment!.create(`unit-${process.pid}`);
      cgroups.push(cgroup);
      expect(containment!.members(cgroup)).toEqual([]);
      const handle = procs.spawn({
        argv: ["sh", "-c", "setsid env -i /bin/sleep 30 & exec sleep 30"],
        newGroup: true,
        cgroup,
      });
      started.push(handle);
      const escapedIn = (pids: number[]) =>
        pids.find((pid) => procs.inspect(pid)?.argv.join(" ") === "/bin/sleep 30");
      let members: number[] = [];
      for (let i = 0; i < 100 && escapedIn(members) === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        members = containment!.members(cgroup) ?? [];
      }
      expect(members).toContain(handle.pid);
      const escaped = escapedIn(members) as number;
      expect(procs.inspect(escaped)?.pgid).toBe(escaped);
      expect(procs.environ(escaped)).toEqual({});
      expect(procs.inspect(handle.pid)?.argv).toEqual(["sleep", "30"]);
      expect(containment!.remove(cgroup)).toBe(false);

      for (const pid of members) process.kill(pid, "SIGKILL");
      await handle.exited;
      for (let i = 0; i < 100 && (containment!.members(cgroup) ?? []).length > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(containment!.remove(cgroup)).toBe(true);
      expect(existsSync(cgroup)).toBe(false);
      expect(containment!.members(cgroup)).toBeUndefined();
    },
  );

  it.skipIf(!usable)(
    "starts a process with exactly the arguments, environment and cwd a direct spawn gives it, and moves back",
    async () => {
      const cgroup = containment!.create(`unit-env-${process.pid}`);
      cgroups.push(cgroup);
      const dir = mkdtempSync(join(tmpdir(), "baton-cg-env-"));
      dirs.push(dir);
      // Names /bin/sh would drop (an exported bash function, a dash) and no PWD, which a
      // shell would add.
      const env = { "FOO-BAR": "1", "BASH_FUNC_m%%": "() { echo; }", X: "a b$c\nd" };
      const argv: [string, ...string[]] = ["cat", "/proc/self/environ", "/proc/self/cmdline"];
      const ownBefore = readFileSync("/proc/self/cgroup", "utf8");
      const run = async (name: string, inCgroup: string | undefined) => {
        const logFile = join(dir, name);
        const handle = procs.spawn({
          argv,
          env: { ...env, PATH: process.env.PATH ?? "/usr/bin:/bin" },
          cwd: dir,
          logFile,
          newGroup: true,
          ...(inCgroup !== undefined && { cgroup: inCgroup }),
        });
        started.push(handle);
        expect(await handle.exited).toEqual({ code: 0, signal: null });
        return readFileSync(logFile, "utf8");
      };
      const contained = await run("contained", cgroup);
      expect(readFileSync("/proc/self/cgroup", "utf8")).toBe(ownBefore);
      expect(contained).toBe(await run("direct", undefined));
      expect(contained).toContain("FOO-BAR=1\0BASH_FUNC_m%%=() { echo; }\0");
    },
  );

  it.skipIf(!usable)(
    "a missing or unexecutable command started in a cgroup fails as a direct spawn does",
    () => {
      const cgroup = containment!.create(`unit-missing-${process.pid}`);
      cgroups.push(cgroup);
      const dir = mkdtempSync(join(tmpdir(), "baton-cg-noexec-"));
      dirs.push(dir);
      writeFileSync(join(dir, "not-executable"), "echo hi\n", { mode: 0o644 });
      const ownBefore = readFileSync("/proc/self/cgroup", "utf8");
      for (const command of ["baton-no-such-program", join(dir, "not-executable")]) {
        const direct = () => procs.spawn({ argv: [command] });
        expect(direct).toThrow(/cannot start .*: (no program .* on PATH|.* is not executable)/);
        expect(() => procs.spawn({ argv: [command], cgroup })).toThrow(
          (() => {
            try {
              direct();
            } catch (error) {
              return (error as Error).message;
            }
          })(),
        );
      }
      expect(readFileSync("/proc/self/cgroup", "utf8")).toBe(ownBefore);
    },
  );

  it.skipIf(!usable)(
    "kill refuses a cgroup this process is in, which it would kill too, and kills nothing",
    () => {
      const name = `unit-self-${process.pid}`;
      cgroups.push(join(ownCgroupDir()!, CGROUP_FOLDER, name));
      // In a process of its own: were the refusal missing, cgroup.kill would end it, not the test.
      const script = `
        const { cgroupContainment, moveSelfInto, ownCgroupDir } = await import(${JSON.stringify(
          new URL("../../src/runtime/cgroupContainment.ts", import.meta.url).pathname,
        )});
        const own = ownCgroupDir();
        const containment = cgroupContainment(own);
        const cgroup = containment.create(${JSON.stringify(name)});
        moveSelfInto(cgroup);
        let said = "killed nothing and said nothing";
        try {
          containment.kill(cgroup);
        } catch (error) {
          said = error.code + ": " + error.message;
        }
        moveSelfInto(own);
        console.log(said);`;
      const result = spawnSync(
        process.execPath,
        ["--import", "tsx", "--input-type=module", "-e", script],
        { encoding: "utf8", timeout: 60_000, killSignal: "SIGKILL" },
      );
      expect({ signal: result.signal, stderr: result.stderr }).toEqual({
        signal: null,
        stderr: "",
      });
      expect(result.stdout).toMatch(
        new RegExp(
          `^CGROUP_HOLDS_THIS_PROCESS: refusing to stop the processes in the cgroup .*/${name}: this process \\(pid ${result.pid}\\) is in it too .*Nothing was signalled`,
        ),
      );
    },
  );

  it("a process cannot start in a cgroup that is gone, and the error says so and what to do", () => {
    expect(() => procs.spawn({ argv: ["true"], cgroup: "/nonexistent/cgroup" })).toThrow(
      /cannot start a process in the cgroup \/nonexistent\/cgroup: .*without containment \(--no-contain\)/,
    );
    if (ownCgroupDir() === undefined) return;
    expect(() => procs.spawn({ argv: ["true"], cgroup: "/nonexistent/cgroup" })).toThrow(
      "cannot start a process in the cgroup /nonexistent/cgroup: it is gone (/nonexistent/cgroup/cgroup.procs does not exist: removed, or the machine restarted). Launch again",
    );
  });
});
