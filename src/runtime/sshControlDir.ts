import { lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isAlive } from "../rank/launcherWatch.ts";
import { nodeProcs } from "./nodeProcs.ts";
import type { ProcInfo } from "./ports.ts";

/** `baton-ssh-<pid of the process that made it>-<random>`. */
const CONTROL_DIR = /^baton-ssh-([1-9]\d*)-[A-Za-z0-9]+$/;

/**
 * Makes the private (0700) directory that holds one ssh host's control socket (`master`)
 * and its master's log, named after this process's pid so that a later process can tell
 * that its maker is gone. Removes, first, every such directory in `parent` that a process
 * no longer alive left behind (see `sweepAbandonedControlDirs`).
 *
 * @example
 * ```ts
 * const dir = makeControlDir();
 * const controlPath = join(dir, "master");
 * ```
 */
export function makeControlDir(parent: string = tmpdir()): string {
  sweepAbandonedControlDirs(parent);
  return mkdtempSync(join(parent, `baton-ssh-${process.pid}-`));
}

/**
 * Removes the control directories in `parent` whose maker is gone (no such process, or a
 * zombie): a launcher killed with SIGKILL cannot remove its own. A master still serving
 * such a directory's socket has nobody left to serve and is stopped first (SIGTERM, by the
 * pid of the process whose argv names that socket). Only this user's directories are
 * touched; anything that cannot be read or removed is left as it is.
 */
export function sweepAbandonedControlDirs(parent: string = tmpdir()): void {
  const procs = nodeProcs();
  const uid = process.getuid?.();
  let table: ProcInfo[] | undefined;
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const maker = CONTROL_DIR.exec(name);
    if (maker === null || isAlive(procs.inspect(Number(maker[1])))) continue;
    const dir = join(parent, name);
    try {
      const stat = lstatSync(dir);
      if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue;
      const controlPath = join(dir, "master");
      // The table is read once, for the first abandoned directory, and only if there is one.
      table ??= procs.list().filter(isAlive);
      for (const entry of table) {
        if (serves(entry, controlPath)) procs.signal(entry.pid, "SIGTERM");
      }
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Another process removed it first, or it is not ours to remove.
    }
  }
}

/**
 * Whether `pid` is a live process (a zombie is not) whose argv names the control socket
 * `controlPath`: a master serving that socket, never a process that reused its pid.
 */
export function isMaster(pid: number, controlPath: string): boolean {
  const info = nodeProcs().inspect(pid);
  return info !== undefined && serves(info, controlPath);
}

function serves(info: ProcInfo, controlPath: string): boolean {
  return isAlive(info) && info.argv.some((arg) => arg.includes(controlPath));
}
