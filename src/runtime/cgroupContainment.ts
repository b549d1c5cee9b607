import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { BatonError } from "../errors.ts";
import { CGROUP_FOLDER } from "../rank/deploymentCgroup.ts";
import { refuseCgroupHoldingThisProcess } from "./cgroupHoldsThisProcess.ts";
import { errnoReason } from "./errnoReason.ts";
import { isWithin } from "./isWithin.ts";
import type { Containment } from "./ports.ts";
import { unwritableFolder } from "./unwritableFolder.ts";

/**
 * Where this process's cgroup v2 is in the file system, from `/proc/self/cgroup` (its `0::`
 * line) and `/proc/self/mountinfo` (a `cgroup2` mount); undefined when there is none: not
 * Linux, cgroup v1 alone, or our cgroup outside what is mounted.
 */
export function ownCgroupDir(proc = "/proc/self"): string | undefined {
  let cgroupPath: string | undefined;
  let mountinfo: string;
  try {
    cgroupPath = /^0::(\/.*)$/m.exec(readFileSync(`${proc}/cgroup`, "utf8"))?.[1];
    mountinfo = readFileSync(`${proc}/mountinfo`, "utf8");
  } catch {
    return undefined;
  }
  if (cgroupPath === undefined) return undefined;
  for (const line of mountinfo.split("\n")) {
    const [mounted, fsType] = line.split(" - ");
    if (!fsType?.startsWith("cgroup2 ")) continue;
    const fields = (mounted ?? "").split(" ");
    const root = unescapeMountField(fields[3] ?? "");
    const point = unescapeMountField(fields[4] ?? "");
    const inside = root === "/" ? cgroupPath : pathBelow(root, cgroupPath);
    if (inside !== undefined && point !== "") return join(point, inside);
  }
  return undefined;
}

/** `path` relative to `root` (with a leading slash), or undefined when it is not below it. */
function pathBelow(root: string, path: string): string | undefined {
  if (path === root) return "/";
  return path.startsWith(`${root}/`) ? path.slice(root.length) : undefined;
}

/** mountinfo writes a space, tab, newline and backslash in a path as `\040`, `\011`, … */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(Number.parseInt(octal, 8)),
  );
}

/**
 * Containment on Linux's cgroup v2: a deployment's cgroup is `baton/<name>` below this
 * process's own cgroup `own` (`name` as `deploymentCgroupName` makes it; a local worker
 * pool's, `workerPoolCgroupName`), where the kernel lets an unprivileged user make one only when that
 * cgroup was delegated to them (systemd's user sessions do; root can anywhere). `create`
 * proves that a process can be moved in by moving this one there and back (as `spawn` does
 * to start a rank inside), so a machine that lets us make the folder but not move into it
 * says so before any rank starts; a cgroup below one it proved so (a pool's worker's,
 * `<pool>/<worker>`) is only made: the same delegation holds for it, and this process does
 * not pass through it. `members` reads `cgroup.procs` of the cgroup and every cgroup below
 * it; `list` the cgroups in `baton`; `kill` writes `cgroup.kill`, and refuses (throws
 * `CGROUP_HOLDS_THIS_PROCESS`) when this process is among the members, which it would kill
 * too. Undefined where this process has no cgroup v2.
 *
 * @example
 * ```ts
 * const containment = cgroupContainment();
 * const cgroup = containment?.create(deploymentCgroupName({ deployment, stateDir })); // throws when not permitted
 * nodeProcs().spawn({ argv: ["python", "train.py"], newGroup: true, cgroup });
 * containment?.members(cgroup!); // [4711, 4712]: the rank and all it started
 * ```
 */
