import type { Resources } from "../graph/job.ts";
import { RESOURCE_NAMES } from "../graph/resourceNames.ts";

/**
 * The way out of `UNSATISFIABLE` for a pool whose workers offer what its `resources` option
 * says (`WorkerPool.offerMore`): give `where` resources that offer `enough`, written as that
 * option is, every resource above 0 (the amounts that take every refused job, and what the
 * workers offer already, which the option replaces).
 *
 * @example
 * ```ts
 * resourcesAdvice("inProcessPool", { cpus: 8, gpus: 1, memory: 0 });
 * // "give inProcessPool resources that offer enough, such as { cpus: 8, gpus: 1 }"
 * ```
 */
export function resourcesAdvice(where: string, enough: Resources): string {
  const amounts = RESOURCE_NAMES.flatMap((name) => {
    const value = enough[name];
    return value ? [`${name}: ${value}`] : [];
  });
  return `give ${where} resources that offer enough, such as { ${amounts.join(", ")} }`;
}
