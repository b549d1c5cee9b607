import type { Resources } from "./job.ts";
import { RESOURCE_NAMES } from "./resourceNames.ts";

/**
 * Resources with every one named (one not declared as 0), for messages: what a worker offers.
 *
 * @example
 * ```ts
 * formatResources({ gpus: 1 }); // "cpus 0, gpus 1, memory 0 MiB"
 * ```
 */
export function formatResources(r: Resources): string {
  return amounts(r, RESOURCE_NAMES);
}

/**
 * What a job requires, naming only the resources it asked for (a message that listed the
 * others as 0, `requires cpus 0, gpus 1, memory 0 MiB`, read as if the job had asked for none
 * of them), or "nothing".
 *
 * @example
 * ```ts
 * formatRequired({ gpus: 1 }); // "gpus 1"
 * ```
 */
export function formatRequired(r: Resources): string {
  const asked = RESOURCE_NAMES.filter((name) => r[name] !== undefined);
  return asked.length === 0 ? "nothing" : amounts(r, asked);
}

function amounts(r: Resources, names: readonly (keyof Resources)[]): string {
  return names
    .map((name) => `${name} ${r[name] ?? 0}${name === "memory" ? " MiB" : ""}`)
    .join(", ");
}
