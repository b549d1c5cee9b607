import type { Resources } from "./job.ts";

/**
 * The names of the resources a worker offers and a job requires, in the order messages list
 * them (the compiler holds this to `Resources`).
 *
 * @example
 * ```ts
 * RESOURCE_NAMES.includes("gpus"); // true
 * ```
 */
export const RESOURCE_NAMES = [
  "cpus",
  "gpus",
  "memory",
] as const satisfies readonly (keyof Resources)[];
