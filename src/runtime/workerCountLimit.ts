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

/** What bounds the workers a machine can run. */
export interface MachineLimits {
  /** Its cores (`os.availableParallelism()`). */
  cores: number;
  /** Its memory in MiB, or the memory its cgroup allows when less. */
  memoryMiB: number;
  /** How many processes and threads this user may run (`ulimit -u`); undefined for no limit. */
  taskLimit: number | undefined;
}

/**
 * This machine's limits: its cores, its memory (or its cgroup's, when less), and the soft
 * `ulimit -u` as Linux's /proc/self/limits gives it (none where that file is missing).
 *
 * @example
 * ```ts
 * machineLimits(); // { cores: 2, memoryMiB: 24105, taskLimit: 96369 }
 * ```
 */
export function machineLimits(): MachineLimits {
  const total = totalmem();
  const constrained = process.constrainedMemory?.() ?? 0;
  const memory = constrained > 0 && constrained < total ? constrained : total;
  return {
    cores: availableParallelism(),
    memoryMiB: Math.floor(memory / 2 ** 20),
    taskLimit: taskLimit(),
  };
}

/** The soft limit on this user's processes and threads, or undefined for none (or not Linux). */
function taskLimit(): number | undefined {
  let limits: string;
  try {
    limits = readFileSync("/proc/self/limits", "utf8");
  } catch {
    return undefined;
  }
  const soft = /^Max processes\s+(\S+)/m.exec(limits)?.[1];
  return soft === undefined || soft === "unlimited" ? undefined : Number(soft);
}

/** The most workers a machine can run, and what sets that bound, for a message. */
export interface WorkerCountLimit {
  most: number;
  why: string;
}

/**
 * The most workers `machine` could run: worker processes (`localPool`, `baton run
 * --workers`) by its memory and its `ulimit -u`, whichever allows fewer; workers inside
 * this process (`--in-process`, `createEngine({ workers })`) by its memory.
 *
 * @example
 * ```ts
 * workerCountLimit("processes", { cores: 2, memoryMiB: 24_105, taskLimit: 96_369 });
 * // { most: 376, why: "each worker process takes at least 64 MiB of memory, and this machine has 24105 MiB" }
 * ```
 */
export function workerCountLimit(
  kind: "processes" | "inProcess",
  machine: MachineLimits = machineLimits(),
): WorkerCountLimit {
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
  kind: "processes" | "inProcess",
  machine: MachineLimits = machineLimits(),
): void {
  const { most, why } = workerCountLimit(kind, machine);
  if (count <= most) return;
  const what = kind === "processes" ? "worker processes" : "in-process workers";
  const elsewhere =
    kind === "processes" ? ", and run more on other machines (baton worker, or Slurm)" : "";
  throw new ConfigError(
    `${where} ${count} is more ${what} than this machine can run: at most ${most}, since ${why}; give ${most} or fewer${elsewhere}`,
  );
}
