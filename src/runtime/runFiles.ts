import { hostname } from "node:os";
import { join } from "node:path";
import { atomicTempTarget } from "./atomicTempTarget.ts";
import { nodeProcs } from "./nodeProcs.ts";
import type { Files } from "./ports.ts";

/**
 * A run's own files in the store's `run/` directory: its secret (`<stem>.secret`) and a Slurm
 * pool's batch script (`<stem>.<pool>.sbatch`), where the stem `run-<hex>-<pid>@<host>` names
 * the coordinator process that wrote them. A run removes them when it ends; one killed with
 * SIGKILL cannot, and the next run on the same store and host removes them for it, with the
 * temp file of one it was killed writing.
 */
const RUN_FILE =
  /^run-[0-9a-f]+-([1-9]\d*)@([A-Za-z0-9._-]+?)\.(?:secret|(baton-[0-9a-f]+)\.sbatch)$/;

/** The logger a sweep reports to. */
export interface RunFilesLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/**
 * A new stem for this process's run files: `run-<hex>-<pid>@<host>`.
 *
 * @example
 * ```ts
 * const path = join(".baton/run", `${runFileStem(randomBytes(6))}.secret`);
 * ```
 */
export function runFileStem(random: Uint8Array): string {
  return `run-${Buffer.from(random).toString("hex")}-${process.pid}@${thisHost()}`;
}

/**
 * Removes from `dir` the run files (secrets, batch scripts) of coordinators that ran on this
 * host and are gone: killed with SIGKILL, or crashed, before they could remove their own.
 * Another host's files (a store shared over the network) and a living process's are kept; a
 * pid reused since keeps its files until that process ends too. Returns the removed names.
 * A living coordinator's secret other than this process's means another run uses the same
 * store right now: that is logged as a warning (both runs compute the jobs they share).
 *
 * @example
 * ```ts
 * await sweepAbandonedRunFiles(".baton/run", { files: nodeFiles(), logger });
 * ```
 */
export async function sweepAbandonedRunFiles(
  dir: string,
  ports: { files: Files; logger?: RunFilesLogger },
): Promise<string[]> {
  const { abandoned, otherRuns } = await findRunFiles(dir, ports.files);
  if (otherRuns.length > 0) {
    ports.logger?.warn(
      { dir, pids: otherRuns },
      `another baton run on this machine uses this store (pid ${otherRuns.join(", ")}): the jobs both runs need are computed by both, and stored once; wait for it, or give this run another --store`,
    );
  }
  await removeRunFiles(dir, abandoned, ports);
  return abandoned;
}

/**
 * The run files in `dir` of coordinators on this host that are gone (`abandoned`, as
 * `sweepAbandonedRunFiles` judges them, not removed), and the pids of the living coordinators
 * other than this process that have a secret there (`otherRuns`).
 *
 * @example
 * ```ts
 * const { abandoned } = await findRunFiles(".baton/run", nodeFiles());
 * ```
 */
export async function findRunFiles(
  dir: string,
  files: Files,
): Promise<{ abandoned: string[]; otherRuns: number[] }> {
  const host = thisHost();
  const abandoned: string[] = [];
  const otherRuns = new Set<number>();
  for (const name of await files.list(dir)) {
    // The temp file of a run file's `writeAtomic` is its coordinator's too: one killed as it
    // wrote its secret leaves the secret's text there.
    const owner = RUN_FILE.exec(atomicTempTarget(name) ?? name);
    if (owner === null || owner[2] !== host) continue;
    const pid = Number(owner[1]);
    if (isRunning(pid)) {
      if (pid !== process.pid && name.endsWith(".secret")) otherRuns.add(pid);
      continue;
    }
    abandoned.push(name);
  }
  return { abandoned, otherRuns: [...otherRuns] };
}

/**
 * Removes the run files `names` (found by `findRunFiles`) from `dir`, and logs which.
 *
 * @example
 * ```ts
 * await removeRunFiles(".baton/run", ["run-3f2a-4242@login1.secret"], { files: nodeFiles() });
 * ```
 */
export async function removeRunFiles(
  dir: string,
  names: readonly string[],
  ports: { files: Files; logger?: RunFilesLogger | undefined },
): Promise<void> {
  for (const name of names) await ports.files.remove(join(dir, name));
  if (names.length > 0) {
    ports.logger?.info(
      { dir, files: names },
      "removed the run files (secrets, batch scripts) of coordinators on this host that ended without removing them",
    );
  }
}

/**
 * The Slurm pool a run file's name stands for (`baton-<hex>` in `<stem>.baton-<hex>.sbatch`),
 * or undefined for a secret or any other file.
 *
 * @example
 * ```ts
 * slurmPoolOf("run-3f2a-4242@login1.baton-0123abcd.sbatch"); // "baton-0123abcd"
 * ```
 */
export function slurmPoolOf(name: string): string | undefined {
  return RUN_FILE.exec(name)?.[3];
}

/** This host's name as it appears in a stem: letters, digits, dots, dashes, underscores. */
function thisHost(): string {
  return hostname().replace(/[^A-Za-z0-9._-]/g, "_") || "localhost";
}

/** Whether a process `pid` exists (a zombie does: its pid is not free yet). */
function isRunning(pid: number): boolean {
  return nodeProcs().signal(pid, 0) !== "ESRCH";
}
