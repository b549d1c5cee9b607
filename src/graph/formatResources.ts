import type { Resources } from "./job.ts";

/**
 * What a job requires or a worker offers, every resource named, for messages.
 *
 * @example
 * ```ts
 * formatResources({ gpus: 1 }); // "cpus 0, gpus 1, memory 0 MiB"
 * ```
 */
export function formatResources(r: Resources): string {
  return `cpus ${r.cpus ?? 0}, gpus ${r.gpus ?? 0}, memory ${r.memory ?? 0} MiB`;
}
