import { closestName } from "../closestName.ts";
import { ConfigError } from "../errors.ts";
import type { Resources } from "../graph/job.ts";
import { RESOURCE_NAMES } from "../graph/resourceNames.ts";
import { memoryAmount } from "./memoryAmount.ts";
import { MOST_GPUS, resourceAmount } from "./resourceAmount.ts";

/** The flag of `baton run --slurm` that says what each Slurm worker offers. */
export const SLURM_RESOURCES_FLAG = "--slurm-resources";

/** The resources a worker offers, as the flag names them (those of `baton worker`'s flags). */
const NAMES = RESOURCE_NAMES;

const EXAMPLE = "cpus=4,memory=16384,gpus=1";
const ACCEPTED = `give NAME=AMOUNT pairs joined by commas, such as ${EXAMPLE}: the names are cpus and gpus (numbers of 0 or more) and memory (MiB, without a unit)`;

/**
 * `--slurm-resources NAME=AMOUNT,...`: what each Slurm worker offers, as `slurmPool`'s
 * `resources` (asked of Slurm as `--cpus-per-task`, `--mem` and `--gres=gpu:N`), or
 * undefined when absent. The names are `baton worker`'s `--cpus`, `--gpus` and `--memory`,
 * each at most once, and their amounts are read as there: decimal numbers of 0 or more, gpus
 * at most `MOST_GPUS`, memory in MiB (a unit such as `16G` is refused, saying its MiB). cpus
 * not given stays the pool's default 1.
 *
 * @example
 * ```ts
 * slurmResourcesFlag("cpus=4,memory=16384"); // { cpus: 4, memory: 16384 }
 * slurmResourcesFlag("gpus=2"); // { cpus: 1, gpus: 2 }
 * slurmResourcesFlag("mem=16G"); // ConfigError: --slurm-resources: "mem" is no resource …
 * ```
 */
export function slurmResourcesFlag(text: string | undefined): Resources | undefined {
  if (text === undefined) return undefined;
  const given: Resources = {};
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=");
    if (at === -1) {
      throw new ConfigError(`${SLURM_RESOURCES_FLAG}: "${pair}" is no NAME=AMOUNT; ${ACCEPTED}`);
    }
    const name = pair.slice(0, at);
    const amount = pair.slice(at + 1);
    if (!(NAMES as readonly string[]).includes(name)) {
      const close = closestName(name, NAMES) ?? (name.startsWith("mem") ? "memory" : undefined);
      const guess = close === undefined ? "" : ` (did you mean ${close}?)`;
      throw new ConfigError(
        `${SLURM_RESOURCES_FLAG}: "${name}" is no resource${guess}; ${ACCEPTED}`,
      );
    }
    const key = name as (typeof NAMES)[number];
    if (given[key] !== undefined) {
      throw new ConfigError(`${SLURM_RESOURCES_FLAG}: ${name} is given twice; give it once`);
    }
    const what = `${SLURM_RESOURCES_FLAG} ${name}`;
    given[key] =
      key === "gpus"
        ? resourceAmount(what, amount, {
            most: MOST_GPUS,
            instead: ", the gpus of one node (sinfo -o %G lists them)",
          })
        : key === "memory"
          ? memoryAmount(what, amount, (mib) => `memory=${mib}`)
          : resourceAmount(what, amount);
  }
  return { cpus: 1, ...given };
}

/**
 * The way out of a graph refused as UNSATISFIABLE on `baton run --slurm`: the flag, with
 * amounts that offer `enough`.
 *
 * @example
 * ```ts
 * slurmResourcesAdvice({ cpus: 4, memory: 8192 });
 * // "have each Slurm worker offer enough with --slurm-resources cpus=4,memory=8192"
 * ```
 */
export function slurmResourcesAdvice(enough: Resources): string {
  const pairs = NAMES.flatMap((name) => {
    const value = enough[name];
    return value ? [`${name}=${value}`] : [];
  });
  return `have each Slurm worker offer enough with ${SLURM_RESOURCES_FLAG} ${pairs.join(",")}`;
}
