import { join } from "node:path";

/**
 * The name of a local pool's worker: `local-N` for slot N's first process, `local-N.G` for its
 * G-th (a replacement).
 *
 * @example
 * ```ts
 * localWorkerName(3, 1); // "local-3"
 * localWorkerName(3, 2); // "local-3.2"
 * ```
 */
export function localWorkerName(n: number, generation: number): string {
  return generation === 1 ? `local-${n}` : `local-${n}.${generation}`;
}

/**
 * The log of slot N of a local pool whose workers log to `logsDir`: `worker-N.log`, shared by
 * the slot's processes and the pool's lines about them.
 *
 * @example
 * ```ts
 * localWorkerLog(".baton/logs/2026-12-06T09-00-00-000Z-pcmBHhPR", 2); // ".baton/logs/…/worker-2.log"
 * ```
 */
export function localWorkerLog(logsDir: string, n: number): string {
  return join(logsDir, `worker-${n}.log`);
}

/**
 * The log of the local pool's worker named `worker` (`localWorkerName`), or undefined for a
 * name the local pool does not give (a worker started by hand, a Slurm one).
 *
 * @example
 * ```ts
 * localWorkerLogOf(".baton/logs/run", "local-3.2"); // ".baton/logs/run/worker-3.log"
 * localWorkerLogOf(".baton/logs/run", "gpu-1"); // undefined
 * ```
 */
export function localWorkerLogOf(logsDir: string, worker: string): string | undefined {
  const slot = /^local-(\d+)(?:\.\d+)?$/.exec(worker)?.[1];
  return slot === undefined ? undefined : localWorkerLog(logsDir, Number(slot));
}