export function cgroupContainment(own = ownCgroupDir()): Containment | undefined {
  if (own === undefined) return undefined;
  /** The cgroups `create` moved this process into and back out of, not removed since. */
  const proven = new Set<string>();
  const members = (cgroup: string): number[] | undefined => {
    const pids: number[] = [];
    const visit = (dir: string): boolean => {
      let procs: string;
      try {
        procs = readFileSync(join(dir, "cgroup.procs"), "utf8");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
        throw error;
      }
      for (const line of procs.split("\n")) if (line !== "") pids.push(Number(line));
      for (const child of subgroups(dir)) visit(join(dir, child));
      return true;
    };
    return visit(cgroup) ? pids : undefined;
  };
  return {
    create(name) {
      const cgroup = join(own, CGROUP_FOLDER, name);
      /** The topmost folder made here (the `baton` folder too, the first time). */
      let made: string | undefined;
      try {
        made = mkdirSync(cgroup, { recursive: true });
      } catch (error) {
        throw containmentUnavailable(cgroup, error, cgroup);
      }
      if ([...proven].some((above) => isWithin(cgroup, above))) return cgroup;
      try {
        moveSelfInto(cgroup);
      } catch (error) {
        removeTree(made ?? cgroup);
        // The kernel refuses a move unless this user may write the `cgroup.procs` of the
        // cgroup holding both ends (its `open` of the target's own names that file itself).
        throw containmentUnavailable(
          cgroup,
          error,
          join(holdingBoth(ownCgroupDir() ?? own, cgroup), "cgroup.procs"),
        );
      }
      moveSelfInto(own);
      proven.add(cgroup);
      return cgroup;
    },

    members,

    remove(cgroup) {
      const removed = removeTree(cgroup);
      if (removed) {
        for (const made of proven) if (isWithin(made, cgroup)) proven.delete(made);
      }
      return removed;
    },

    list() {
      const folder = join(own, CGROUP_FOLDER);
      return subgroups(folder).map((name) => join(folder, name));
    },

    kill(cgroup) {
      refuseCgroupHoldingThisProcess(cgroup, members(cgroup) ?? [], process.pid);
      try {
        writeFileSync(join(cgroup, "cgroup.kill"), "1");
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        // No such file: the cgroup is gone (nothing to kill), or the kernel predates it.
        return !existsSync(cgroup);
      }
    },
  };
}

/** Moves this whole process, every thread of it, into `cgroup`. */
export function moveSelfInto(cgroup: string): void {
  writeFileSync(join(cgroup, "cgroup.procs"), String(process.pid));
}

/**
 * `CONTAINMENT_UNAVAILABLE` for `error`, met making `cgroup` or moving this process into it,
 * and what to do: why in the words of every folder baton makes (`unwritableFolder`: which
 * path, what this user may not do there, a file in the way; `path` stands for the path when
 * the error names none); a move the kernel refused as busy (`EBUSY`: `cgroup` enables
 * controllers for the cgroups below it, and such a cgroup holds no process itself) says so;
 * any other error names the file and what the system said (`errnoReason`), never Node's
 * message alone.
 *
 * @example
 * ```ts
 * containmentUnavailable("/sys/fs/cgroup/user.slice/baton/dep-x", ebusy, procsFile).message;
 * // "cannot contain processes in the cgroup …/baton/dep-x: the kernel will not move a process into it (EBUSY): …"
 * ```
 */
export function containmentUnavailable(cgroup: string, error: unknown, path: string): BatonError {
  return new BatonError(
    "CONTAINMENT_UNAVAILABLE",
    `cannot contain processes in the cgroup ${cgroup}: ${cgroupRefusal(error, path)}. They still start, in their ` +
      "own process groups; to contain them, run as root or in a cgroup delegated to this " +
      "user (for example `systemd-run --user --scope -p Delegate=yes baton launch ...`)",
  );
}

/**
 * Why making a cgroup, or moving a process into one ("it" in the words), failed with `error`,
 * for a person: in `unwritableFolder`'s words (`path` stands for the path when the error names
 * none); a file of it not there (`ENOENT` of anything but `mkdir`), that it is gone; for
 * `EBUSY`, that the cgroup enables controllers for those below it; else the file and what the
 * system said (`errnoReason`).
 *
 * @example
 * ```ts
 * `cannot start a process in the cgroup ${cgroup}: ${cgroupRefusal(error, join(cgroup, "cgroup.procs"))}`;
 * ```
 */
export function cgroupRefusal(error: unknown, path: string): string {
  const { code, syscall, path: named = path } = error as NodeJS.ErrnoException;
  if (code === "ENOENT" && syscall !== "mkdir") {
    return `it is gone (${named} does not exist: removed, or the machine restarted)`;
  }
  return (
    unwritableFolder(error, path)?.why ??
    (code === "EBUSY"
      ? "the kernel will not move a process into it (EBUSY): it enables controllers for the cgroups below it (its cgroup.subtree_control), and such a cgroup may hold no process itself"
      : `cannot ${syscall === "mkdir" ? "make" : "write"} ${named}: ${errnoReason(error)}`)
  );
}

/** The nearest cgroup that holds both `a` and `b` (or is one of them). */
function holdingBoth(a: string, b: string): string {
  let at = a;
  while (!isWithin(b, at) && dirname(at) !== at) at = dirname(at);
  return at;
}

/** The names of the cgroups right below `dir` (none when it is gone). */
function subgroups(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/** Removes `dir` and the cgroups below it, deepest first; false while a process is in one. */
function removeTree(dir: string): boolean {
  for (const child of subgroups(dir)) if (!removeTree(join(dir, child))) return false;
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return true;
    if (code === "EBUSY") return false;
    throw error;
  }
}
