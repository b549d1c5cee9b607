import { readFileSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import { ConfigError } from "../errors.ts";

/**
 * The least memory a worker process takes, in MiB: a `baton worker` with a small job module
 * loaded holds 70 to 80 MiB of its own (measured), so no machine runs more than its memory
 * over this.
 */
export const WORKER_PROCESS_MIB = 64;
/** The threads of a `baton worker` process (measured: Node.js's own, V8's and libuv's). */
export const WORKER_PROCESS_THREADS = 12;
/** The least memory an in-process worker takes, in KiB (measured: 40 to 47 KiB each). */
export const IN_PROCESS_WORKER_KIB = 32;
/**
 * The open files a coordinator keeps for its own, beside one per connected worker: its logs,
 * the store, its listening sockets, the dashboard (27 measured, waiting with none connected).
 */
export const COORDINATOR_OWN_FILES = 64;
/**
 * The most files a Linux process may hold open unless root raised `fs.nr_open`: the bound on
 * connected workers where this process's `ulimit -n` cannot be read.
 */
export const NR_OPEN = 1_048_576;

/** What bounds the workers a machine can run. */
export interface MachineLimits {
  /** Its cores (`os.availableParallelism()`). */
  cores: number;
  /** Its memory in MiB, or the memory its cgroup allows when less. */
  memoryMiB: number;
  /** How many processes and threads this user may run (`ulimit -u`); undefined for no limit. */
  taskLimit: number | undefined;
  /** How many files this process may hold open (`ulimit -n`); undefined when not known. */
  openFiles?: number | undefined;
}

/**
 * This machine's limits: its cores, its memory (or its cgroup's, when less), and the soft
 * `ulimit -u` and `ulimit -n` as Linux's /proc/self/limits gives them (none where that file
 * is missing).
 *
 * @example
 * ```ts
 * machineLimits(); // { cores: 2, memoryMiB: 24105, taskLimit: 96369, openFiles: 20000 }
 * ```
 */
export function machineLimits(): MachineLimits {
  const total = totalmem();
  const constrained = process.constrainedMemory?.() ?? 0;
  const memory = constrained > 0 && constrained < total ? constrained : total;
  return {
    cores: availableParallelism(),
    memoryMiB: Math.floor(memory / 2 ** 20),
    ...softLimits(),
  };
}

/**
 * The soft limits on this user's processes and threads and on this process's open files, each
 * undefined for none (or not Linux).
 */
function softLimits(): Pick<MachineLimits, "taskLimit" | "openFiles"> {
  let limits = "";
  try {
    limits = readFileSync("/proc/self/limits", "utf8");
  } catch {
    // Not Linux: no limit known.
  }
  const soft = (name: string) => {
    const value = new RegExp(`^Max ${name}\\s+(\\S+)`, "m").exec(limits)?.[1];
    return value === undefined || value === "unlimited" ? undefined : Number(value);
  };
  return { taskLimit: soft("processes"), openFiles: soft("open files") };
}

/**
 * Where workers run: worker processes on this machine, workers inside this process, or
 * workers elsewhere (Slurm allocations) connected to this process.
 */
export type WorkerKind = "processes" | "inProcess" | "connected";

/** The most workers a machine can run, and what sets that bound, for a message. */
export interface WorkerCountLimit {
  most: number;
  why: string;
}

/**
 * The most workers `machine` could run: worker processes (`localPool`, `baton run
 * --workers`) by its memory and its `ulimit -u`, whichever allows fewer; workers inside
 * this process (`--in-process`, `createEngine({ workers })`) by its memory; workers elsewhere
 * connected to this process, the coordinator (`slurmPool`'s `maxWorkers`, `baton run
 * --max-workers`), by its `ulimit -n`: a connection is an open file.
 *
 * @example
 * ```ts
 * workerCountLimit("processes", { cores: 2, memoryMiB: 24_105, taskLimit: 96_369 });
 * // { most: 376, why: "each worker process takes at least 64 MiB of memory, and this machine has 24105 MiB" }
 * ```
 */
export function workerCountLimit(
  kind: WorkerKind,
  machine: MachineLimits = machineLimits(),
): WorkerCountLimit {
  if (kind === "connected") {
    const files = machine.openFiles;
    return {
      most: Math.max(1, (files ?? NR_OPEN) - COORDINATOR_OWN_FILES),
      why: `each holds a connection to this coordinator, an open file, and ${files === undefined ? `a process holds at most ${NR_OPEN} (Linux's fs.nr_open)` : `ulimit -n allows this process ${files}`}, ${COORDINATOR_OWN_FILES} of them kept for its own`,
    };
  }
  if (kind === "inProcess") {
    return {
      most: Math.floor((machine.memoryMiB * 1024) / IN_PROCESS_WORKER_KIB),
      why: `each in-process worker takes at least ${IN_PROCESS_WORKER_KIB} KiB of memory, and this machine has ${machine.memoryMiB} MiB`,
    };
  }
  const byMemory = {
    most: Math.floor(machine.memoryMiB / WORKER_PROCESS_MIB),
    why: `each worker process takes at least ${WORKER_PROCESS_MIB} MiB of memory, and this machine has ${machine.memoryMiB} MiB`,
  };
  if (machine.taskLimit === undefined) return byMemory;
  const byTasks = {
    most: Math.floor(machine.taskLimit / WORKER_PROCESS_THREADS),
    why: `each worker process runs ${WORKER_PROCESS_THREADS} threads, and ulimit -u allows this user ${machine.taskLimit} processes and threads in all`,
  };
  return byTasks.most < byMemory.most ? byTasks : byMemory;
}

/**
 * How many worker processes to start when not told: one per core, or fewer when `machine`
 * cannot run that many (a container with little memory on a host with many cores).
 */
export function defaultWorkerProcesses(machine: MachineLimits = machineLimits()): number {
  return Math.min(machine.cores, workerCountLimit("processes", machine).most);
}

/**
 * Refuses `count` workers of `kind` for `where` (a flag, or a function and its option) when
 * `machine` could never run that many, with a `ConfigError` that says the most and why.
 *
 * @example
 * ```ts
 * checkWorkerCount("--workers", 100_000, "processes");
 * // ConfigError: --workers 100000 is more worker processes than this machine can run: at most 376, since each worker process takes at least 64 MiB of memory, and this machine has 24105 MiB; give 376 or fewer, and run more on other machines (baton worker, or Slurm)
 * ```
 */
export function checkWorkerCount(
  where: string,
  count: number,
  kind: WorkerKind,
  machine: MachineLimits = machineLimits(),
): void {
  const { most, why } = workerCountLimit(kind, machine);
  if (count <= most) return;
  const { what, beyond } = WORDING[kind];
  throw new ConfigError(
    `${where} ${count} is more ${what}: at most ${most}, since ${why}; give ${most} or fewer${beyond}`,
  );
}

/** What {@link checkWorkerCount} says of each kind of worker, and how to have more. */
const WORDING: Readonly<Record<WorkerKind, { what: string; beyond: string }>> = {
  processes: {
    what: "worker processes than this machine can run",
    beyond: ", and run more on other machines (baton worker, or Slurm)",
  },
  inProcess: { what: "in-process workers than this machine can run", beyond: "" },
  connected: {
    what: "workers than this coordinator can hold connections to",
    beyond: " (a higher hard ulimit -n allows more: Node.js raises its own to it)",
  },
};
