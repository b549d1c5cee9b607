import { availableParallelism, totalmem } from "node:os";
import type { Resources } from "../graph/job.ts";

/**
 * What a worker on this machine offers unless told otherwise: its cores, its memory in
 * MiB, and no gpus.
 *
 * @example
 * ```ts
 * machineResources(); // { cpus: 2, gpus: 0, memory: 24028 }
 * ```
 */
export function machineResources(): Resources {
  return { cpus: availableParallelism(), gpus: 0, memory: Math.floor(totalmem() / 2 ** 20) };
}
