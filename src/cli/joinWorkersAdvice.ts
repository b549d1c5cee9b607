import type { Resources } from "../graph/job.ts";
import { RESOURCE_NAMES } from "../graph/resourceNames.ts";

/**
 * The way out of `UNSATISFIABLE` for `baton run`'s own worker processes, which offer this
 * machine's cores and memory and no gpus (`PlanOptions.offerMore`): have workers that offer
 * `enough` join the run instead, with `--workers 0` and `baton worker`'s resource flags.
 *
 * @example
 * ```ts
 * joinWorkersAdvice({ cpus: 64, memory: 24105 });
 * // "have workers that offer enough join the run: give baton run --workers 0 (and --listen
 * //  HOST:PORT for other machines), then start the baton worker command it prints with
 * //  --cpus 64 --memory 24105 where they are (its own workers offer this machine's)"
 * ```
 */
export function joinWorkersAdvice(enough: Resources): string {
  const flags = RESOURCE_NAMES.flatMap((name) => {
    const value = enough[name];
    return value ? [`--${name} ${value}`] : [];
  });
  return `have workers that offer enough join the run: give baton run --workers 0 (and --listen HOST:PORT for other machines), then start the baton worker command it prints with ${flags.join(" ")} where they are (its own workers offer this machine's)`;
}
